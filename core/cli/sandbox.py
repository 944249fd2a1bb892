"""``herald sandbox token`` and ``herald sandbox fault``: make the sandbox platform misbehave.

They talk to a running sandbox's admin API (``/sandbox/tokens``, ``/sandbox/faults``), so a
newcomer can see what herald does when a token is revoked or an answer is lost, and what
support staff then do about it, without writing an HTTP request by hand.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import httpx
import typer

from adapters.sandbox.store import TOKEN_STATES
from core.cli.output import JsonOpt, out, print_json
from core.domain.errors import UserError
from core.services.channels import mask

UrlOpt = Annotated[str, typer.Option("--url", envvar="HERALD_SANDBOX_URL", help="The sandbox platform's address.")]
DEFAULT_URL = "http://127.0.0.1:8025"


def _admin(method: str, url: str, path: str, body: Any) -> Any:
    """One admin API call; the sandbox's own refusal, or its absence, as a one-line error."""
    try:
        response = httpx.request(method, f"{url.rstrip('/')}/sandbox/{path}", json=body, timeout=10)
    except httpx.HTTPError as exc:
        raise UserError(f"no sandbox platform answers at {url} ({exc}); start one with `herald run`") from None
    if response.status_code != 200:
        try:
            said = response.json().get("detail") or response.text
        except ValueError:
            said = response.text
        raise UserError(f"the sandbox refused: {said}")
    return response.json()


def _value(key: str, raw: str) -> Any:
    """A fault setting's value: a number or ``null``; ``strategies`` and ``targets`` are
    lists (``none,readback``, ``media``)."""
    if key in ("strategies", "targets"):
        return [word.strip() for word in raw.split(",") if word.strip()]
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # the sandbox names the field and what it takes


def register(sandbox_app: typer.Typer) -> None:
    @sandbox_app.command("token")
    def token(
        name: Annotated[str, typer.Argument(help="The token, as a channel's `token` setting has it.")],
        state: Annotated[str, typer.Argument(help=f"One of: {', '.join(TOKEN_STATES)}.")],
        url: UrlOpt = DEFAULT_URL,
    ) -> None:
        """Set how the sandbox treats a token: revoked answers 401, forbidden 403, ok posts."""
        if state not in TOKEN_STATES:
            raise UserError(f"{state!r} is not a token state: use one of {', '.join(TOKEN_STATES)}")
        _admin("PUT", url, f"tokens/{name}", {"state": state})
        out.print(f"sandbox token {mask(name)}: {state}")  # a token is a secret: never printed whole

    @sandbox_app.command("fault")
    def fault(
        set_: Annotated[
            list[str] | None,
            typer.Option(
                "--set",
                help=(
                    "A fault setting, key=value, e.g. drop_after_accept=1, times=1, strategies=none, "
                    "targets=media, media_processing_seconds=5; repeatable."
                ),
            ),
        ] = None,
        url: UrlOpt = DEFAULT_URL,
        as_json: JsonOpt = False,
    ) -> None:
        """Set the sandbox's faults (no --set: none). What is not given takes its default."""
        body: dict[str, Any] = {}
        for pair in set_ or []:
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip():
                raise UserError(f"--set {pair!r}: write key=value, e.g. --set drop_after_accept=1")
            body[key.strip()] = _value(key.strip(), raw.strip())
        config = _admin("PUT", url, "faults", body)
        if as_json:
            print_json(config)
            return
        out.print(f"sandbox faults: {', '.join(f'{k}={v}' for k, v in body.items()) or 'none'}", highlight=False)

"""The ``herald keys`` commands: API keys for the HTTP API and the dashboard."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json, shown


def register(keys: typer.Typer) -> None:
    @keys.command("create")
    def keys_create(
        account: Annotated[str, typer.Option(help="The account the key sees (only that one).")],
        role: Annotated[str, typer.Option(help="admin, manager (schedule, edit), support (retry, resolve), viewer.")],
        name: Annotated[str, typer.Option(help="What the key is for.")] = "",
        expires: Annotated[str | None, typer.Option(help="Expire after this long (30d, 12h); default: never.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Make an API key and print it – this once: herald keeps only its hash."""
        from core.domain.timing import parse_duration
        from core.services.keys import create_key, parse_role

        made = create_key(account, parse_role(role), name=name, expires_in=parse_duration(expires) if expires else None)
        if as_json:
            print_json(made)
            return
        out.print(made.secret, highlight=False, markup=False, soft_wrap=True)
        typer.echo(
            f"key {made.key.id} ({made.key.role}, account {made.key.account}): shown once – keep it now; "
            f"`herald keys revoke {made.key.id}` ends it",
            err=True,
        )

    @keys.command("list")
    def keys_list(
        account: Annotated[str | None, typer.Option(help="Only this account's keys.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Every key, newest first (never their secrets)."""
        from core.services.keys import list_keys

        found = list_keys(account)
        if as_json:
            print_json(found)
            return
        table = Table("id", "key", "account", "role", "name", "expires", "revoked", "last used")
        for k in found:
            table.add_row(
                str(k.id),
                f"{k.prefix}_…",
                k.account,
                k.role.value,
                k.name,
                shown(k.expires_at),
                shown(k.revoked_at),
                shown(k.last_used_at),
            )
        out.print(table)

    @keys.command("revoke")
    def keys_revoke(key_id: int, as_json: JsonOpt = False) -> None:
        """End a key at once: every request with it is refused from now on."""
        from core.services.keys import revoke_key

        revoked = revoke_key(key_id)
        if as_json:
            print_json(revoked)
            return
        out.print(f"key {revoked.id} ({revoked.prefix}_…) revoked", highlight=False, markup=False)

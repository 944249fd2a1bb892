"""The three sandbox adapters: one per dedupe strategy, all against the sandbox platform.

Each posts text and threads, and uploads images and video (``/api/*/media``) before a
part that carries them; the platform may take a while to process an upload, and a post
attaching one it has not finished is answered ``media_not_ready``.

Every answer of the platform goes through :func:`raise_for_answer`; httpx transport
errors are left to ``core.plugins.transport.call_platform``, which maps them for every adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from core.plugins import (
    IMAGE_TYPES,
    MB,
    Adapter,
    Ambiguous,
    AuthExpired,
    ConfigError,
    Limits,
    MediaNotReady,
    NotSent,
    PublishContext,
    Published,
    RateLimited,
    Reason,
    Rejected,
    Setting,
    Strategy,
    UploadContext,
    Uploaded,
    VerifyContext,
    http_url,
)

#: How long the sandbox's native strategy remembers an Idempotency-Key (unless a fault says less).
NATIVE_KEY_TTL = 24 * 60 * 60.0


def raise_for_answer(response: httpx.Response) -> None:
    """Map one answer of the sandbox platform to herald's publish errors; 2xx returns.

    Raises:
        AuthExpired: 401, the token is missing or revoked.
        MediaNotReady: 422 ``media_not_ready``, an attachment is still processing: the
            post was not made, and is sent again once the media is ready.
        Rejected: 403 (permission denied), 422 (the reason the platform named, such as
            ``media_invalid`` for a file it refused), other 4xx.
        RateLimited: 429, with the seconds of ``Retry-After``.
        NotSent: 503, which the sandbox answers only when it stored nothing.
        Ambiguous: 500 and other 5xx, after which the post may have been stored.
    """
    status = response.status_code
    if 200 <= status < 300:
        return
    error, detail = _error_of(response)
    message = f"sandbox answered {status} {error or ''} {detail or ''}".strip()
    if status == 401:
        raise AuthExpired(message, status=status)
    if status == 403:
        raise Rejected(Reason.PERMISSION_DENIED, message, status=status)
    if status == 422 and error == "media_not_ready":
        raise MediaNotReady(message, status=status)
    if status == 422:
        raise Rejected(_reason(error), message, status=status)
    if status == 429:
        raise RateLimited(message, retry_after=_retry_after(response), status=status)
    if status == 503:
        raise NotSent(message, status=status)
    if status >= 500:
        raise Ambiguous(message, status=status)
    raise Rejected(Reason.CONTENT_REJECTED, message, status=status)


def _error_of(response: httpx.Response) -> tuple[str | None, str | None]:
    """The ``error`` and ``detail`` of a JSON error body, None for what is not there."""
    try:
        body = response.json()
    except ValueError:
        return None, None
    if not isinstance(body, dict):
        return None, None
    error, detail = body.get("error"), body.get("detail")
    return (error if isinstance(error, str) else None, detail if isinstance(detail, str) else None)


def _reason(error: str | None) -> Reason:
    """The reason a 422 named, when it is one of ours; else the platform refused the content."""
    try:
        return Reason(error or Reason.CONTENT_REJECTED)
    except ValueError:
        return Reason.CONTENT_REJECTED


def _retry_after(response: httpx.Response) -> float | None:
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return max(seconds, 0.0)


def _json_of(response: httpx.Response, what: str) -> Any:
    """The JSON a success answer carries.

    Raises:
        Ambiguous: it carries none a platform would send (a proxy's HTML page, JSON cut
            short): the platform said yes to something, and the post may exist.
    """
    try:
        return response.json()
    except ValueError:
        raise Ambiguous(
            f"sandbox answered {what} with {response.status_code} but no JSON: {response.text[:200]!r}"
        ) from None


def _published(body: Any) -> Published:
    """Read the post's id and URL from a success answer or a search hit."""
    if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not isinstance(body.get("url"), str):
        # The platform said yes but we cannot tell to what: the post may exist.
        raise Ambiguous(f"sandbox confirmed a post without its id and url: {body!r}")
    return Published(platform_id=body["id"], url=body["url"])


def _media_state(response: httpx.Response, what: str) -> tuple[str, str]:
    """The id and state of an upload from a success answer.

    Raises:
        Ambiguous: the platform said yes without a string id: the upload may exist.
    """
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if not isinstance(body, dict) or not isinstance(body.get("id"), str):
        raise Ambiguous(f"sandbox answered {what} without the media's id: {body!r}")
    state = body.get("state")
    return body["id"], state if isinstance(state, str) else ""


class SandboxAdapter(Adapter):
    """What the three sandbox adapters share; subclasses pick the strategy and path."""

    version: ClassVar[str] = "1"
    limits: ClassVar[Limits] = Limits(
        max_chars=500,
        threads=True,
        max_media=4,
        media_types=IMAGE_TYPES | {"video/mp4"},
        max_image_bytes=8 * MB,
        max_video_bytes=40 * MB,
        max_video_seconds=140.0,
        alt_text=True,
        max_alt_chars=1500,
    )
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "base_url",
            "the sandbox platform's address, where `herald sandbox serve` listens",
            required=True,
            check=http_url,
            example="http://127.0.0.1:8025",
        ),
        Setting("token", "the bearer token the platform checks ('sandbox' when left out)", secret=True),
    )
    #: The platform's path prefix for this strategy: ``/api/{path_strategy}/posts`` and ``/media``.
    path_strategy: ClassVar[str]

    def api_url(self, settings: Mapping[str, str], resource: str) -> str:
        """``{base_url}/api/{path_strategy}/{resource}``, for ``posts`` and ``media``."""
        base_url = settings.get("base_url", "").rstrip("/")
        if not base_url:
            raise ConfigError(
                f"the {self.name} channel has no base_url setting; set it with "
                "`herald channel reconnect CHANNEL --set base_url=http://127.0.0.1:8025` "
                "(where `herald sandbox serve` listens)"
            )
        return f"{base_url}/api/{self.path_strategy}/{resource}"

    def posts_url(self, ctx: PublishContext) -> str:
        return self.api_url(ctx.settings, "posts")

    def authorization(self, settings: Mapping[str, str]) -> dict[str, str]:
        return {"Authorization": f"Bearer {settings.get('token') or 'sandbox'}"}

    def headers(self, ctx: PublishContext) -> dict[str, str]:
        return self.authorization(ctx.settings)

    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {
            "text": ctx.text,
            "reply_to": ctx.reply_to,
            "root": ctx.root,
            "key": None,
            "media": [{"id": attachment.platform_id, "alt": attachment.alt} for attachment in ctx.media],
        }

    def publish(self, ctx: PublishContext) -> Published:
        response = ctx.client.post(self.posts_url(ctx), json=self.body(ctx), headers=self.headers(ctx))
        raise_for_answer(response)
        return _published(_json_of(response, "a new post"))

    def verify(self, ctx: VerifyContext) -> str:
        response = ctx.client.get(self.api_url(ctx.settings, "me"), headers=self.authorization(ctx.settings))
        raise_for_answer(response)
        return f"the sandbox platform ({self.path_strategy}) at {ctx.settings.get('base_url')} takes the token"

    def upload(self, ctx: UploadContext) -> Uploaded:
        """Send the file's bytes as the body, typed by its MIME type; the platform may still process it."""
        headers = {**self.authorization(ctx.settings), "Content-Type": ctx.file.mime}
        response = ctx.client.post(self.api_url(ctx.settings, "media"), content=ctx.file.read(), headers=headers)
        raise_for_answer(response)
        media_id, state = _media_state(response, "an upload")
        if state == "failed":
            raise Rejected(Reason.MEDIA_INVALID, f"sandbox could not process {ctx.file.filename}")
        return Uploaded(platform_id=media_id, ready=state == "ready")

    def media_ready(self, ctx: UploadContext, platform_id: str) -> bool:
        url = f"{self.api_url(ctx.settings, 'media')}/{quote(platform_id, safe='')}"
        response = ctx.client.get(url, headers=self.authorization(ctx.settings))
        raise_for_answer(response)
        _, state = _media_state(response, "a look at an upload")
        if state == "failed":
            raise Rejected(Reason.MEDIA_INVALID, f"sandbox could not process {ctx.file.filename}")
        if state not in ("ready", "processing"):
            raise Ambiguous(f"sandbox answered an upload's state as {state!r}, neither ready nor processing")
        return state == "ready"


class SandboxNative(SandboxAdapter):
    """The platform deduplicates on the ``Idempotency-Key`` header for a day."""

    name: ClassVar[str] = "sandbox-native"
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = NATIVE_KEY_TTL
    key_in: ClassVar[str | None] = "header:Idempotency-Key"
    path_strategy: ClassVar[str] = "native"

    def headers(self, ctx: PublishContext) -> dict[str, str]:
        return {**super().headers(ctx), "Idempotency-Key": ctx.key}


class SandboxReadback(SandboxAdapter):
    """The platform stores our key on the post and can be searched by it; it never deduplicates."""

    name: ClassVar[str] = "sandbox-readback"
    strategy: ClassVar[Strategy] = Strategy.READ_BACK
    key_in: ClassVar[str | None] = "body:key"
    path_strategy: ClassVar[str] = "readback"
    #: One GET by key: herald looks before every first send.
    cheap_find: ClassVar[bool] = True

    def body(self, ctx: PublishContext) -> dict[str, Any]:
        return {**super().body(ctx), "key": ctx.key}

    def find_all(self, ctx: PublishContext) -> list[Published]:
        """Every post on the platform carrying this part's key, oldest first (two means a duplicate)."""
        response = ctx.client.get(self.posts_url(ctx), params={"key": ctx.key}, headers=self.headers(ctx))
        raise_for_answer(response)
        body = _json_of(response, "a search")
        posts = body.get("posts") if isinstance(body, dict) else None
        if not isinstance(posts, list):
            raise Ambiguous(f"sandbox search answered without a list of posts: {response.text!r}")
        return [_published(post) for post in posts]

    def find(self, ctx: PublishContext) -> Published | None:
        found = self.find_all(ctx)
        return found[0] if found else None


class SandboxNone(SandboxAdapter):
    """The platform neither deduplicates nor can be searched: a post in doubt waits for a person."""

    name: ClassVar[str] = "sandbox-none"
    strategy: ClassVar[Strategy] = Strategy.NONE
    path_strategy: ClassVar[str] = "none"


#: Every sandbox adapter, in the order they are registered.
SANDBOX_ADAPTERS: tuple[type[SandboxAdapter], ...] = (SandboxNative, SandboxReadback, SandboxNone)

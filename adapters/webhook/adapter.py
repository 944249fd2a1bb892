"""The webhook adapter: each part POSTed as signed JSON to a receiver of the channel's own.

What a receiver is sent and must answer is in the package docstring (``adapters.webhook``);
how the body is signed is in ``adapters.webhook.signing``. Every answer of the receiver
goes through :func:`raise_for_answer`; httpx transport errors are left to
``core.plugins.transport.call_platform``, which maps them for every adapter.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx

from adapters.webhook.signing import signature
from core.plugins import (
    IMAGE_TYPES,
    MB,
    Adapter,
    Ambiguous,
    Attachment,
    AuthExpired,
    ConfigError,
    Limits,
    PublishContext,
    Published,
    RateLimited,
    Reason,
    Rejected,
    Setting,
    Strategy,
    VerifyContext,
    http_url,
)

#: How long herald counts on a receiver to remember an Idempotency-Key and its answer. A
#: part in doubt for longer is not sent again: it is held ``ambiguous_outcome`` for a person.
KEY_TTL = 24 * 60 * 60.0

DEFAULT_SIGNATURE_HEADER = "X-Herald-Signature"
TIMESTAMP_HEADER = "X-Herald-Timestamp"
VERIFY_HEADER = "X-Herald-Verify"

#: The longest id and URL herald records for a part (the ``parts`` table's columns).
MAX_ID_CHARS = 200
MAX_URL_CHARS = 500
#: The shortest secret a channel takes: an HMAC key is only as strong as it is long.
MIN_SECRET_CHARS = 16

#: An HTTP field name: a token (RFC 9110 §5.1 and §5.6.2).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: Headers herald sets itself on every request, which the signature header may not replace.
_OWN_HEADERS = frozenset(
    {"idempotency-key", TIMESTAMP_HEADER.lower(), VERIFY_HEADER.lower(), "content-type", "content-length", "host"}
)
#: The reasons a receiver may name in a refusal's ``error``; any other refusal is content_rejected.
_NAMED_REASONS = frozenset(
    {Reason.CONTENT_REJECTED, Reason.MEDIA_INVALID, Reason.PERMISSION_DENIED, Reason.THREAD_PARENT_MISSING}
)
#: Longest piece of a receiver's error body quoted in a message.
_QUOTED_CHARS = 200


def header_name(value: str) -> str | None:
    """A check: ``value`` is an HTTP header name herald does not already set itself."""
    if not _TOKEN.fullmatch(value):
        return "is not an HTTP header name (letters, digits and dashes; no spaces or colons)"
    if value.lower() in _OWN_HEADERS:
        return "is a header herald sets itself"
    return None


def long_secret(value: str) -> str | None:
    """A check: ``value`` is long enough to be an HMAC key."""
    if len(value) < MIN_SECRET_CHARS:
        return f"is shorter than {MIN_SECRET_CHARS} characters: use a long random one (`openssl rand -hex 32`)"
    return None


def raise_for_answer(
    response: httpx.Response,
    *,
    verifying: bool = False,
    with_media: bool = False,
    clock: Callable[[], float] = time.time,
) -> None:
    """Map one answer of the receiver to herald's publish errors; a success returns.

    A success is a 2xx, or a 409 naming the id the receiver gave the first request with
    this key (the receiver has the post). ``verifying``: the answer to :meth:`WebhookAdapter.verify`'s
    GET, where a 403 too can only refuse the signature, and a 404, 405 or 501 says the
    receiver does not take that GET.

    Raises:
        ConfigError: 3xx (herald does not follow a signed POST elsewhere), 404, 405 and 410
            (no receiver at the url): the channel's ``url`` must change.
        AuthExpired: 401, the receiver refused the signature: the secrets differ.
        Rejected: 403 (permission_denied); 400, 422 and other 4xx (the reason the body's
            ``error`` names, else content_rejected); 413 (media_invalid with attachments).
        RateLimited: 429, with ``Retry-After`` in seconds or as an HTTP date.
        Ambiguous: 408, a 409 without an id (a request with this key is still being
            processed), 5xx, and anything else: the post may exist.
    """
    status = response.status_code
    if 200 <= status < 300:
        return
    body = _json_object(response)
    if status == 409 and not verifying and body is not None and "id" in body:
        return
    message = _message(response, body)
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise ConfigError(
            f"{message}: herald does not follow a redirect with a signed post; give the address it "
            f"points to: `herald channel reconnect NAME --set url={location or 'https://...'}`"
        )
    if verifying and status in (404, 405, 501):
        raise ConfigError(
            f"{message}: the receiver does not take herald's signed GET (`{VERIFY_HEADER}: 1`), so it "
            "cannot show that it holds the secret; a post to the channel will tell"
        )
    if status in (404, 405, 410):
        raise ConfigError(
            f"{message}: there is no receiver at the channel's url; give the right one with "
            "`herald channel reconnect NAME --set url=https://...`"
        )
    if status == 401 or (status == 403 and verifying):
        raise AuthExpired(f"{message}: the receiver refused the signature; check both sides hold the same secret")
    if status == 403:
        raise Rejected(Reason.PERMISSION_DENIED, message, status=status)
    if status == 429:
        raise RateLimited(message, retry_after=retry_after(response, clock), status=status)
    if status == 413:
        raise Rejected(Reason.MEDIA_INVALID if with_media else Reason.CONTENT_REJECTED, message, status=status)
    if status in (408, 409) or status >= 500 or status < 200:
        raise Ambiguous(message, status=status)
    raise Rejected(_named_reason(body), message, status=status)


def retry_after(response: httpx.Response, clock: Callable[[], float] = time.time) -> float | None:
    """The seconds a ``Retry-After`` asks for: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).

    A date is counted from the answer's own ``Date`` header when it has one, so the
    receiver's clock and ours need not agree; else from ``clock``.
    """
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    when = _http_date(value)
    if when is None:
        return None
    now = _http_date(response.headers.get("Date", "")) or datetime.fromtimestamp(clock(), UTC)
    return max((when - now).total_seconds(), 0.0)


def published(response: httpx.Response, key: str) -> Published:
    """What a success answer says the receiver made: its ``id`` and ``url``.

    An empty body, or a JSON object without ``id``, has the delivery key for its id and an
    empty url: the receiver has the post and no id of its own for it.

    Raises:
        Ambiguous: a body that is not a JSON object, or an id or url that is not a string
            herald can record: the receiver said yes, to what we cannot tell.
    """
    if not response.content.strip():
        return Published(platform_id=key, url="")
    body = _json_object(response)
    if body is None:
        raise Ambiguous(f"the receiver answered {response.status_code} with a body that is not a JSON object")
    platform_id, url = body.get("id", key), body.get("url") or ""
    if not isinstance(platform_id, str) or not platform_id or len(platform_id) > MAX_ID_CHARS:
        raise Ambiguous(f"the receiver answered an id that is not a string of 1 to {MAX_ID_CHARS} characters")
    if not isinstance(url, str) or len(url) > MAX_URL_CHARS:
        raise Ambiguous(f"the receiver answered a url that is not a string of at most {MAX_URL_CHARS} characters")
    return Published(platform_id=platform_id, url=url)


def delivery_body(ctx: PublishContext) -> bytes:
    """The exact bytes POSTed (and signed): the part, and each attachment inline in base64.

    Serialised once, compactly, in the documented field order: a retry sends the same bytes.
    """
    payload = {
        "key": ctx.key,
        "text": ctx.text,
        "part_index": ctx.part_index,
        "reply_to": ctx.reply_to,
        "root": ctx.root,
        "media": [_inline(attachment) for attachment in ctx.media],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _inline(attachment: Attachment) -> dict[str, Any]:
    if attachment.file is None:
        # herald hands every file to an adapter that sends them with the post (uploads_first = False).
        raise TypeError("an attachment reached the webhook adapter without its file")
    data = attachment.file.read()
    return {
        "mime": attachment.mime,
        "filename": attachment.file.filename,
        "alt": attachment.alt,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "data_base64": base64.b64encode(data).decode("ascii"),
    }


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    if not response.content:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _message(response: httpx.Response, body: dict[str, Any] | None) -> str:
    """``the receiver answered 422 content_rejected: too long``, from what the body says."""
    said = [body.get(field) for field in ("error", "title", "detail")] if body is not None else []
    words = " ".join(str(s)[:_QUOTED_CHARS] for s in said if isinstance(s, str) and s)
    return f"the receiver answered {response.status_code}" + (f" {words}" if words else "")


def _named_reason(body: dict[str, Any] | None) -> Reason:
    error = body.get("error") if body is not None else None
    return next((reason for reason in _NAMED_REASONS if reason.value == error), Reason.CONTENT_REJECTED)


def _http_date(value: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class WebhookAdapter(Adapter):
    """POSTs each part, signed, to the channel's receiver, which deduplicates on its key."""

    name: ClassVar[str] = "webhook"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = KEY_TTL
    key_in: ClassVar[str | None] = "header:Idempotency-Key"
    uploads_first: ClassVar[bool] = False
    limits: ClassVar[Limits] = Limits(
        max_chars=65_536,
        threads=True,
        max_media=4,
        media_types=IMAGE_TYPES | {"video/mp4"},
        max_image_bytes=8 * MB,
        max_video_bytes=40 * MB,
        alt_text=True,
        max_alt_chars=1500,
    )
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "url",
            "the receiver's address, where herald POSTs each part",
            required=True,
            check=http_url,
            example="https://example.org/hooks/herald",
        ),
        Setting(
            "secret",
            "the key both sides sign with (HMAC-SHA256)",
            required=True,
            secret=True,
            check=long_secret,
            example="$(openssl rand -hex 32)",
        ),
        Setting(
            "signature_header",
            f"the header carrying the signature ({DEFAULT_SIGNATURE_HEADER} when left out)",
            check=header_name,
            example=DEFAULT_SIGNATURE_HEADER,
        ),
    )

    def __init__(self, config: Mapping[str, Any] | None = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(config)
        #: Seconds since the epoch, for the signed timestamp (and a Retry-After date without a Date header).
        self.clock = clock

    def publish(self, ctx: PublishContext) -> Published:
        url, secret, header = _endpoint(ctx.settings)
        body = delivery_body(ctx)
        timestamp = str(int(self.clock()))
        headers = {
            "Content-Type": "application/json",
            # A String of RFC 8941, quoted, as the Idempotency-Key draft (§2.1) asks.
            "Idempotency-Key": f'"{ctx.key}"',
            TIMESTAMP_HEADER: timestamp,
            header: signature(secret, timestamp, body),
        }
        response = ctx.client.post(url, content=body, headers=headers)
        raise_for_answer(response, with_media=bool(ctx.media), clock=self.clock)
        return published(response, ctx.key)

    def verify(self, ctx: VerifyContext) -> str:
        """A signed GET with ``X-Herald-Verify: 1``; the receiver proves it holds the secret by
        signing its answer the same way (the same header, over the timestamp it was sent and
        its answer's body). A bare 2xx proves nothing: a receiver that checks nothing sends one.
        """
        url, secret, header = _endpoint(ctx.settings)
        timestamp = str(int(self.clock()))
        headers = {VERIFY_HEADER: "1", TIMESTAMP_HEADER: timestamp, header: signature(secret, timestamp, b"")}
        response = ctx.client.get(url, headers=headers)
        raise_for_answer(response, verifying=True, clock=self.clock)
        where = urlsplit(url).hostname or url
        answered = response.headers.get(header)
        if answered is None:
            raise ConfigError(
                f"the receiver at {where} answered {response.status_code} without signing its answer in {header}, "
                "so herald cannot tell that it checked the signature; sign the answer as the webhook adapter's "
                "documentation shows, or rely on a first post"
            )
        if not hmac.compare_digest(answered, signature(secret, timestamp, response.content)):
            raise AuthExpired(f"the receiver at {where} signed its answer with another secret")
        body = _json_object(response)
        name = body.get("name") if body is not None else None
        named = f" ({name[:_QUOTED_CHARS]})" if isinstance(name, str) and name else ""
        return f"the receiver at {where}{named} holds the secret"


def _endpoint(settings: Mapping[str, str]) -> tuple[str, str, str]:
    """The channel's url, secret and signature header.

    Raises:
        ConfigError: a channel made before the settings were checked lacks one.
    """
    url, secret = settings.get("url", ""), settings.get("secret", "")
    fixes = (("url", url, "https://example.org/hooks/herald"), ("secret", secret, "$(openssl rand -hex 32)"))
    for name, value, example in fixes:
        if not value:
            raise ConfigError(
                f"the webhook channel has no {name} setting; set it with "
                f"`herald channel reconnect NAME --set {name}={example}`"
            )
    return url, secret, settings.get("signature_header") or DEFAULT_SIGNATURE_HEADER

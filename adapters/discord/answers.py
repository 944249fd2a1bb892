"""Every answer of Discord's HTTP API, mapped to herald's publish errors in one function.

Discord answers a refusal with an HTTP status and a JSON body ``{"code": ..., "message":
..., "errors": {...}}``: the status families are in developers/topics/opcodes-and-status-
codes.mdx ("HTTP Response Codes"), the codes in the same file ("JSON Error Codes"), and the
``errors`` tree, which names the JSON key at fault, in developers/reference.mdx ("Error
Messages"). A 429 carries ``retry_after`` (float seconds) and ``Retry-After``
(developers/topics/rate-limits.mdx, "Exceeding A Rate Limit"). All paths are in the
discord/discord-api-docs repository, published at https://discord.com/developers/docs/.

httpx transport errors are left to ``core.plugins.transport``, which maps them for every
adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from core.plugins import Ambiguous, AuthExpired, ConfigError, NotSent, RateLimited, Reason, Rejected

#: Which adapter asks: the bot posts to a channel by id, the webhook through its URL, and
#: the same answer (a 404, say) names a different setting to fix.
Via = Literal["bot", "webhook"]

# JSON error codes (developers/topics/opcodes-and-status-codes.mdx, "JSON Error Codes").
UNKNOWN_CHANNEL = 10003
UNKNOWN_MESSAGE = 10008
UNKNOWN_WEBHOOK = 10015
INVALID_FORM_BODY = 50035

#: "Unauthorized", "Invalid authentication token provided", "Invalid webhook token
#: provided", "Unknown webhook" (a deleted webhook: its URL will never work again).
AUTH_CODES = frozenset({40001, 50014, 50027, UNKNOWN_WEBHOOK})
#: Slowmode, and the channel's and the server's write rate limits.
RATE_LIMIT_CODES = frozenset({20016, 20028, 20029})
#: "You lack permissions", "Missing access", "Cannot reply without permission to read
#: message history", "You need to verify your account", "Access to file uploads has been
#: limited for this guild".
PERMISSION_CODES = frozenset({50013, 50001, 160002, 40002, 400001})
#: A channel that cannot take these messages: unknown, not a text channel, a forum (which
#: takes posts, not messages), a channel type the action does not work on; for a webhook
#: in a forum, a missing ``thread_id``.
CHANNEL_CODES = frozenset({UNKNOWN_CHANNEL, 50008, 40058, 50024, 220001, 220003})
#: "Request entity too large", "File uploaded exceeds the maximum size", "Invalid file
#: uploaded", "The provided file is invalid", "The provided file type is invalid",
#: "Maximum number of attachments in a message reached (10)".
MEDIA_CODES = frozenset({40005, 50045, 50046, 50110, 50123, 30015})
#: "Send messages has been temporarily disabled": refused, nothing made, worth trying later.
TEMPORARY_CODES = frozenset({40004})
#: The keys of the request whose errors mean the attachments were refused.
MEDIA_FIELDS = ("files", "attachments")


@dataclass(frozen=True)
class DiscordError:
    """What an error body says: its code, its message and the keys its ``errors`` name."""

    code: int | None
    message: str | None
    #: ``(path, message)`` of each error in the ``errors`` tree: ``("content", "Must be
    #: 2000 or fewer in length.")``.
    fields: tuple[tuple[str, str], ...]
    body: Any

    @classmethod
    def of(cls, response: httpx.Response) -> DiscordError:
        try:
            body = response.json()
        except ValueError:
            return cls(None, None, (), None)
        if not isinstance(body, dict):
            return cls(None, None, (), body)
        code, message = body.get("code"), body.get("message")
        return cls(
            code if isinstance(code, int) and not isinstance(code, bool) else None,
            message if isinstance(message, str) else None,
            tuple(_field_errors(body.get("errors"), "")),
            body,
        )

    def names(self, *prefixes: str) -> bool:
        """Whether an error is about a key starting with one of ``prefixes`` (``files[0]``...)."""
        return any(path.split(".")[0].startswith(prefixes) for path, _ in self.fields)

    def describe(self, status: int) -> str:
        said = f"Discord answered {status}"
        if self.code is not None:
            said += f" (code {self.code})"
        if self.message:
            said += f": {self.message}"
        if self.fields:
            said += " – " + "; ".join(f"{path}: {message}" for path, message in self.fields[:5])
        return said


def raise_for_answer(response: httpx.Response, *, via: Via) -> None:
    """Map one answer of Discord to herald's publish errors; 2xx returns.

    Args:
        response: Discord's answer.
        via: which adapter asked, for the setting a message tells a person to fix.

    Raises:
        RateLimited: 429 (or a slowmode or write-limit code), with the seconds Discord gave.
        AuthExpired: 401, an invalid token, a deleted webhook (code 10015, or a 404 on one).
        Ambiguous: 5xx and anything else unknown, after which the message may exist.
        Rejected: THREAD_PARENT_MISSING (the replied-to message is gone), PERMISSION_DENIED
            (403, 50013...), MEDIA_INVALID (413, a refused file), CONTENT_REJECTED (other 4xx).
        ConfigError: the channel (or thread) the settings name cannot take the message.
        NotSent: sending is temporarily disabled (code 40004): refused, nothing made.
    """
    status = response.status_code
    if 200 <= status < 300:
        return
    error = DiscordError.of(response)
    code, said = error.code, error.describe(status)
    if status == 429 or code in RATE_LIMIT_CODES:
        raise RateLimited(said, retry_after=retry_after(response, error.body), status=status)
    if status == 401 or code in AUTH_CODES or (via == "webhook" and status == 404 and code != UNKNOWN_CHANNEL):
        # A 404 on a webhook's own URL means the webhook is gone: "If a webhook returns a 404
        # status you should not attempt to use it again" (developers/topics/rate-limits.mdx).
        raise AuthExpired(f"{said}; {_reconnect(via)}", status=status)
    if not 400 <= status < 500:
        # 5xx, "The server had an error processing your request", may have made the message;
        # so may an answer Discord does not document for this call (1xx, 3xx).
        raise Ambiguous(said, status=status)
    if code == UNKNOWN_MESSAGE or (code == INVALID_FORM_BODY and error.names("message_reference")):
        # The only message a new message names is the one it replies to.
        raise Rejected(Reason.THREAD_PARENT_MISSING, said, status=status)
    if code in CHANNEL_CODES or status == 404:
        raise ConfigError(f"{said}; {_wrong_channel(via)}")
    if status == 403 or code in PERMISSION_CODES:
        raise Rejected(Reason.PERMISSION_DENIED, said, status=status)
    if status == 413 or code in MEDIA_CODES or (code == INVALID_FORM_BODY and error.names(*MEDIA_FIELDS)):
        raise Rejected(Reason.MEDIA_INVALID, said, status=status)
    if code in TEMPORARY_CODES:
        raise NotSent(said, status=status)
    # Any other 4xx (50035 on ``content``, 50006 empty message, 200000 blocked by AutoMod,
    # 240000 harmful links...) refuses this message for good, before anything was made.
    raise Rejected(Reason.CONTENT_REJECTED, said, status=status)


def retry_after(response: httpx.Response, body: Any = None) -> float | None:
    """Seconds to wait: the body's ``retry_after`` (a float), else ``Retry-After``, else
    ``X-RateLimit-Reset-After`` (developers/topics/rate-limits.mdx); None when none says."""
    if isinstance(body, dict):
        seconds = body.get("retry_after")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
            return float(seconds)
    for header in ("Retry-After", "X-RateLimit-Reset-After"):
        try:
            seconds = float(response.headers.get(header, ""))
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None


def _field_errors(errors: Any, path: str) -> Iterator[tuple[str, str]]:
    """Each ``(path, message)`` of an ``errors`` tree (developers/reference.mdx, "Error Messages")."""
    if not isinstance(errors, dict):
        return
    for key, value in errors.items():
        if key == "_errors" and isinstance(value, list):
            for item in value:
                message = item.get("message") if isinstance(item, dict) else None
                yield path or "request", message if isinstance(message, str) else repr(item)
        elif isinstance(value, dict):
            yield from _field_errors(value, f"{path}.{key}" if path else str(key))


def _reconnect(via: Via) -> str:
    if via == "webhook":
        return (
            "the webhook was deleted or its URL is wrong: make a new one (channel settings → "
            "Integrations → Webhooks → Copy Webhook URL) and give it with "
            "`herald channel reconnect NAME --set webhook_url=https://discord.com/api/webhooks/ID/TOKEN`"
        )
    return (
        "the bot token was refused: copy a new one (Developer Portal → your app → Bot → Reset Token) and give "
        "it with `herald channel reconnect NAME --set token=TOKEN`"
    )


def _wrong_channel(via: Via) -> str:
    if via == "webhook":
        return (
            "the webhook's channel cannot take this message: a forum or media channel needs the thread to post "
            "in (`herald channel reconnect NAME --set thread_id=ID`), and a thread_id must name a thread of "
            "the webhook's channel"
        )
    return (
        "the channel_id does not name a text channel the bot can post in (it may have been deleted, or be a "
        "forum or voice channel): give the right one with `herald channel reconnect NAME --set channel_id=ID`"
    )

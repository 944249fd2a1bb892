"""Every answer of a Mastodon instance's REST API, mapped to herald's publish errors in one function.

"The most important part of an error response is the HTTP status code. Standard semantics
are followed. The body of an error is a JSON object containing more information, if
available": ``{"error": "...", "error_description": "..."}`` (content/en/entities/Error.md,
with its list of "Possible reasons"). A 429 carries ``X-RateLimit-Limit``,
``X-RateLimit-Remaining`` and ``X-RateLimit-Reset``, the "Timestamp when your rate limit
will reset" (content/en/api/rate-limits.md). Paths are in the mastodon/documentation
repository, published at https://docs.joinmastodon.org/.

The ``error`` strings are the server's own words, from its default locale (the API does not
translate them per request): the few matched below, lowercased, are the English ones of
mastodon/mastodon ``config/locales/en.yml``. A server speaking another language still gets
every status family right; only the finer reason of a 422 falls back to the content's.

httpx transport errors are left to ``core.plugins.transport``, which maps them for every adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from core.plugins import (
    Ambiguous,
    AuthExpired,
    ConfigError,
    MediaNotReady,
    Published,
    RateLimited,
    Reason,
    Rejected,
)

#: 422 ``media_attachments.validations.not_ready``: "Cannot attach files that have not
#: finished processing. Try again in a moment!" – nothing was posted; the part waits.
NOT_READY = "not finished processing"
#: 422 ``media_attachments.validations``: "Cannot attach a video to a post that already
#: contains images", "Cannot attach more than 4 files", "Media %{ids} not found or already
#: attached to another post". An upload's own 422 ("Validation failed: File content type is
#: invalid, File is invalid", content/en/methods/media.md) is the file's whatever it says.
MEDIA_REFUSALS = ("cannot attach", "media")
#: 422 "This method requires an authenticated user": "a token without an authorized user"
#: (content/en/methods/accounts.md, verify_credentials; Error.md, ``!current_user``).
NO_USER = "requires an authenticated user"
#: 403 "This action is outside the authorized scopes": "Token is missing a required scope"
#: (content/en/methods/accounts.md).
MISSING_SCOPE = "outside the authorized scopes"

#: The scopes a channel's token needs, as the fix names them.
SCOPES = "write:statuses write:media read:accounts"


@dataclass(frozen=True)
class MastodonError:
    """What an error body says: its ``error`` and ``error_description``, empty when absent."""

    error: str
    description: str
    #: Whether the body was a JSON object at all: Mastodon's own answers are, a proxy's
    #: HTML page (a 502, a 404 from something that is not Mastodon) is not.
    from_mastodon: bool

    @classmethod
    def of(cls, response: httpx.Response) -> MastodonError:
        try:
            body = response.json()
        except ValueError:
            return cls("", "", False)
        if not isinstance(body, Mapping):
            return cls("", "", False)
        error, description = body.get("error"), body.get("error_description")
        return cls(
            error if isinstance(error, str) else "",
            description if isinstance(description, str) else "",
            True,
        )

    def says(self, *phrases: str) -> bool:
        said = f"{self.error} {self.description}".lower()
        return any(phrase in said for phrase in phrases)

    def describe(self, status: int) -> str:
        said = f"Mastodon answered {status}"
        if self.error:
            said += f": {self.error}"
        if self.description:
            said += f" ({self.description})"
        return said


def raise_for_answer(response: httpx.Response, *, missing: Reason | None = None, upload: bool = False) -> None:
    """Map one answer of a Mastodon instance to herald's publish errors; 2xx returns.

    Args:
        response: the instance's answer.
        missing: what Mastodon's own 404 ("Record not found") means for this call: the
            status replied to is gone (``THREAD_PARENT_MISSING``), an upload is gone
            (``MEDIA_INVALID``); None: nothing it names can be missing, so the address is wrong.
        upload: the call sent a file, so a refusal for good (413, 422) is the file's.

    Raises:
        AuthExpired: 401 (the token is invalid or revoked), 422 for a token without a user.
        Rejected: 403 (PERMISSION_DENIED: a missing scope, a disabled, unconfirmed or
            unapproved login), 404 (``missing``), 413 and 422 on media (MEDIA_INVALID),
            other 4xx (CONTENT_REJECTED): each refused before anything was made.
        MediaNotReady: 422, an attachment has not finished processing: nothing was posted.
        RateLimited: 429, with the seconds until ``X-RateLimit-Reset``.
        ConfigError: a redirect or a 404 that says ``base_url`` is not the instance's API.
        Ambiguous: 5xx (503 included: "a temporary problem", which says nothing of what was
            stored) and any other status, after which the status may exist.
    """
    status = response.status_code
    if 200 <= status < 300:
        return
    error = MastodonError.of(response)
    said = error.describe(status)
    if 300 <= status < 400:
        # The API itself never redirects; a proxy in front of it does (http → https, a moved
        # instance). The request went no further, and base_url names the wrong address.
        where = response.headers.get("Location", "elsewhere")
        raise ConfigError(
            f"{said}: the instance sends its API to {where}; give its address with "
            "`herald channel reconnect NAME --set base_url=https://mastodon.example`"
        )
    if status == 401:
        raise AuthExpired(f"{said}; {_reconnect()}", status=status)
    if status == 403:
        if error.says(MISSING_SCOPE):
            said += f"; the token lacks a scope herald needs ({SCOPES}): {_reconnect()}"
        raise Rejected(Reason.PERMISSION_DENIED, said, status=status)
    if status == 404:
        if missing is not None and error.from_mastodon:
            raise Rejected(missing, said, status=status)
        raise ConfigError(
            f"{said}: no Mastodon API answers at this base_url; give the instance's own address "
            "with `herald channel reconnect NAME --set base_url=https://mastodon.example`"
        )
    if status == 422:
        if error.says(NO_USER):
            raise AuthExpired(f"{said}: the token belongs to an app, not an account; {_reconnect()}", status=status)
        if error.says(NOT_READY):
            raise MediaNotReady(said, status=status)
        if upload or error.says(*MEDIA_REFUSALS):
            raise Rejected(Reason.MEDIA_INVALID, said, status=status)
        # "Validation failed: Text can't be blank", "... character limit of 500 exceeded".
        raise Rejected(Reason.CONTENT_REJECTED, said, status=status)
    if status == 429:
        raise RateLimited(said, retry_after=retry_after(response), status=status)
    if status == 413 or (upload and 400 <= status < 500):
        raise Rejected(Reason.MEDIA_INVALID, said, status=status)
    if 400 <= status < 500:
        # 400 "ParameterMissing" and the rest: a request refused as it stands, nothing made.
        raise Rejected(Reason.CONTENT_REJECTED, said, status=status)
    raise Ambiguous(said, status=status)


def retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait after a 429: from the answer's ``Date`` to its ``X-RateLimit-Reset``.

    Mastodon sends the reset as an ISO 8601 instant (``2026-12-01T15:05:00.000000Z``,
    mastodon/mastodon ``config/initializers/rack_attack.rb``, ``iso8601(6)``), not as
    seconds. Both instants are the server's, so a clock of ours that is off does not skew
    the wait. A ``Retry-After`` in seconds, as a proxy in front of the instance may send,
    is taken when the reset cannot be read; None when neither says.
    """
    reset = _iso_instant(response.headers.get("X-RateLimit-Reset"))
    now = _http_date(response.headers.get("Date"))
    if reset is not None and now is not None:
        return max((reset - now).total_seconds(), 0.0)
    try:
        return max(float(response.headers.get("Retry-After", "")), 0.0)
    except ValueError:
        return None


def entity(response: httpx.Response, what: str) -> Mapping[str, Any]:
    """The JSON object a 2xx answer carries, with its string ``id``.

    Raises:
        Ambiguous: the instance said yes without an object naming what it made.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, Mapping) or not isinstance(body.get("id"), str) or not body["id"]:
        raise Ambiguous(f"Mastodon answered {response.status_code} to {what} without its id: {response.text[:200]!r}")
    return body


def published_status(response: httpx.Response) -> Published:
    """The status Mastodon confirmed: its ``id``, and ``url``, "a link to the status's HTML
    representation", which may be null, then its ``uri`` (content/en/entities/Status.md).

    Raises:
        Ambiguous: no id: a status may exist that herald cannot name.
    """
    status = entity(response, "a new status")
    url, uri = status.get("url"), status.get("uri")
    link = url if isinstance(url, str) and url else uri if isinstance(uri, str) else ""
    return Published(platform_id=status["id"], url=link)


def _reconnect() -> str:
    return (
        f"make a new access token with the scopes {SCOPES} (Preferences → Development → New application) "
        "and give it with `herald channel reconnect NAME --set token=TOKEN`"
    )


def _iso_instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        instant = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)

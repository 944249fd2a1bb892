"""Every answer of a Bluesky PDS, mapped to herald's publish errors in one function.

A PDS speaks XRPC (https://atproto.com/specs/xrpc; bluesky-social/atproto-website,
src/app/[locale]/specs/xrpc/en.mdx): a refusal is an HTTP status and a JSON body
``{"error": "Name", "message": "..."}``, the name one of the endpoint's lexicon ``errors``
or the generic one of its status (``InvalidRequest`` 400, ``AuthenticationRequired`` 401,
``RateLimitExceeded`` 429, ``InternalServerError`` 500...: packages/xrpc/src/types.ts,
``ResponseType``). The spec's status table says what each family means, and one line of it
carries this module: "``400 Bad Request``: Request was invalid, and was not processed".

A 429 carries ``Retry-After`` (seconds) and ``RateLimit-Reset`` (the UNIX second the limit
resets), set by the reference server (packages/xrpc-server/src/rate-limiter-http.ts);
docs.bsky.app's "Rate Limits" (bluesky-social/bsky-docs, docs/advanced-guides/rate-limits.md)
points at the same headers.

httpx transport errors are left to ``core.plugins.transport``, which maps them for every adapter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from core.plugins import Ambiguous, AuthExpired, ConfigError, NotSent, RateLimited, Reason, Rejected

CREATE_SESSION = "com.atproto.server.createSession"
REFRESH_SESSION = "com.atproto.server.refreshSession"
RESOLVE_HANDLE = "com.atproto.identity.resolveHandle"
GET_RECORD = "com.atproto.repo.getRecord"
UPLOAD_BLOB = "com.atproto.repo.uploadBlob"
PUT_RECORD = "com.atproto.repo.putRecord"

#: Calls that read: whatever they answer, they made no post, and a refusal of theirs says
#: nothing of the post being sent either (the PDS answers "Could not locate record" without
#: an error name where it holds no such repository: packages/pds/src/api/com/atproto/repo/
#: getRecord.ts). Their expected refusals (``RecordNotFound``, ``HandleNotFound``) are read by
#: the caller before this mapping.
READS = frozenset({GET_RECORD, RESOLVE_HANDLE})

#: The only call that can make a post. Every other call herald makes reads, signs in or
#: uploads a file (which is not the post: ``core.runtime.attaching``), so an answer that does
#: not say what became of it (a 5xx) still says that no post was made by it.
WRITES = frozenset({PUT_RECORD})

#: A token that no longer works: "Token has expired" / "Token could not be verified"
#: (packages/pds/src/auth-verifier.ts, ``verifyBearerJwt``), 400s that every authenticated
#: endpoint documents (docs.bsky.app, e.g. docs/api/com-atproto-repo-put-record.api.mdx).
#: The request was refused before its handler ran: a new session and one more try are safe.
STALE_TOKEN = frozenset({"ExpiredToken", "InvalidToken"})

#: Refusals of the files a post references: a blob the PDS no longer holds (it deletes
#: uploads no record took up in time), or one that does not match what was uploaded
#: (packages/pds/src/actor-store/blob/transactor.ts, ``verifyBlobAndMakePermanent``).
MEDIA_ERRORS = frozenset({"BlobNotFound", "InvalidMimeType", "InvalidSize", "BlobTooLarge"})


@dataclass(frozen=True)
class XrpcError:
    """What an XRPC error body says; None for what it does not (a proxy's HTML page, say:
    "Clients should be robust to non-JSON error responses", xrpc spec)."""

    error: str | None
    message: str | None

    @classmethod
    def of(cls, response: httpx.Response) -> XrpcError:
        try:
            body = response.json()
        except ValueError:
            return cls(None, None)
        if not isinstance(body, dict):
            return cls(None, None)
        error, message = body.get("error"), body.get("message")
        return cls(error if isinstance(error, str) else None, message if isinstance(message, str) else None)

    def describe(self, method: str, status: int) -> str:
        said = f"Bluesky answered {method} with {status}"
        if self.error:
            said += f" {self.error}"
        if self.message:
            said += f": {self.message}"
        return said


def needs_new_session(response: httpx.Response) -> bool:
    """Whether an authenticated call was refused for its access token alone: a 401, or a
    400 ``ExpiredToken``/``InvalidToken``. Nothing was done; the official client refreshes
    and sends it once more on exactly these (packages/lex/lex-password-session/src/
    password-session.ts, ``fetchHandler``)."""
    status = response.status_code
    return status == 401 or (status == 400 and XrpcError.of(response).error in STALE_TOKEN)


def raise_for_answer(response: httpx.Response, method: str, *, now: Callable[[], float] = time.time) -> None:
    """Map one answer of a PDS to herald's publish errors; 2xx returns.

    Args:
        response: the PDS's answer.
        method: the XRPC method (NSID) it answers, for messages and for what a 5xx may mean.
        now: the UNIX clock ``RateLimit-Reset`` is counted from.

    Raises:
        RateLimited: 429, with the seconds ``Retry-After`` (else ``RateLimit-Reset``) gives.
        AuthExpired: 401 and the refused-credentials errors, with the fix for each.
        Ambiguous: 5xx or any undocumented status to ``putRecord``, after which the post may
            exist; an ``InvalidSwap``, which says a post is already at its key.
        NotSent: the same answers to a call that makes no post; any other refusal of a read.
        ConfigError: 404 or 501, the ``service`` setting names no PDS.
        Rejected: MEDIA_INVALID (a refused file), PERMISSION_DENIED (403), CONTENT_REJECTED
            (any other 4xx).
    """
    status = response.status_code
    if 200 <= status < 300:
        return
    error = XrpcError.of(response)
    said = error.describe(method, status)
    if status == 429:
        raise RateLimited(said, retry_after=retry_after(response, now), status=status)
    if status == 401 or error.error in (*STALE_TOKEN, "AuthFactorTokenRequired", "AccountTakedown"):
        raise AuthExpired(f"{said}; {_reconnect(error.error)}", status=status)
    if status in (404, 501):
        # "404 ... can also indicate that the server does not support atproto, or does not
        # support this endpoint"; "501 ... Client should *not* retry" (xrpc spec).
        raise ConfigError(
            f"{said}; the channel's service setting does not name a Bluesky PDS that takes {method}: give the "
            "address of the account's host with `herald channel reconnect NAME --set service=https://bsky.social`"
        )
    if method in READS:
        raise NotSent(f"{said} (a read: no post is made by it)", status=status)
    if not 400 <= status < 500:
        if method in WRITES:
            raise Ambiguous(said, status=status)
        raise NotSent(f"{said} (no post is made by {method})", status=status)
    if error.error == "InvalidSwap":
        # Only the record's swap is sent (never swapCommit): a post already holds the key.
        raise Ambiguous(f"{said}; a post already holds this part's record key", status=status)
    if status == 403:
        # "The client lacks permission for this endpoint" (xrpc spec).
        raise Rejected(Reason.PERMISSION_DENIED, said, status=status)
    if (
        error.error in MEDIA_ERRORS
        or method == UPLOAD_BLOB  # 413 and 415 among them: a file too big, or of a refused type
        # A lexicon refusal names the field: "Invalid app.bsky.feed.post record: Record/embed/..."
        # (packages/pds/src/repo/prepare.ts, ``validateRecord``).
        or "/embed" in (error.message or "")
    ):
        raise Rejected(Reason.MEDIA_INVALID, said, status=status)
    # Any other 400 ("InvalidRequest": a record its lexicon refuses, text too long...) was
    # "not processed" and never will be: the post is refused as it is.
    raise Rejected(Reason.CONTENT_REJECTED, said, status=status)


def retry_after(response: httpx.Response, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait: ``Retry-After``, else until ``RateLimit-Reset`` (a UNIX time); None
    when neither says."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        pass
    else:
        if seconds >= 0:
            return seconds
    try:
        reset = float(response.headers.get("RateLimit-Reset", ""))
    except ValueError:
        return None
    return max(reset - now(), 0.0)


def _reconnect(error: str | None) -> str:
    if error == "AccountTakedown":
        return "the Bluesky account has been taken down; once it is restored, `herald channel reconnect NAME`"
    if error == "AccountDeactivated":
        return (
            "the Bluesky account is deactivated: sign in to bsky.app to reactivate it, then "
            "`herald channel reconnect NAME`"
        )
    if error == "AuthFactorTokenRequired":
        return (
            "that is the account's own password, which asks for a code from an email: make an app password "
            "(bsky.app → Settings → Privacy and security → App passwords) and give it with "
            "`herald channel reconnect NAME --set app_password=xxxx-xxxx-xxxx-xxxx`"
        )
    return (
        "the handle or app password was refused (revoked, or mistyped): make a new app password (bsky.app → "
        "Settings → Privacy and security → App passwords) and give it with "
        "`herald channel reconnect NAME --set app_password=xxxx-xxxx-xxxx-xxxx`"
    )

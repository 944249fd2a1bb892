"""The sandbox speaking Bluesky's XRPC (the AT Protocol's HTTP API), under ``/bluesky``.

A Bluesky channel's ``service`` is ``http://127.0.0.1:PORT/bluesky``; every method is at
``/xrpc/<nsid>``. The shapes come from the lexicons (github.com/bluesky-social/atproto,
``lexicons/``) and, where a lexicon does not say what a call answers, from the PDS's code
(``packages/pds/src``):

* ``com.atproto.server.createSession`` ``{identifier, password}`` → ``{did, handle,
  accessJwt, refreshJwt, active}``. Any handle is an account (its DID is derived from it:
  ``atproto.py``); the password is a sandbox token, which must not be revoked (401
  ``AuthenticationRequired`` "Invalid identifier or password") nor forbidden (401
  ``AccountTakedown``). ``refreshSession`` (Bearer refreshJwt) gives a new pair,
  ``getSession`` says whose the session is.
* Access tokens live ``bluesky_access_ttl`` seconds (a fault setting; the PDS's own is
  120 minutes): then every call answers 400 ``ExpiredToken`` "Token has expired" and the
  client must refresh. A token whose password was revoked since answers that at once
  (a real PDS would go on taking it until it expires, then refuse the refresh): its
  refresh answers 400 ``ExpiredToken`` "Token has been revoked", and a new session 401.
* ``com.atproto.repo.createRecord`` → ``{uri, cid, commit, validationStatus}``; an rkey
  that exists already → a bare 500 (the PDS's insert fails). ``putRecord`` of a record
  identical to the one at its rkey is a no-op answering the same uri and cid (no
  ``commit``); a different record overwrites it, as putRecord does – and the post is
  marked (``overwrites`` in the oracle), since herald must never change a published post.
  ``getRecord`` → ``{uri, cid, value}`` or 400 ``RecordNotFound``.
* ``com.atproto.repo.uploadBlob`` (raw bytes) → ``{blob: {$type, ref: {$link}, mimeType,
  size}}``, the type sniffed from the bytes as the PDS does, at most 5 MiB (the PDS's
  default limit; 413 ``PayloadTooLarge``). "Blob restrictions (mimetype, size, etc) are
  enforced when the reference is created": an image embed's blob must be an image of at
  most 2,000,000 bytes (app.bsky.embed.images), uploaded here, its ref's type and size
  those stored.
* ``com.atproto.identity.resolveHandle`` → ``{did}`` for any handle.

Only ``app.bsky.feed.post`` records are taken, checked as ``bluesky_records.py`` says: as
their lexicon says, and stricter where strictness finds herald's bugs (facets' byte
slices, reply refs, blobs). Errors are XRPC's ``{"error", "message"}``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from adapters.sandbox.atproto import blob_cid, did_for, invalid, next_tid, record_cid, xrpc_error
from adapters.sandbox.bluesky_records import PREFIX, prepared_write, stored_post
from adapters.sandbox.exchange import Answer, Exchange
from adapters.sandbox.faults import Fault
from adapters.sandbox.media import StoredMedia, sniffed_type
from adapters.sandbox.store import Refusal

#: The PDS's blobUploadLimit default (packages/pds/src/config/config.ts).
MAX_BLOB_BYTES = 5 * 1024 * 1024
#: The PDS's refresh token lifetime (account-manager/helpers/auth.ts: '90days').
REFRESH_TTL = 90 * 24 * 3600.0
_ACCESS, _REFRESH = "com.atproto.access", "com.atproto.refresh"
# The tokens are signed so that only the sandbox's own are taken, with a fixed key so that
# they outlive a restart; this is a test platform, not a vault.
_SIGNING_KEY = b"herald sandbox bluesky"


def bare_500() -> Refusal:
    """What the PDS answers when its insert fails: no details for a 500 (xrpc-server errors.ts)."""
    return xrpc_error(500, "InternalServerError", "Internal Server Error")


class BlueskyAnswers:
    """How a PDS words the faults' answers."""

    def rate_limited(self, retry_after: int) -> Answer:
        headers = {
            "RateLimit-Limit": "5000",
            "RateLimit-Remaining": "0",
            # Epoch seconds, as xrpc-server's rate limiter sets it.
            "RateLimit-Reset": str(math.ceil(time.time() + retry_after)),
            "RateLimit-Policy": "5000;w=3600",
        }
        return Answer(429, {"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"}, headers)

    def unavailable(self) -> Answer:
        return Answer(503, {"error": "NotEnoughResources", "message": "Not Enough Resources"})

    def internal_error(self) -> Answer:
        return Answer(500, bare_500().body)


WORDING = BlueskyAnswers()


def answer_bluesky(exchange: Exchange) -> None:
    """Answer a request under ``/bluesky``.

    Raises:
        Refusal: the answer is an error, in XRPC's words.
    """
    parts = exchange.parts[1:]
    if len(parts) != 2 or parts[0] != "xrpc":
        raise xrpc_error(404, "NotFound", f"the sandbox's Bluesky answers at /{PREFIX}/xrpc/<nsid> only")
    nsid = parts[1]
    if nsid not in METHODS:
        raise xrpc_error(501, "MethodNotImplemented", "Method Not Implemented")
    verb, method = METHODS[nsid]
    if exchange.method != verb:
        raise invalid(f"Incorrect HTTP method ({exchange.method}) expected {verb}")
    method(exchange)


# -- sessions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """Whose a token is: the account (DID, handle) and the sandbox token it logged in with."""

    did: str
    handle: str
    password: str


def _encode(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _token(scope: str, session: Session) -> str:
    """A JWT-shaped token: the session and when it was issued, signed by the sandbox."""
    header = _encode({"typ": "at+jwt" if scope == _ACCESS else "refresh+jwt", "alg": "HS256"})
    claims = {"scope": scope, "sub": session.did, "handle": session.handle, "password": session.password}
    payload = _encode({**claims, "iat": time.time(), "jti": uuid.uuid4().hex})
    signature = hmac.new(_SIGNING_KEY, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def _claims(token: str) -> dict[str, Any] | None:
    """A token's claims when the sandbox signed it; None otherwise."""
    pieces = token.split(".")
    if len(pieces) != 3:
        return None
    header, payload, signature = pieces
    expected = hmac.new(_SIGNING_KEY, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    try:
        given = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error):
        return None
    return claims if hmac.compare_digest(given, expected) and isinstance(claims, dict) else None


def _session(exchange: Exchange, scope: str) -> Session:
    """The session a request's bearer token carries, refused as the PDS's auth verifier refuses it.

    Raises:
        Refusal: 401 ``AuthMissing``; 400 ``InvalidToken``, ``ExpiredToken``; 401 ``AccountTakedown``.
    """
    token = exchange.bearer()
    if not token:
        raise xrpc_error(401, "AuthMissing", "Authentication Required")
    claims = _claims(token)
    if claims is None:
        raise xrpc_error(400, "InvalidToken", "Token could not be verified")
    session = Session(str(claims["sub"]), str(claims["handle"]), str(claims["password"]))
    state = exchange.store.token_state(session.password)
    access = claims["scope"] == _ACCESS
    ttl = exchange.faults.config.bluesky_access_ttl if access else REFRESH_TTL
    # The expiry first, then the scope, as jose.jwtVerify runs before the scope check.
    if time.time() - float(claims["iat"]) >= ttl or (access and state == "revoked"):
        raise xrpc_error(400, "ExpiredToken", "Token has expired")
    if claims["scope"] != scope:
        raise xrpc_error(400, "InvalidToken", "Bad token scope")
    if state == "forbidden":
        raise xrpc_error(401, "AccountTakedown", "Account has been taken down")
    return session


def _session_answer(session: Session) -> dict[str, Any]:
    return {
        "accessJwt": _token(_ACCESS, session),
        "refreshJwt": _token(_REFRESH, session),
        "handle": session.handle,
        "did": session.did,
        "active": True,
    }


def _create_session(exchange: Exchange) -> None:
    body = _input(exchange, "identifier", "password")
    identifier, password = body["identifier"], body["password"]
    if not isinstance(identifier, str) or not isinstance(password, str) or not identifier or not password:
        raise invalid("Input/identifier and Input/password must be strings")
    state = exchange.store.token_state(password)
    if state == "revoked":
        raise xrpc_error(401, "AuthenticationRequired", "Invalid identifier or password")
    if state == "forbidden":
        raise xrpc_error(401, "AccountTakedown", "Account has been taken down")
    if identifier.startswith("did:"):
        session = Session(identifier, "handle.invalid", password)
    else:
        handle = identifier.removeprefix("@").lower()
        session = Session(did_for(handle), handle, password)
    exchange.send_json(200, _session_answer(session))


def _refresh_session(exchange: Exchange) -> None:
    session = _session(exchange, _REFRESH)
    if exchange.store.token_state(session.password) == "revoked":
        raise xrpc_error(400, "ExpiredToken", "Token has been revoked")
    exchange.send_json(200, _session_answer(session))


def _get_session(exchange: Exchange) -> None:
    session = _session(exchange, _ACCESS)
    exchange.send_json(200, {"handle": session.handle, "did": session.did, "active": True})


def _resolve_handle(exchange: Exchange) -> None:
    handle = exchange.query.get("handle", "")
    if not handle or "." not in handle:
        raise invalid('Params must have the property "handle", a handle such as alice.bsky.social')
    exchange.send_json(200, {"did": did_for(handle)})


# -- records --------------------------------------------------------------------------


def _input(exchange: Exchange, *required: str) -> dict[str, Any]:
    """The JSON input of a procedure, with its required properties.

    Raises:
        Refusal: 400 ``InvalidRequest``, not a JSON object, or a property missing.
    """
    try:
        body = json.loads(exchange.raw or b"null")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise invalid("Request body must be a JSON object")
    for name in required:
        if name not in body:
            raise invalid(f'Input must have the property "{name}"')
    return body


def _create_record(exchange: Exchange) -> None:
    _write_record(exchange, put=False)


def _put_record(exchange: Exchange) -> None:
    _write_record(exchange, put=True)


def _write_record(exchange: Exchange, *, put: bool) -> None:
    faults = exchange.faults
    config = faults.config
    fault = faults.choose(PREFIX, "posts").fault
    if exchange.refused_before_accept(fault, config, WORDING):
        return
    session = _session(exchange, _ACCESS)
    # The account's own limit: its app password stands for it (a session's tokens change).
    if exchange.over_rate(session.password, WORDING):
        return
    body = _input(exchange, "repo", "collection", "record", *(("rkey",) if put else ()))
    write = prepared_write(body, session.did, session.handle)
    answer: dict[str, Any] = {"uri": write.uri, "cid": write.cid}
    with exchange.store.writing() as writer:
        existing = writer.post(write.uri)
        if existing is not None and not put:
            raise bare_500()  # the PDS inserts, and the unique index refuses: no details
        # putRecord.ts: the very record there already is a no-op (no commit), before any swap
        # is compared; swapRecord null means "only if there is none".
        if existing is None or existing.cid != write.cid:
            current = existing.cid if existing is not None else None
            if put and "swapRecord" in body and body["swapRecord"] != current:
                raise xrpc_error(400, "InvalidSwap", f"Record was at {current or 'null'}")
            writer.add(stored_post(writer, write, session.password, existing))
            rev = next_tid()
            answer["commit"] = {"cid": record_cid({"data": write.cid, "rev": rev}), "rev": rev}
    answer["validationStatus"] = "valid"
    exchange.answer_accepted(fault, config, write.uri, Answer(200, answer), WORDING)


def _get_record(exchange: Exchange) -> None:
    query = exchange.query
    for name in ("repo", "collection", "rkey"):
        if not query.get(name):
            raise invalid(f'Params must have the property "{name}"')
    repo = query["repo"]
    did = repo if repo.startswith("did:") else did_for(repo)
    uri = f"at://{did}/{query['collection']}/{query['rkey']}"
    post = exchange.store.get(uri)
    if post is None or post.record is None or query.get("cid") not in (None, post.cid):
        raise xrpc_error(400, "RecordNotFound", f"Could not locate record: {uri}")
    exchange.send_json(200, {"uri": uri, "cid": post.cid, "value": json.loads(post.record)})


# -- blobs ----------------------------------------------------------------------------


def _upload_blob(exchange: Exchange) -> None:
    faults = exchange.faults
    config = faults.config
    decision = faults.choose(PREFIX, "media")
    if exchange.refused_before_accept(decision.fault, config, WORDING):
        return
    session = _session(exchange, _ACCESS)
    if decision.fault is Fault.REFUSE_MEDIA:
        raise invalid("the PDS refused the blob")
    data = exchange.raw
    if len(data) > MAX_BLOB_BYTES:
        raise xrpc_error(413, "PayloadTooLarge", "request entity too large")
    if not data:
        raise invalid("the blob is empty")
    # The type the bytes show, else the one sent (uploadBlobAndGetMetadata).
    mime = sniffed_type(data) or exchange.content_type() or "application/octet-stream"
    cid = blob_cid(data)
    with exchange.store.writing() as writer:
        if writer.media(cid) is None:  # the same bytes again are the same blob
            media = StoredMedia(
                id=cid,
                strategy=PREFIX,
                mime=mime,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                token=session.password,
                created_at=datetime.now(UTC).isoformat(),
                processing_seconds=0.0,
                fails=False,
                accepted_at=writer.now,
            )
            writer.add_media(media, data)
    blob = {"$type": "blob", "ref": {"$link": cid}, "mimeType": mime, "size": len(data)}
    exchange.answer_accepted(decision.fault, config, cid, Answer(200, {"blob": blob}), WORDING)


#: The methods by NSID: their HTTP verb (GET for a query, POST for a procedure) and answer.
METHODS: dict[str, tuple[str, Callable[[Exchange], None]]] = {
    "com.atproto.server.createSession": ("POST", _create_session),
    "com.atproto.server.refreshSession": ("POST", _refresh_session),
    "com.atproto.server.getSession": ("GET", _get_session),
    "com.atproto.identity.resolveHandle": ("GET", _resolve_handle),
    "com.atproto.repo.createRecord": ("POST", _create_record),
    "com.atproto.repo.putRecord": ("POST", _put_record),
    "com.atproto.repo.getRecord": ("GET", _get_record),
    "com.atproto.repo.uploadBlob": ("POST", _upload_blob),
}

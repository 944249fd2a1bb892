"""Sessions with a PDS: signed in once with the app password, refreshed when they expire.

``com.atproto.server.createSession`` takes the handle and app password and answers an
``accessJwt`` and a ``refreshJwt`` (bluesky-social/atproto, lexicons/com/atproto/server/
createSession.json); every other call carries ``Authorization: Bearer <accessJwt>``.
"the validity lifetime for these tokens is short. Every couple minutes, a new access JWT can
be requested by hitting the ``com.atproto.server.refreshSession`` endpoint, using the refresh
JWT instead of an access JWT" (https://atproto.com/specs/xrpc, "Authentication").

Signing in is rate limited – "``com.atproto.server.createSession``: Measured per account,
30 per 5 minutes, 300 per day" (bluesky-social/bsky-docs, docs/advanced-guides/
rate-limits.md) – so a session is kept in memory, per account, for as long as the adapter
lives, and shared by the threads that publish its channels in parallel. One lock per account
makes its sign-ins and refreshes one at a time: a refresh token is used once (the PDS
rotates it: packages/pds/src/api/com/atproto/server/refreshSession.ts), and a thread that
waited for another's refresh takes the new session instead of making its own.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeGuard

import httpx

from adapters.bluesky.answers import CREATE_SESSION, REFRESH_SESSION, needs_new_session, raise_for_answer
from core.plugins import NotSent, http_url


@dataclass(frozen=True)
class Account:
    """Whose session: the PDS, the identifier signed in with, and the app password."""

    service: str
    identifier: str
    password: str = field(repr=False)

    @property
    def cache_key(self) -> tuple[str, str, str]:
        """What a session is kept under: a new app password (a reconnect) gets a new one.
        The password is kept as a digest, so the key can be shown without it."""
        return (self.service, self.identifier.lower(), hashlib.sha256(self.password.encode()).hexdigest())


@dataclass(frozen=True)
class Session:
    """One signed-in session: its tokens and the account they belong to."""

    access_jwt: str = field(repr=False)
    refresh_jwt: str = field(repr=False)
    did: str
    handle: str
    #: Where the account's repository is: the PDS its DID document names, else the service
    #: signed in at. Bluesky's entryway (``bsky.social``) forwards what is sent to it, but "for
    #: non-session related routes, we encourage going directly to the PDS in order to avoid the
    #: extra hop", and "we return the user's DID document (which contains the user's actual
    #: PDS hostname) in all session management routes" (bsky-docs, docs/advanced-guides/
    #: entryway.md); the official client sends there (lex-password-session, ``fetchUrl``).
    pds: str
    #: ``active`` and ``status`` of createSession: a deactivated or suspended account signs
    #: in but cannot post.
    active: bool = True
    status: str | None = None

    @property
    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access_jwt}"}


class Sessions:
    """The sessions of one adapter instance, one per account; safe to use from many threads."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._sessions: dict[tuple[str, str, str], Session] = {}

    def current(self, client: httpx.Client, account: Account) -> Session:
        """The account's session, signing in first if it has none."""
        with self._lock(account):
            session = self._sessions.get(account.cache_key)
            if session is None:
                session = self._store(account, self._create(client, account))
            return session

    def renew(self, client: httpx.Client, account: Account, stale: Session) -> Session:
        """A session to use instead of ``stale``, whose access token was refused: the one
        another thread made meanwhile, else ``stale`` refreshed, else a new sign-in."""
        with self._lock(account):
            session = self._sessions.get(account.cache_key)
            if session is not None and session is not stale:
                return session
            renewed = self._refresh(client, account, stale) or self._create(client, account)
            return self._store(account, renewed)

    def sign_in(self, client: httpx.Client, account: Account) -> Session:
        """A new session whatever is kept (``herald channel test`` checks the password itself)."""
        with self._lock(account):
            return self._store(account, self._create(client, account))

    def _lock(self, account: Account) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(account.cache_key, threading.Lock())

    def _store(self, account: Account, session: Session) -> Session:
        self._sessions[account.cache_key] = session
        return session

    def _create(self, client: httpx.Client, account: Account) -> Session:
        response = client.post(
            f"{account.service}/xrpc/{CREATE_SESSION}",
            json={"identifier": account.identifier, "password": account.password},
        )
        raise_for_answer(response, CREATE_SESSION, now=self._now)
        return _session_of(response, CREATE_SESSION, account.service)

    def _refresh(self, client: httpx.Client, account: Account, stale: Session) -> Session | None:
        """``stale`` refreshed; None when its refresh token no longer works either."""
        # refreshSession.json: "Requires auth using the 'refreshJwt' (not the 'accessJwt')".
        response = client.post(
            f"{account.service}/xrpc/{REFRESH_SESSION}",
            headers={"Authorization": f"Bearer {stale.refresh_jwt}"},
        )
        if needs_new_session(response):
            # "ExpiredToken" / "InvalidToken" (refreshSession.json's errors; "Token has been
            # revoked" is an ExpiredToken too): sign in again with the app password.
            return None
        raise_for_answer(response, REFRESH_SESSION, now=self._now)
        return _session_of(response, REFRESH_SESSION, account.service)


def _session_of(response: httpx.Response, method: str, service: str) -> Session:
    """The session a 2xx answer of createSession or refreshSession gives.

    Raises:
        NotSent: it lacks a token or the account's DID: no session, and no post made.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    access, refresh, did, handle = (body.get(name) for name in ("accessJwt", "refreshJwt", "did", "handle"))
    if not (_text(access) and _text(refresh) and _text(did) and _text(handle)):
        # Which fields, never their values: a token may be among those that are there.
        missing = [n for n in ("accessJwt", "refreshJwt", "did", "handle") if not _text(body.get(n))]
        raise NotSent(f"Bluesky answered {method} with {response.status_code} but no session (no {', '.join(missing)})")
    status = body.get("status")
    return Session(
        access_jwt=access,
        refresh_jwt=refresh,
        did=did,
        handle=handle,
        pds=_pds_of(body.get("didDoc")) or service,
        active=body.get("active") is not False,
        status=status if isinstance(status, str) else None,
    )


def _pds_of(did_doc: object) -> str | None:
    """The PDS a DID document names: "the ``service`` array, with ``id`` ending
    ``#atproto_pds``, and ``type`` matching ``AtprotoPersonalDataServer``. The first matching
    entry in the array should be used"; its ``serviceEndpoint`` holds "only the URI scheme
    (``http`` or ``https``), hostname, and optional port number" (https://atproto.com/specs/did)."""
    services = did_doc.get("service") if isinstance(did_doc, dict) else None
    for entry in services if isinstance(services, list) else ():
        if not isinstance(entry, dict):
            continue
        id_, type_, endpoint = entry.get("id"), entry.get("type"), entry.get("serviceEndpoint")
        if isinstance(id_, str) and id_.endswith("#atproto_pds") and type_ == "AtprotoPersonalDataServer":
            if isinstance(endpoint, str) and http_url(endpoint) is None:
                return endpoint.rstrip("/")
            return None
    return None


def _text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)

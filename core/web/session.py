"""Who a dashboard request acts as: the login session, its CSRF token, and login's rate limit.

The session is starlette's signed cookie (``SessionMiddleware``: HttpOnly, SameSite=Lax).
It holds only the id of the API key the person logged in with and a CSRF token. Its
signing secret is derived from herald's sealing key (``core.store.sealing``) with HMAC, so
every API server of one herald signs and reads the same cookies without a setting of its
own; rotating the sealing key logs everyone out.

Every request checks the key again (``principal_of``): a key revoked or expired since the
login ends the session at once. Every form and htmx request carries the session's CSRF
token (a hidden ``csrf`` field, or the ``X-CSRF-Token`` header htmx sends); a POST without
it is refused 403.

Login attempts are limited per client address in this process's memory
(:class:`LoginLimiter`): behind several API servers each keeps its own count, so the
limit per address is at most that many times :data:`LOGIN_ATTEMPTS`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from core.domain.errors import Forbidden, TooManyAttempts, Unauthenticated, UserError
from core.domain.roles import Action, require
from core.services.keys import Principal, principal_of
from core.store import sealing

SESSION_COOKIE = "herald_session"
#: A session lasts this long without a new login.
SESSION_SECONDS = 12 * 3600
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
#: Login attempts per client address per :data:`LOGIN_WINDOW` seconds.
LOGIN_ATTEMPTS = 10
LOGIN_WINDOW = 60.0


def session_secret() -> str:
    """The cookie-signing secret: HMAC-SHA256 of a fixed label under the newest sealing key."""
    key = sealing.keys()[0]
    return hmac.new(key, b"herald dashboard session v1", hashlib.sha256).hexdigest()


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use."""
    token = request.session.get(CSRF_FIELD)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session[CSRF_FIELD] = token
    return token


async def check_csrf(request: Request) -> None:
    """A dependency of every dashboard POST: the session's token must come with it.

    Raises:
        Forbidden: no token, or not this session's.
    """
    expected = request.session.get(CSRF_FIELD)
    form = await request.form()
    # No text herald keeps may hold a NUL character (PostgreSQL's text cannot): refused here,
    # for every form, before any page reads it.
    if any(isinstance(value, str) and "\x00" in value for _, value in form.multi_items()):
        raise UserError("a field of this form holds a NUL character, which no text may: remove it and send it again")
    given = request.headers.get(CSRF_HEADER)
    if given is None:
        field = form.get(CSRF_FIELD)
        given = field if isinstance(field, str) else None
    if not isinstance(expected, str) or given is None or not hmac.compare_digest(expected, given):
        raise Forbidden(
            "this form has no valid CSRF token (it is older than your login?): reload the page and send it again"
        )


def log_in(request: Request, who: Principal) -> None:
    """Start a session as ``who``'s key; a new CSRF token with it (none from before the login)."""
    request.session.clear()
    request.session["key_id"] = who.key_id
    csrf_token(request)


def log_out(request: Request) -> None:
    request.session.clear()


def viewer(request: Request) -> Principal:
    """The principal of the request's session, its key checked again now.

    Raises:
        Unauthenticated: no login, or its key revoked, expired or gone.
    """
    key_id = request.session.get("key_id")
    if not isinstance(key_id, int):
        raise Unauthenticated("log in with an API key")
    try:
        return principal_of(key_id)
    except Unauthenticated:
        log_out(request)
        raise


def requires(action: Action) -> Callable[..., Principal]:
    """A dependency: the session's principal, if its role allows ``action``."""

    def allowed(who: Annotated[Principal, Depends(viewer)]) -> Principal:
        require(who.role, action, "login")
        return who

    return allowed


Viewer = Annotated[Principal, Depends(viewer)]
Scheduler = Annotated[Principal, Depends(requires(Action.SCHEDULE))]
Supporter = Annotated[Principal, Depends(requires(Action.SUPPORT))]
ChannelAdmin = Annotated[Principal, Depends(requires(Action.CHANNELS))]
Csrf = Depends(check_csrf)


class LoginLimiter:
    """At most ``attempts`` logins per client address in any ``window`` seconds (this
    process's memory; see the module's docstring)."""

    def __init__(
        self, attempts: int = LOGIN_ATTEMPTS, window: float = LOGIN_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.attempts, self.window, self.clock = attempts, window, clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def attempt(self, address: str) -> None:
        """Count an attempt from ``address``.

        Raises:
            TooManyAttempts: too many in the window.
        """
        now = self.clock()
        with self._lock:
            seen = self._seen.setdefault(address, deque())
            while seen and seen[0] <= now - self.window:
                seen.popleft()
            if len(seen) >= self.attempts:
                wait = int(seen[0] + self.window - now) + 1
                raise TooManyAttempts(f"too many login attempts from this address: wait {wait} s and try again")
            seen.append(now)
            # Forget idle addresses, so the table cannot grow without bound.
            if len(self._seen) > 10_000:
                for stale in [a for a, times in self._seen.items() if not times or times[-1] <= now - self.window]:
                    del self._seen[stale]

"""Who an API request acts as: an API key (``Authorization: Bearer hk_…``), and what that
key's role allows (``core.domain.roles``). A key sees only its own account: a post,
channel or alarm of another account is answered 404, as if it did not exist
(``core.services.scope``).

The API takes keys only, never the dashboard's session cookie: a page on another site
cannot make a browser act through the API. The dashboard (``core.web``) has its own
login, with CSRF tokens on its forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from core.domain.errors import Unauthenticated
from core.domain.roles import Action, require
from core.services.keys import Principal, authenticate

_bearer = HTTPBearer(auto_error=False, description="An API key from `herald keys create`: hk_…")


def principal(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    """The key a request acts as.

    Raises:
        Unauthenticated: no key, or an unknown, expired or revoked one.
    """
    if credentials is not None:
        return authenticate(credentials.credentials)
    raise Unauthenticated("no API key: send 'Authorization: Bearer hk_…' (`herald keys create` makes one)")


def requires(action: Action) -> Callable[..., Principal]:
    """A dependency: the request's principal, if its role allows ``action``."""

    def allowed(who: Annotated[Principal, Depends(principal)]) -> Principal:
        require(who.role, action)
        return who

    return allowed


Reader = Annotated[Principal, Depends(requires(Action.READ))]
Scheduler = Annotated[Principal, Depends(requires(Action.SCHEDULE))]
Supporter = Annotated[Principal, Depends(requires(Action.SUPPORT))]
ChannelAdmin = Annotated[Principal, Depends(requires(Action.CHANNELS))]
Admin = Annotated[Principal, Depends(requires(Action.ADMINISTER))]

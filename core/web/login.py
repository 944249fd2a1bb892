"""Logging in to the dashboard: with an API key (a form), or a one-time link
(``GET /login/{token}``, as ``make run`` prints it); logging out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request, Response
from fastapi.responses import RedirectResponse

from core.domain.errors import Unauthenticated
from core.services.keys import authenticate, redeem_login_link
from core.web.rendering import PageRoute, render
from core.web.session import Csrf, LoginLimiter, log_in, log_out

router = APIRouter(route_class=PageRoute)


def limiter(request: Request) -> LoginLimiter:
    """The app's count of login attempts per client address (``core.web.mount`` makes it)."""
    found: LoginLimiter = request.app.state.login_limiter
    return found


def _attempt(request: Request) -> None:
    limiter(request).attempt(request.client.host if request.client is not None else "unknown")


@router.get("/login")
def login_page(request: Request) -> Response:
    return render(request, "login.html", None)


@router.post("/login", dependencies=[Csrf])
def login_with_key(request: Request, key: Annotated[str, Form()] = "") -> Response:
    _attempt(request)
    try:
        who = authenticate(key)
    except Unauthenticated as exc:
        return render(request, "login.html", None, status_code=401, refused=str(exc))
    log_in(request, who)
    return RedirectResponse("/", status_code=303)


@router.get("/login/{token}")
def login_with_link(request: Request, token: str) -> Response:
    _attempt(request)
    try:
        who = redeem_login_link(token)
    except Unauthenticated as exc:
        return render(request, "login.html", None, status_code=401, refused=str(exc))
    log_in(request, who)
    return RedirectResponse("/", status_code=303)


@router.post("/logout", dependencies=[Csrf])
def logout(request: Request) -> Response:
    log_out(request)
    return RedirectResponse("/login", status_code=303)

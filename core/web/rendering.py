"""How the dashboard answers: Jinja2 pages, and herald's errors as pages, not JSON.

Every dashboard route is a :class:`PageRoute`: a herald error raised in it (or in its
dependencies) becomes what a person can act on. No login → the login page; a form that
failed (a slot in the past, nothing to retry) → back where it came from with the message
shown; an htmx request → the message as a fragment, with the error's status. The API's
error codes and statuses (``core.api.errors``) decide the status, so the two agree.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates

from core.api.errors import STATUS, code_of
from core.domain.errors import HeraldError, Unauthenticated
from core.domain.roles import Action, allows
from core.services.keys import Principal
from core.web.session import CSRF_FIELD, csrf_token

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")


def _when(instant: datetime | None, fmt: str = "%Y-%m-%d %H:%M %Z") -> str:
    return "" if instant is None else instant.strftime(fmt)


templates.env.filters["when"] = _when


def render(request: Request, name: str, who: Principal | None, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page ``name`` with what every page shows: who is logged in, what they may do,
    the CSRF token for its forms, and the message the last action left."""
    flash = request.session.pop("flash", None)
    return templates.TemplateResponse(
        request,
        name,
        {
            "who": who,
            "can": (lambda action: who is not None and allows(who.role, Action(action))),
            "csrf": csrf_token(request),
            "csrf_field": CSRF_FIELD,
            "flash": flash,
            "tz": request.session.get("tz", "UTC"),
            **context,
        },
        status_code=status_code,
    )


def done(request: Request, to: str, message: str) -> RedirectResponse:
    """After a form: back to ``to`` with ``message`` shown there once."""
    request.session["flash"] = {"kind": "ok", "text": message}
    return RedirectResponse(to, status_code=303)


def back_to(request: Request) -> str:
    """Where the form was sent from, on this site (else the calendar)."""
    referer = urlsplit(request.headers.get("referer", ""))
    if referer.netloc and referer.netloc != request.url.netloc:
        return "/"
    return (referer.path or "/") + (f"?{referer.query}" if referer.query else "")


def error_page(request: Request, exc: HeraldError) -> Response:
    if isinstance(exc, Unauthenticated):
        request.session.pop("key_id", None)
        if request.headers.get("HX-Request"):
            return Response(status_code=401, headers={"HX-Redirect": "/login"})
        if request.method == "GET" and request.url.path != "/login":
            request.session["flash"] = {"kind": "error", "text": str(exc)}
        return RedirectResponse("/login", status_code=303)
    status = STATUS[code_of(exc)]
    message = str(exc) if status < 500 else "herald could not do this; the server's log says what failed"
    if request.headers.get("HX-Request"):
        return HTMLResponse(f'<p class="flash error" role="alert">{_escape(message)}</p>', status_code=status)
    if request.method == "POST" and status in (400, 409):
        request.session["flash"] = {"kind": "error", "text": message}
        return RedirectResponse(back_to(request), status_code=303)
    return templates.TemplateResponse(
        request,
        "error.html",
        {
            "who": None,
            "can": lambda action: False,
            "csrf": csrf_token(request),
            "csrf_field": CSRF_FIELD,
            "flash": None,
            "tz": "UTC",
            "status": status,
            "message": message,
        },
        status_code=status,
    )


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


class PageRoute(APIRoute):
    """A dashboard route: herald's errors answered as pages (see the module's docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except HeraldError as exc:
                return error_page(request, exc)

        return page

"""How the dashboard answers: Jinja2 pages, and herald's errors as pages, not JSON.

Every dashboard route is a :class:`PageRoute`: a herald error raised in it (or in its
dependencies) becomes what a person can act on. No login → the login page; a form that
failed (a slot in the past, nothing to retry) → back where it came from with the message
shown; otherwise a page of one sentence and a link back, with the error's status; an htmx
request → the sentence as a fragment, with the error's status, which the page shows in its
``#problem`` area (``HX-Retarget``). The API's error codes and statuses
(``core.api.errors``) decide the status, so the two agree.

The same goes for what fails before or around a page's code (:func:`install`): a form or
an address that does not match the route (FastAPI's validation, 422), a path no route has
(404), a method a route does not take (405), and an unexpected failure (500). Paths under
``/api/`` and the API's own routes (``/metrics``, ``/openapi.json``, ``/docs``) keep the
API's JSON error shape.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import escape
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.api.errors import STATUS, code_of
from core.api.routes import ROOT as API_ROOT
from core.domain.errors import HeraldError, Unauthenticated
from core.domain.roles import Action, allows
from core.services.keys import Principal
from core.web.session import CSRF_FIELD, csrf_token

log = logging.getLogger(__name__)

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


#: Where a page shows the sentence an htmx request was refused with (``base.html``).
PROBLEM_AREA = "#problem"
#: What a person is told of a failure herald did not expect (the log has the rest).
UNEXPECTED = "herald could not do this; the server's log says what failed"


def error_page(request: Request, exc: HeraldError) -> Response:
    if isinstance(exc, Unauthenticated):
        request.session.pop("key_id", None)
        if request.headers.get("HX-Request"):
            return Response(status_code=401, headers={"HX-Redirect": "/login"})
        if request.method == "GET" and request.url.path != "/login":
            request.session["flash"] = {"kind": "error", "text": str(exc)}
        return RedirectResponse("/login", status_code=303)
    status = STATUS[code_of(exc)]
    message = str(exc) if status < 500 else UNEXPECTED
    if request.method == "POST" and status in (400, 409) and not request.headers.get("HX-Request"):
        request.session["flash"] = {"kind": "error", "text": message}
        return RedirectResponse(back_to(request), status_code=303)
    return problem(request, status, message)


def problem(request: Request, status: int, message: str, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """``message`` answered with ``status``: to htmx, a fragment for the page's
    :data:`PROBLEM_AREA`; otherwise a page of the sentence and a link back."""
    if request.headers.get("HX-Request"):
        return HTMLResponse(
            f'<p class="flash error" role="alert">{escape(message)}</p>',
            status_code=status,
            headers={**(headers or {}), "HX-Retarget": PROBLEM_AREA, "HX-Reswap": "innerHTML"},
        )
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    back = back_to(request)
    # Outside the session's middleware (an unexpected failure) there is no session to read.
    has_session = "session" in request.scope
    return templates.TemplateResponse(
        request,
        "error.html",
        {
            "who": None,
            "can": lambda action: False,
            "csrf": csrf_token(request) if has_session else "",
            "csrf_field": CSRF_FIELD,
            "flash": None,
            "tz": "UTC",
            "status": status,
            "message": message,
            "back": "/" if back == here else back,
        },
        status_code=status,
        headers=dict(headers or {}),
    )


class PageRoute(APIRoute):
    """A dashboard route: herald's errors answered as pages (see the module's docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except HeraldError as exc:
                return error_page(request, exc)
            finally:
                await request.close()  # the uploaded files of a form read with request.form()

        return page


def is_page(request: Request) -> bool:
    """Whether ``request`` is the dashboard's: a page's route or a static file, or a path
    outside ``/api/`` that no route of the API's own (``/metrics``, ``/openapi.json``,
    ``/docs``) matched."""
    scope = request.scope
    if isinstance(scope.get("route"), PageRoute) or isinstance(scope.get("endpoint"), StaticFiles):
        return True
    if "endpoint" in scope:  # the route that matched (or matched but for its method) is the API's
        return False
    path = request.url.path
    return path != API_ROOT and not path.startswith(f"{API_ROOT}/")


def invalid_form(exc: RequestValidationError) -> str:
    """The first thing wrong with a page's form or address, in one sentence."""
    for error in exc.errors():
        where, *rest = [str(p) for p in error.get("loc", ())] or ["body"]
        name = rest[-1] if rest else "what it was sent"
        said = str(error.get("msg", "is not valid"))
        said = said[:1].lower() + said[1:]
        given = repr(error.get("input"))
        given = given if len(given) <= 40 else given[:37] + "..."
        if where in ("path", "query"):
            return f"the address's {name} {given} is not valid ({said}): check the link, or go back"
        if error.get("type") == "missing":
            return f"the form has no {name}: fill it in and send it again"
        return f"the form's {name} {given} is not valid ({said}): correct it and send it again"
    return "the form or the address does not match this page: go back and send it again"


def _http_sentence(request: Request, exc: StarletteHTTPException) -> str:
    if exc.status_code == 404:
        return f"there is no page at {request.url.path}: check the address, or go back"
    if exc.status_code == 405:
        return f"{request.url.path} does not take a {request.method} request: use the dashboard's links and buttons"
    return str(exc.detail) if exc.status_code < 500 else UNEXPECTED


async def _answered(
    handler: Callable[[Request, Any], Response | Awaitable[Response]], request: Request, exc: Exception
) -> Response:
    answer = handler(request, exc)
    return await answer if inspect.isawaitable(answer) else answer


def install(app: FastAPI) -> None:
    """Answer the dashboard's requests that fail outside a page's code as pages (see the
    module's docstring); the API's requests keep the handlers ``core.api.errors`` installed."""
    api_invalid = app.exception_handlers[RequestValidationError]
    api_http = app.exception_handlers[StarletteHTTPException]
    api_unexpected = app.exception_handlers[Exception]

    async def invalid(request: Request, exc: Exception) -> Response:
        if not is_page(request) or not isinstance(exc, RequestValidationError):
            return await _answered(api_invalid, request, exc)
        return problem(request, 422, invalid_form(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        if not is_page(request) or not isinstance(exc, StarletteHTTPException):
            return await _answered(api_http, request, exc)
        return problem(request, exc.status_code, _http_sentence(request, exc), exc.headers)

    async def unexpected(request: Request, exc: Exception) -> Response:
        if not is_page(request):
            return await _answered(api_unexpected, request, exc)
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return problem(request, 500, UNEXPECTED)

    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)

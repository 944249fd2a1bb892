"""The dashboard (§15): server-rendered Jinja2 pages with htmx, on the API's app and its
services. ``mount`` adds its routes and the session it logs in with.

Pages: the calendar (``/``: week, month, list), the composer (``/compose``), a post's page
(``/posts/{id}``), needs attention (``/attention``), health and alarms (``/health``), and
channels (``/channels``); ``/login`` (an API key, or a one-time link ``/login/{token}``) and
``/logout``. Static files (htmx, the drag-and-drop script, the style) under ``/static``.
Each page is a view of ``core.services``; each button one service call, its role checked
on the page (the button is shown only when the role allows it) and again on the POST.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from core.web import calendar, channels, compose, login, panels, posts, rendering
from core.web.rendering import HERE
from core.web.session import SESSION_COOKIE, SESSION_SECONDS, LoginLimiter, session_secret


def mount(app: FastAPI) -> None:
    """Add the dashboard's pages to ``app``, and its error pages beside the API's JSON errors."""
    app.add_middleware(
        SessionMiddleware,
        secret_key=session_secret(),
        session_cookie=SESSION_COOKIE,
        max_age=SESSION_SECONDS,
        same_site="lax",
    )
    app.state.login_limiter = LoginLimiter()
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for module in (login, calendar, compose, posts, channels, panels):
        app.include_router(module.router, include_in_schema=False)
    rendering.install(app)

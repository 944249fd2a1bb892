"""The ASGI app ``herald api`` serves: the API under ``/api/v1``, its OpenAPI document at
``/openapi.json`` (docs at ``/docs``), and the dashboard (``core.web``) at ``/``."""

from __future__ import annotations

from fastapi import FastAPI

from core.api import errors, metrics, routes


def create_app() -> FastAPI:
    app = FastAPI(
        title="herald",
        version="1",
        summary="Schedule a post once; herald publishes it to every channel, once.",
        responses=errors.ERROR_RESPONSES,
    )
    errors.install(app)
    app.include_router(routes.router, prefix=routes.PREFIX)
    app.include_router(metrics.router)
    from core import web

    web.mount(app)
    return app

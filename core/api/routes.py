"""The API's routes, one module per resource: each route a call into ``core.services``,
answered with its view.

A route declares the view's dataclass as its ``response_model`` (so /openapi.json is
exact) and returns the view's one JSON form (``core.services.views.jsonable``), which
FastAPI checks against that model: the API, the CLI's ``--json`` and the dashboard show
the same objects.
"""

from __future__ import annotations

from fastapi import APIRouter

from core.api import account, channels, media, posts, watch

router = APIRouter()
for resource in (posts, channels, media, watch, account):
    router.include_router(resource.router)

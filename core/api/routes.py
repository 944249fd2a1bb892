"""The API's routes, one module per resource: each route a call into ``core.services``,
answered with its view.

A route declares the view's dataclass as its ``response_model`` (so /openapi.json is
exact) and returns the view's one JSON form (``core.services.views.jsonable``), which
FastAPI checks against that model: the API, the CLI's ``--json`` and the dashboard show
the same objects.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from core.api import account, channels, keys, media, posts, watch
from core.api.models import refuse_nul


def no_nul_in_path_or_query(request: Request) -> None:
    """Refuse a NUL character in a path parameter or a query value (a channel's name, a search).

    Raises:
        ApiError: ``invalid_request``.
    """
    refuse_nul(dict(request.path_params), "the path")
    refuse_nul(list(request.query_params.multi_items()), "the query")


#: Every path under ``ROOT`` is the API's: its errors, an unknown path's 404 among them, are
#: answered in the API's JSON shape (the dashboard has every other path).
ROOT = "/api"
#: Where the API's routes are served.
PREFIX = f"{ROOT}/v1"

router = APIRouter(dependencies=[Depends(no_nul_in_path_or_query)])
for resource in (posts, channels, media, watch, account, keys):
    router.include_router(resource.router)

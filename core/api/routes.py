"""The API's routes: each one a call into ``core.services``, answered with its view.

A route declares the view's dataclass as its ``response_model`` (so /openapi.json is
exact) and returns the view's one JSON form (``core.services.views.jsonable``), which
FastAPI checks against that model: the API, the CLI's ``--json`` and the dashboard show
the same objects.
"""

from __future__ import annotations

from fastapi import APIRouter

from core.api.auth import Reader
from core.services.health import Health, health
from core.services.views import Json, jsonable

router = APIRouter()


@router.get("/health", response_model=Health, tags=["health"])
def get_health(who: Reader) -> Json:
    """herald's health: what is moving, what waits for a person, and every problem by name."""
    return jsonable(health())

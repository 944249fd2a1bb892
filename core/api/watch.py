"""What is moving and what waits for a person: health, alarms, and the reasons a
delivery waits or failed, each with its explanation and the action that fixes it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from core.api.auth import Reader, Supporter
from core.api.models import PathId
from core.services import scope
from core.services.alarms import AlarmView, list_alarms, resolve_alarm
from core.services.health import Health, health
from core.services.support import ReasonView, reasons
from core.services.views import Json, jsonable

router = APIRouter()


@router.get("/health", response_model=Health, tags=["health"])
def get_health(who: Reader) -> Json:
    """herald's health: what is moving, what waits for a person, and every problem by name.
    herald's own state (reconciler, queue, workers, the global stop) is whole; deliveries,
    alarms and the emergency stop are the key's account's only."""
    return jsonable(health(account_id=who.account_id))


@router.get("/reasons", response_model=list[ReasonView], tags=["health"])
def get_reasons(who: Reader) -> Json:
    """Every reason a delivery waits or failed: what it means and what fixes it."""
    return jsonable(reasons())


@router.get("/alarms", response_model=list[AlarmView], tags=["alarms"])
def alarms(who: Reader, include_resolved: Annotated[bool, Query(description="Resolved alarms too.")] = False) -> Json:
    """The account's open alarms (missed slots, duplicates), newest first."""
    return jsonable(list_alarms(include_resolved=include_resolved, account_id=who.account_id))


@router.post("/alarms/{alarm_id}/resolve", response_model=AlarmView, tags=["alarms"])
def resolve(alarm_id: PathId, who: Supporter) -> Json:
    """Resolve an open alarm; one whose condition still holds is raised again by the next tick."""
    scope.own_alarm(who.account_id, alarm_id)
    return jsonable(resolve_alarm(alarm_id))

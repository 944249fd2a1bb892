"""Health and alarms (``/health``): herald's health (§14: what is moving, what waits for a
person, every problem by name) as the login's account sees it – herald's own state whole,
its deliveries, alarms and stop only – and the account's alarms, which support staff resolve."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from core.services.alarms import list_alarms, resolve_alarm
from core.services.health import health
from core.services.scope import own_alarm
from core.web.rendering import PageRoute, done, render
from core.web.session import Csrf, Supporter, Viewer

router = APIRouter(route_class=PageRoute)


@router.get("/health")
def health_page(request: Request, who: Viewer, fragment: bool = False) -> Response:
    page = "health_panel.html" if fragment else "health.html"
    mine = who.account_id
    return render(request, page, who, health=health(account_id=mine), alarms=list_alarms(account_id=mine))


@router.post("/alarms/{alarm_id}/resolve", dependencies=[Csrf])
def resolve(request: Request, alarm_id: int, who: Supporter) -> Response:
    own_alarm(who.account_id, alarm_id)
    resolve_alarm(alarm_id)
    return done(request, "/health", f"alarm {alarm_id} resolved")

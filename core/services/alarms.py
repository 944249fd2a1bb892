"""Alarms as people read them (§14): open ones, and resolved ones when asked; and a
person resolving one (the alarm said to, e.g. once the extra copy is deleted).

Raising and resolving them is written by the reconciler's ``reconciler.alarms``, the one
writer of the alarms table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import func, select

from core.domain.errors import Conflict, NotFound
from core.runtime.clock import Clock, DatabaseClock
from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Alarm, AlarmKind, Channel, Post, ReleaseSchedule
from reconciler import alarms

AlarmState = Literal["open", "resolved"]


@dataclass(frozen=True)
class AlarmView:
    """One alarm; instants in its post's zone (its schedule's, for a schedule's alarm)."""

    id: int
    kind: AlarmKind
    #: ``open`` while its condition holds, ``resolved`` once it cleared.
    state: AlarmState
    #: The post it is about; None for a recurring schedule's alarm (``empty_queue``).
    post_id: int | None
    channel: str
    slot: datetime
    detail: str
    opened_at: datetime
    resolved_at: datetime | None
    #: The recurring schedule it is about (``empty_queue``), else None.
    schedule_id: int | None = None


_QUERY = (
    select(Alarm, Channel.name, func.coalesce(Post.zone, ReleaseSchedule.zone, "UTC"))
    .join(Channel, Channel.id == Alarm.channel_id)
    .outerjoin(Post, Post.id == Alarm.post_id)
    .outerjoin(ReleaseSchedule, ReleaseSchedule.id == Alarm.schedule_id)
    .order_by(Alarm.id.desc())
)


def list_alarms(*, include_resolved: bool = False, account_id: int | None = None) -> list[AlarmView]:
    """Open alarms (and resolved ones when asked), newest first; only those on
    ``account_id``'s channels when given (a post's channels are its account's)."""
    query = _QUERY if include_resolved else _QUERY.where(Alarm.open_key.is_not(None))
    if account_id is not None:
        query = query.where(Channel.account_id == account_id)
    with db.reading() as s:
        return [_view(alarm, channel, tz) for alarm, channel, tz in s.execute(query)]


def resolve_alarm(alarm_id: int, *, clock: Clock | None = None) -> AlarmView:
    """Resolve an open alarm by hand. If its condition still holds (a slot still missed),
    the reconciler raises it again on its next tick.

    Raises:
        NotFound: no such alarm.
        Conflict: it is resolved already.
    """
    now = (clock or DatabaseClock(db.engine())).now()
    if not alarms.resolve_alarm(alarm_id, now):
        view = _one(alarm_id)
        if view is None:
            raise NotFound(f"no alarm {alarm_id}; `herald alarms` lists the open ones")
        resolved = view.resolved_at.isoformat(timespec="seconds") if view.resolved_at else "earlier"
        raise Conflict(f"alarm {alarm_id} was resolved already, at {resolved}; `herald alarms` lists the open ones")
    view = _one(alarm_id)
    assert view is not None  # alarms are never deleted
    return view


def _one(alarm_id: int) -> AlarmView | None:
    with db.reading() as s:
        row = s.execute(_QUERY.where(Alarm.id == alarm_id)).one_or_none()
        return None if row is None else _view(*row)


def _view(alarm: Alarm, channel: str, tz: str) -> AlarmView:
    return AlarmView(
        id=alarm.id,
        kind=alarm.kind,
        state="open" if alarm.open_key else "resolved",
        post_id=alarm.post_id,
        channel=channel,
        slot=shown_in(alarm.slot, tz),
        detail=alarm.detail,
        opened_at=shown_in(alarm.opened_at, tz),
        resolved_at=maybe_shown_in(alarm.resolved_at, tz),
        schedule_id=alarm.schedule_id,
    )

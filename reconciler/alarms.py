"""Alarms (§14): raised once while their condition holds, resolved when it clears.

This module is the one writer of the alarms table. A raise inserts a row whose
``open_key`` is unique among open alarms, so two reconcilers raising the same alarm
produce one row and one notification.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import select, update

from core.plugins.events import AlarmEvent
from core.plugins.manager import plugin_manager
from core.store import db
from core.store.models import Alarm, AlarmKind, Channel, QueuedPost, ReleaseSchedule
from reconciler import queries

log = logging.getLogger(__name__)


def _key(kind: AlarmKind, post_id: int | None, channel_id: int, schedule_id: int | None) -> str:
    about = f"schedule-{schedule_id}" if schedule_id is not None else str(post_id)
    return f"{kind}:{about}:{channel_id}"


def _event(alarm: Alarm, channel: str, state: str) -> AlarmEvent:
    return AlarmEvent(
        id=alarm.id,
        kind=str(alarm.kind),
        state=state,
        post_id=alarm.post_id,
        schedule_id=alarm.schedule_id,
        channel=channel,
        slot=alarm.slot,
        detail=alarm.detail,
        opened_at=alarm.opened_at,
        resolved_at=alarm.resolved_at,
    )


def notify(event: AlarmEvent) -> None:
    """Route an alarm to every ``herald_alarm`` implementation, each on its own: a route
    that fails is logged, and neither stops the others nor the reconciler."""
    for impl in plugin_manager().hook.herald_alarm.get_hookimpls():
        try:
            impl.function(alarm=event)
        except Exception:
            log.exception("routing alarm %s through %s failed", event.id, impl.plugin_name)


def raise_alarm(
    kind: AlarmKind,
    post_id: int | None,
    channel_id: int,
    slot: datetime,
    detail: str,
    now: datetime,
    *,
    schedule_id: int | None = None,
) -> bool:
    """Open an alarm unless the same one is open already. Returns whether it was new.

    Args:
        post_id: the post it is about; None for a schedule's alarm (``schedule_id``).
    """
    with db.transaction() as s:
        new_id = s.execute(
            db.insert_unless_present(s, Alarm)
            .values(
                kind=kind,
                post_id=post_id,
                schedule_id=schedule_id,
                channel_id=channel_id,
                slot=slot,
                detail=detail,
                open_key=_key(kind, post_id, channel_id, schedule_id),
                opened_at=now,
            )
            .returning(Alarm.id)
        ).scalar()
        if new_id is None:
            return False
        alarm = s.get_one(Alarm, new_id)
        event = _event(alarm, s.get_one(Channel, channel_id).name, "open")
    notify(event)
    return True


def resolve_alarm(alarm_id: int, now: datetime) -> bool:
    """Close an open alarm and say so through the hook (once). Returns whether it was open."""
    with db.transaction() as s:
        closed = s.execute(
            update(Alarm)
            .where(Alarm.id == alarm_id, Alarm.open_key.is_not(None))
            .values(open_key=None, resolved_at=now)
            .returning(Alarm.id)
        ).scalar()
        if closed is None:
            return False
        alarm = s.get_one(Alarm, alarm_id)
        event = _event(alarm, s.get_one(Channel, alarm.channel_id).name, "resolved")
    notify(event)
    return True


def check_missed_slots(now: datetime, missed_after: float) -> tuple[int, int]:
    """Raise a missed-slot alarm for each delivery whose slot passed by more than
    ``missed_after`` seconds with nothing published, held, cancelled or failed; resolve
    those whose delivery has since settled. Returns (raised, resolved)."""
    before = now - timedelta(seconds=missed_after)
    raised = resolved = 0
    with db.reading() as s:
        late_posts = list(s.execute(queries.overdue_posts(before)).scalars())
        overdue = s.execute(queries.active_deliveries(late_posts)).all() if late_posts else []
        open_missed = [
            (a.id, a.post_id, a.channel_id)
            for a in s.execute(queries.open_alarms().where(Alarm.kind == AlarmKind.MISSED_SLOT)).scalars()
            if a.post_id is not None  # always: a missed slot is a post's
        ]
        # An empty IN () would make SQLite walk every active delivery: skip the question.
        watched = [post_id for _, post_id, _ in open_missed]
        still_active = (
            {(d.post_id, d.channel_id) for d in s.execute(queries.active_deliveries(watched))} if watched else set()
        )
    for post_id, channel_id, slot, status, detail in overdue:
        late = int((now - slot).total_seconds())
        why = f"{late}s past its slot and still {status}" + (f" ({detail})" if detail else "")
        raised += raise_alarm(AlarmKind.MISSED_SLOT, post_id, channel_id, slot, why, now)
    for alarm_id, post_id, channel_id in open_missed:
        if (post_id, channel_id) not in still_active:
            resolve_alarm(alarm_id, now)
            resolved += 1
    return raised, resolved


def check_empty_queues(now: datetime) -> int:
    """Resolve the open empty-queue alarms whose schedule has a post queued again, or was
    removed. Returns how many were resolved.

    They are raised by the release that found the queue empty (``reconciler.releases``),
    once however many empty slots follow while they stay open.
    """
    with db.reading() as s:
        open_empty = [
            (a.id, a.schedule_id)
            for a in s.execute(queries.open_alarms().where(Alarm.kind == AlarmKind.EMPTY_QUEUE)).scalars()
        ]
        cleared = [
            alarm_id
            for alarm_id, schedule_id in open_empty
            if s.execute(select(QueuedPost.id).where(QueuedPost.schedule_id == schedule_id).limit(1)).first()
            is not None
            or s.execute(
                select(ReleaseSchedule.id).where(
                    ReleaseSchedule.id == schedule_id, ReleaseSchedule.removed_at.is_not(None)
                )
            ).first()
            is not None
        ]
    return sum(resolve_alarm(alarm_id, now) for alarm_id in cleared)

"""Alarms as people read them (§14): open ones, and resolved ones when asked.

Raising and resolving them is the reconciler's (``reconciler.alarms``); this only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import select

from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Alarm, AlarmKind, Channel, Post

AlarmState = Literal["open", "resolved"]


@dataclass(frozen=True)
class AlarmView:
    """One alarm; instants in its post's zone."""

    id: int
    kind: AlarmKind
    #: ``open`` while its condition holds, ``resolved`` once it cleared.
    state: AlarmState
    post_id: int
    channel: str
    slot: datetime
    detail: str
    opened_at: datetime
    resolved_at: datetime | None


def list_alarms(*, include_resolved: bool = False) -> list[AlarmView]:
    """Open alarms (and resolved ones when asked), newest first."""
    query = (
        select(Alarm, Channel.name, Post.zone)
        .join(Channel, Channel.id == Alarm.channel_id)
        .join(Post, Post.id == Alarm.post_id)
        .order_by(Alarm.id.desc())
    )
    if not include_resolved:
        query = query.where(Alarm.open_key.is_not(None))
    with db.reading() as s:
        return [
            AlarmView(
                id=alarm.id,
                kind=alarm.kind,
                state="open" if alarm.open_key else "resolved",
                post_id=alarm.post_id,
                channel=channel,
                slot=shown_in(alarm.slot, tz),
                detail=alarm.detail,
                opened_at=shown_in(alarm.opened_at, tz),
                resolved_at=maybe_shown_in(alarm.resolved_at, tz),
            )
            for alarm, channel, tz in s.execute(query)
        ]

"""The read-back sweep: look for recently confirmed posts on platforms that can be
searched, to record when a read-back first saw each one (§14) and to notice a second
copy – a duplicate that no write of ours could have prevented on a read_back platform.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from core import db, plugins
from core.adapter import PublishContext
from core.errors import HeraldError
from core.ledger.observations import mark_first_seen
from core.models import Alarm, AlarmKind, Delivery
from core.transport import call_platform, http_client
from reconciler import alarms, queries

log = logging.getLogger(__name__)

#: How far back the sweep looks for confirmations not yet seen by a read-back.
WINDOW = timedelta(hours=1)


def _copies(delivery: Delivery, timeout: float) -> int | None:
    """How many copies of the delivery's first part the platform holds; None if unknown."""
    try:
        adapter = plugins.adapter(delivery.channel.platform)
    except HeraldError:
        return None
    if not adapter.can_find or not delivery.parts or not delivery.parts[0].key:
        return None
    part = delivery.parts[0]
    ctx = PublishContext(
        settings=dict(delivery.channel.settings),
        client=http_client(timeout),
        key=part.key or "",
        text=part.text,
    )
    try:
        return len(call_platform(lambda: adapter.find_all(ctx)))
    except HeraldError as exc:
        log.info("read-back of delivery %s failed: %s", delivery.id, exc)
        return None


def sweep(now: datetime, timeout: float) -> tuple[int, int]:
    """Read back recent confirmations and open duplicates. Returns (seen, duplicates raised)."""
    seen = raised = 0
    with db.reading() as s:
        ids = list(s.execute(queries.recent_confirmations(now - WINDOW)).scalars())
        open_duplicates = {
            a.id: a for a in s.execute(queries.open_alarms().where(Alarm.kind == AlarmKind.DUPLICATE)).scalars()
        }
        # Each lookup is skipped when it has nothing to look up: an empty IN () makes
        # SQLite walk the whole table.
        flagged_posts = [a.post_id for a in open_duplicates.values()]
        duplicate_deliveries = {
            (d.post_id, d.channel_id): d
            for d in (
                s.execute(
                    select(Delivery)
                    .where(Delivery.post_id.in_(flagged_posts))
                    .options(selectinload(Delivery.parts), selectinload(Delivery.channel))
                ).scalars()
                if flagged_posts
                else []
            )
        }
        deliveries = (
            s.execute(
                select(Delivery)
                .where(Delivery.id.in_(ids))
                .options(selectinload(Delivery.parts), selectinload(Delivery.channel), selectinload(Delivery.post))
            )
            .scalars()
            .all()
            if ids
            else []
        )
    for delivery in deliveries:
        copies = _copies(delivery, timeout)
        if not copies:
            continue
        mark_first_seen(delivery.id, now)
        seen += 1
        if copies > 1:
            detail = f"a read-back found {copies} copies on {delivery.channel.name}"
            raised += alarms.raise_alarm(
                AlarmKind.DUPLICATE, delivery.post_id, delivery.channel_id, delivery.post.scheduled_at, detail, now
            )
    for alarm in open_duplicates.values():
        flagged = duplicate_deliveries.get((alarm.post_id, alarm.channel_id))
        if flagged is not None and _copies(flagged, timeout) == 1:
            alarms.resolve_alarm(alarm.id, now)
    return seen, raised

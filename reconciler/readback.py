"""The read-back sweep: look for recently confirmed posts on platforms that can be
searched, to record when a read-back first saw each one (§14) and to notice a second
copy – a duplicate that no write of ours could have prevented on a read_back platform.

A platform's search lags behind its writes: a copy accepted while herald's answer was
lost may only become visible seconds or minutes after herald sent (and confirmed) the
next one. So the sweep does not stop at the first sighting: every delivery on a
searchable channel with an attempt in the last ``readback_settle_seconds`` is read back
again on each sweep, whatever its state (published, waiting to retry, held, failed), and
every part of it is looked up, not only the first. The window is counted back from the
*previous* sweep's start, so a delivery is read back at least once more after its window
has passed however long the sweeps take. A sweep's cost is the attempts of that window (one
indexed range) times their parts: bounded by the publish rate, never by the table's size.
The sweep runs in its own loop (``reconciler.tick.run_forever``), apart from the repair pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from core.domain.errors import HeraldError
from core.ledger.observations import mark_first_seen
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, PublishContext
from core.plugins.transport import call_platform, http_client
from core.store import db
from core.store.models import Alarm, AlarmKind, Channel, Delivery
from reconciler import alarms, queries

log = logging.getLogger(__name__)

#: How far back the sweep looks for confirmations not yet seen by a read-back.
WINDOW = timedelta(hours=1)


def _adapter(platform: str) -> Adapter | None:
    try:
        return plugins.adapter(platform)
    except HeraldError:
        return None


def searchable_channels() -> list[int]:
    """The channels whose adapter can look a post up by its key (read_back)."""
    with db.reading() as s:
        rows = s.execute(select(Channel.id, Channel.platform)).all()
    found = []
    for channel_id, platform in rows:
        adapter = _adapter(platform)
        if adapter is not None and adapter.can_find:
            found.append(channel_id)
    return found


def copies_per_part(delivery: Delivery, timeout: float) -> list[int] | None:
    """How many copies of each keyed part of the delivery the platform holds, in part
    order; None if the platform could not be asked or did not answer."""
    adapter = _adapter(delivery.channel.platform)
    if adapter is None or not adapter.can_find:
        return None
    counts = []
    for part in delivery.parts:
        if not part.key:
            continue  # never sent: nothing to look for
        ctx = PublishContext(
            settings=dict(delivery.channel.settings),
            client=http_client(timeout),
            key=part.key,
            text=part.text,
        )
        try:
            counts.append(len(call_platform(partial(adapter.find_all, ctx))))
        except HeraldError as exc:
            log.info("read-back of delivery %s part %s failed: %s", delivery.id, part.idx, exc)
            return None
    return counts


def _duplicate_detail(delivery: Delivery, counts: list[int]) -> str:
    keyed = [part for part in delivery.parts if part.key]
    doubled = [f"{n} copies of part {part.idx + 1}" for part, n in zip(keyed, counts, strict=True) if n > 1]
    return f"a read-back found {', '.join(doubled)} on {delivery.channel.name}"


def sweep(now: datetime, timeout: float, settle: float, previous: datetime | None = None) -> tuple[int, int]:
    """Read back recent deliveries and open duplicates. Returns (seen, duplicates raised).

    Args:
        now: the database's instant.
        timeout: hard timeout of one platform call.
        settle: seconds after an attempt during which its delivery is read back on every
            sweep, seen or not (a late-indexed copy shows up in it).
        previous: when the previous sweep started; the settle window is counted back
            from it (default: ``now``).
    """
    seen = raised = 0
    channels = searchable_channels()
    if not channels:
        return 0, 0
    with db.reading() as s:
        ids = set(s.execute(queries.recent_confirmations(now - WINDOW, channels)).scalars())
        since = min(now, previous or now) - timedelta(seconds=settle)
        ids |= set(s.execute(queries.settling_deliveries(since, channels)).scalars())
        open_duplicates = {
            (a.post_id, a.channel_id): a
            for a in s.execute(queries.open_alarms().where(Alarm.kind == AlarmKind.DUPLICATE)).scalars()
            if a.post_id is not None  # always: a duplicate is a post's
        }
        # Each lookup is skipped when it has nothing to look up: an empty IN () makes
        # SQLite walk the whole table.
        flagged_posts = sorted({post_id for post_id, _ in open_duplicates})
        flagged: Iterable[Delivery] = (
            s.execute(
                select(Delivery)
                .where(Delivery.post_id.in_(flagged_posts))
                .options(selectinload(Delivery.parts), selectinload(Delivery.channel))
            ).scalars()
            if flagged_posts
            else []
        )
        duplicate_deliveries = {(d.post_id, d.channel_id): d for d in flagged}
        deliveries = (
            s.execute(
                select(Delivery)
                .where(Delivery.id.in_(sorted(ids)))
                .options(selectinload(Delivery.parts), selectinload(Delivery.channel), selectinload(Delivery.post))
            )
            .scalars()
            .all()
            if ids
            else []
        )
    for delivery in deliveries:
        counts = copies_per_part(delivery, timeout)
        if not counts or not any(counts):
            continue
        if delivery.first_seen_at is None:
            mark_first_seen(delivery.id, now)
        seen += 1
        already_open = (delivery.post_id, delivery.channel_id) in open_duplicates
        if max(counts) > 1 and not already_open:
            raised += alarms.raise_alarm(
                AlarmKind.DUPLICATE,
                delivery.post_id,
                delivery.channel_id,
                delivery.post.scheduled_at,
                _duplicate_detail(delivery, counts),
                now,
            )
    for key, alarm in open_duplicates.items():
        doubled = duplicate_deliveries.get(key)
        counts = copies_per_part(doubled, timeout) if doubled is not None else None
        if counts and max(counts) == 1:
            alarms.resolve_alarm(alarm.id, now)
    return seen, raised

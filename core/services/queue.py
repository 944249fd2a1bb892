"""Add to queue (§12): a post takes the next posting slot that is free on every one of its
channels.

A slot is free on a channel when no post there (other than a draft) has a delivery that is
not cancelled at exactly that instant; one at or before now is never free. The search
looks :data:`WINDOW` ahead.

Two creates that add to the queue at once must not take the same slot: the channels' rows
are locked (in id order) before the taken slots are read, so the second reads after the
first committed. On SQLite the transaction's ``BEGIN IMMEDIATE`` (``core.store.db``) is
that lock already: one writer at a time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import UserError
from core.domain.posting_slots import PostingSchedule, PostingSlot, free_instants
from core.domain.states import DeliveryStatus, PostStatus
from core.store.models import Channel, Delivery, Post
from core.store.models import PostingSlot as SlotRow

#: How far ahead a free slot is looked for.
WINDOW = timedelta(days=366)


@dataclass(frozen=True)
class QueueSlot:
    """The slot add-to-queue found, and the zone its channel's slots are in."""

    at: datetime
    zone: str


def schedules(s: Session, channel_ids: Collection[int]) -> dict[int, PostingSchedule]:
    """The posting slots of each of ``channel_ids`` that has any."""
    rows = s.execute(select(SlotRow).where(SlotRow.channel_id.in_(channel_ids))).scalars()
    found: dict[int, tuple[str, set[PostingSlot]]] = {}
    for row in rows:
        found.setdefault(row.channel_id, (row.zone, set()))[1].add(PostingSlot(row.weekday, row.local_time))
    return {channel_id: PostingSchedule(zone, frozenset(slots)) for channel_id, (zone, slots) in found.items()}


def taken_instants(s: Session, channel_ids: Collection[int], start: datetime, end: datetime) -> set[datetime]:
    """The instants from ``start`` to ``end`` at which a post that is not a draft has a
    delivery that is not cancelled on one of ``channel_ids``."""
    query = (
        select(Post.scheduled_at)
        .join(Delivery, Delivery.post_id == Post.id)
        .where(
            Delivery.channel_id.in_(channel_ids),
            Delivery.status != DeliveryStatus.CANCELLED,
            Post.status != PostStatus.DRAFT,
            Post.scheduled_at >= start,
            Post.scheduled_at <= end,
        )
        .distinct()
    )
    return set(s.execute(query).scalars())


def free_slots(s: Session, channel_ids: Sequence[int], now: datetime) -> Iterator[datetime]:
    """The instants within :data:`WINDOW` after ``now`` that are a free slot on every one of
    ``channel_ids`` (none when one of them has no slots), earliest first."""
    return _free(s, channel_ids, schedules(s, channel_ids), now)


def _free(
    s: Session, channel_ids: Sequence[int], found: dict[int, PostingSchedule], now: datetime
) -> Iterator[datetime]:
    if any(channel_id not in found for channel_id in channel_ids):
        return iter(())
    taken = taken_instants(s, channel_ids, now, now + WINDOW)
    return free_instants([found[c] for c in channel_ids], taken.__contains__, now, now + WINDOW)


def next_free_slot(s: Session, channel_ids: Sequence[int], now: datetime) -> QueueSlot:
    """The first instant after ``now`` that is a free posting slot on every channel, for a
    post created in the caller's transaction; the channels stay locked until it commits.

    Raises:
        UserError: a channel has no posting slots, or no free one is common to all of them
            within :data:`WINDOW` (naming the channels and the fix).
    """
    ids = list(dict.fromkeys(channel_ids))
    # SQLite ignores FOR UPDATE: its write lock was taken at BEGIN IMMEDIATE. NO KEY UPDATE
    # (not UPDATE) lets other creates insert their deliveries meanwhile: their foreign key
    # takes only a KEY SHARE lock on the channel.
    locked = s.execute(
        select(Channel.id, Channel.name).where(Channel.id.in_(ids)).order_by(Channel.id).with_for_update(key_share=True)
    ).all()
    names = {row.id: row.name for row in locked}
    found = schedules(s, ids)
    bare = [names[c] for c in ids if c not in found]
    if bare:
        first = bare[0]
        raise UserError(
            f"{_channels(bare)} {'has' if len(bare) == 1 else 'have'} no posting slots to queue to: add some with "
            f'`herald channel slots {first} --add "mon-fri 09:00"`, or give the post a slot with --at'
        )
    at = next(_free(s, ids, found, now), None)
    if at is None:
        days = WINDOW.days
        if len(ids) == 1:
            raise UserError(
                f"{_channels(names.values())} has no free posting slot in the next {days} days: add slots with "
                f"`herald channel slots {names[ids[0]]} --add ...`, or give the post a slot with --at"
            )
        raise UserError(
            f"{_channels([names[c] for c in ids])} share no free posting slot in the next {days} days: "
            "add the post to the queue one channel at a time, or give it a slot with --at"
        )
    return QueueSlot(at, found[ids[0]].zone)


def _channels(names: Collection[str]) -> str:
    listed = list(names)
    if len(listed) == 1:
        return f"channel {listed[0]}"
    return f"channels {', '.join(listed[:-1])} and {listed[-1]}"

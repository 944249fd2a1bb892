"""Recurring release schedules as the ledger changes them (§12): the one writer of
``release_schedules``, ``release_queue`` and ``release_slots``.

A release moves the schedule's stamp (``last_release_slot``) with a compare-and-set on
the value it read, so of two releases that read the same stamp – two reconcilers, a timer
and a person – one moves it and the other changes nothing. The winner, in the same
transaction, takes the queue's next draft and schedules it (``authoring.schedule_draft``),
and records what became of every slot it passed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from core.domain.errors import NotFound, UserError
from core.domain.recurrence import Rule, SlotOutcome
from core.domain.states import PostStatus
from core.store.models import Post, QueuedPost, ReleaseSchedule, ReleaseSlot


def insert_schedule(
    s: Session, *, channel_id: int, rule: Rule, catch_up: timedelta, next_slot: datetime, now: datetime
) -> ReleaseSchedule:
    """A new schedule on ``channel_id``; its stamp starts at ``rule.start``, so no slot
    before it is ever released."""
    schedule = ReleaseSchedule(
        channel_id=channel_id,
        rrule=rule.text,
        zone=rule.zone,
        starts_at=rule.start,
        catch_up_seconds=catch_up.total_seconds(),
        last_release_slot=rule.start,
        next_slot_at=next_slot,
        created_at=now,
    )
    s.add(schedule)
    s.flush()
    return schedule


def live_schedule(s: Session, schedule_id: int) -> ReleaseSchedule:
    """The schedule, if it has not been removed.

    Raises:
        NotFound: no such schedule, or it was removed.
    """
    schedule = s.get(ReleaseSchedule, schedule_id)
    if schedule is None or schedule.removed_at is not None:
        raise NotFound(f"no schedule {schedule_id}; `herald schedule list` shows them")
    return schedule


def enqueue(s: Session, schedule_id: int, post_id: int, channel_ids: list[int], now: datetime) -> None:
    """Put a draft at the end of a schedule's queue.

    Raises:
        NotFound: no such schedule.
        UserError: the post goes to other channels than the schedule's one.
    """
    schedule = live_schedule(s, schedule_id)
    if channel_ids != [schedule.channel_id]:
        raise UserError(
            f"schedule {schedule_id} releases on its own channel only: queue a post without other --channel options"
        )
    s.add(QueuedPost(schedule_id=schedule_id, post_id=post_id, queued_at=now))


def take_slot(s: Session, schedule_id: int, read: datetime, stamp: datetime, next_slot: datetime | None) -> bool:
    """Move the stamp from ``read`` to ``stamp`` (compare-and-set). Returns whether this
    release moved it: False when another one did first, or the schedule was removed."""
    moved = s.execute(
        update(ReleaseSchedule)
        .where(
            ReleaseSchedule.id == schedule_id,
            ReleaseSchedule.last_release_slot == read,
            ReleaseSchedule.removed_at.is_(None),
        )
        .values(last_release_slot=stamp, next_slot_at=next_slot)
        .returning(ReleaseSchedule.id)
    ).scalar()
    return moved is not None


def next_queued(s: Session, schedule_id: int) -> Post | None:
    """Take the first post of the queue that is still a draft (locked), and drop from the
    queue the ones before it that are no longer drafts (cancelled, or scheduled by hand)."""
    entries = s.execute(
        select(QueuedPost).where(QueuedPost.schedule_id == schedule_id).order_by(QueuedPost.id)
    ).scalars()
    for entry in entries:
        post = s.get(Post, entry.post_id, with_for_update=True)
        s.execute(delete(QueuedPost).where(QueuedPost.id == entry.id))
        if post is not None and post.status is PostStatus.DRAFT:
            return post
    return None


def record_slot(
    s: Session,
    schedule_id: int,
    slot: datetime,
    outcome: SlotOutcome,
    now: datetime,
    *,
    post_id: int | None = None,
    released_at: datetime | None = None,
    through: datetime | None = None,
    slots: int = 1,
) -> None:
    """What became of a slot (or, skipped, of a run of slots from ``slot`` to ``through``)."""
    s.add(
        ReleaseSlot(
            schedule_id=schedule_id,
            slot=slot,
            outcome=outcome,
            post_id=post_id,
            released_at=released_at,
            through=through,
            slots=slots,
            recorded_at=now,
        )
    )


def end_schedule(s: Session, schedule_id: int, now: datetime) -> list[int]:
    """Remove a schedule: no slot is released again; its history stays.

    Returns:
        The posts that were queued: they stay drafts.

    Raises:
        NotFound: no such schedule, or it was removed already.
    """
    live_schedule(s, schedule_id)
    queued = list(
        s.execute(
            select(QueuedPost.post_id).where(QueuedPost.schedule_id == schedule_id).order_by(QueuedPost.id)
        ).scalars()
    )
    s.execute(delete(QueuedPost).where(QueuedPost.schedule_id == schedule_id))
    s.execute(
        update(ReleaseSchedule).where(ReleaseSchedule.id == schedule_id).values(removed_at=now, next_slot_at=None)
    )
    return queued


def end_channel_schedules(s: Session, channel_id: int, now: datetime) -> list[int]:
    """Remove every schedule of a channel being removed. Returns their ids."""
    ids = list(
        s.execute(
            select(ReleaseSchedule.id).where(
                ReleaseSchedule.channel_id == channel_id, ReleaseSchedule.removed_at.is_(None)
            )
        ).scalars()
    )
    for schedule_id in ids:
        end_schedule(s, schedule_id, now)
    return ids

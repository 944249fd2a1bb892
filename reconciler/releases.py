"""Recurring releases with catch-up (§12): one release, whoever calls it.

:func:`release` is the one way a schedule's slot is released: by its timer (the rq job
``release-<id>``, :func:`release_job`, armed for each next slot), by the reconciler's
repair pass for every schedule with a slot due (so a lost timer only makes a release late
by a tick), and by a person (`herald schedule release`).

Of the slots that came since the schedule's stamp, the most recent inside the catch-up
window is released; older ones are recorded skipped, never flooded out (see
``core.domain.recurrence.plan_release``). The stamp moves by a compare-and-set on the
value read (``core.ledger.schedules.take_slot``), so two reconcilers, a timer and a
person at the same moment release once. A slot with nothing queued is recorded empty and
raises one alarm, which stays open (not raised again) until a post is queued.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.domain.recurrence import Rule, SlotOutcome, plan_release
from core.ledger import authoring
from core.ledger import schedules as ledger
from core.runtime import job as publish
from core.runtime.arming import arm, arm_release
from core.runtime.clock import Clock
from core.store import db
from core.store.models import AlarmKind, ReleaseSchedule
from reconciler import alarms, queries

log = logging.getLogger(__name__)


class ReleaseResult(enum.StrEnum):
    #: A slot came and its queued post was scheduled for it.
    RELEASED = "released"
    #: A slot came with nothing queued: recorded empty, alarm raised (once).
    EMPTY = "empty"
    #: Slots came, all older than the catch-up window: recorded skipped.
    SKIPPED = "skipped"
    #: No slot came since the last release.
    NOTHING_DUE = "nothing_due"
    #: Another release moved the stamp first: this one changed nothing.
    LOST = "lost"
    #: The schedule was removed, or its rule has no slot left.
    ENDED = "ended"


@dataclass(frozen=True)
class Release:
    """What one release did; instants in UTC."""

    schedule_id: int
    result: ReleaseResult
    #: The slot released (or found empty).
    slot: datetime | None = None
    #: The post released for it.
    post_id: int | None = None
    #: When that post goes out: the slot, or the release's now if the slot had passed.
    at: datetime | None = None
    #: Missed slots recorded skipped by this release.
    skipped: int = 0
    #: The schedule's next slot after this release.
    next_slot: datetime | None = None


@dataclass(frozen=True)
class _Read:
    channel_id: int
    rule: Rule
    window: timedelta
    stamp: datetime
    next_slot: datetime | None
    removed: bool


def _read(schedule_id: int) -> _Read | None:
    with db.reading() as s:
        row = s.get(ReleaseSchedule, schedule_id)
        if row is None:
            return None
        return _Read(
            channel_id=row.channel_id,
            rule=Rule(row.rrule, row.zone, row.starts_at),
            window=timedelta(seconds=row.catch_up_seconds),
            stamp=row.last_release_slot,
            next_slot=row.next_slot_at,
            removed=row.removed_at is not None,
        )


def release(schedule_id: int, clock: Clock | None = None) -> Release | None:
    """Release the schedule's due slot, if one came (see the module's docstring), and arm
    its timer for the next one.

    Args:
        clock: where now comes from; the publish job's (the database's, or a test's).

    Returns:
        What it did, or None when there is no such schedule.
    """
    clock = clock or publish.clock()
    read = _read(schedule_id)
    if read is None:
        return None
    if read.removed:
        return Release(schedule_id, ReleaseResult.ENDED)
    now = clock.now()
    plan = plan_release(read.rule, read.stamp, now, read.window)
    if plan is None:
        arm_release(schedule_id, clock)
        result = ReleaseResult.NOTHING_DUE if read.next_slot is not None else ReleaseResult.ENDED
        return Release(schedule_id, result, next_slot=read.next_slot)
    post_id: int | None = None
    at: datetime | None = None
    with db.transaction() as s:
        if not ledger.take_slot(s, schedule_id, read.stamp, plan.stamp, plan.next_slot):
            return Release(schedule_id, ReleaseResult.LOST)
        if plan.skipped is not None:
            ledger.record_slot(
                s,
                schedule_id,
                plan.skipped.first,
                SlotOutcome.SKIPPED,
                now,
                through=plan.skipped.last,
                slots=plan.skipped.count,
            )
        if plan.taken is not None:
            post = ledger.next_queued(s, schedule_id)
            if post is not None:
                at = max(plan.taken, now)
                authoring.schedule_draft(s, post.id, at, read.rule.zone, now)
                post_id = post.id
                ledger.record_slot(
                    s, schedule_id, plan.taken, SlotOutcome.RELEASED, now, post_id=post_id, released_at=at
                )
            else:
                ledger.record_slot(s, schedule_id, plan.taken, SlotOutcome.EMPTY, now)
    skipped = plan.skipped.count if plan.skipped is not None else 0
    if post_id is not None:
        arm(post_id, clock)
        result = ReleaseResult.RELEASED
        log.info("schedule %s: slot %s released post %s (%s skipped)", schedule_id, plan.taken, post_id, skipped)
    elif plan.taken is not None:
        result = ReleaseResult.EMPTY
        alarms.raise_alarm(
            AlarmKind.EMPTY_QUEUE,
            None,
            read.channel_id,
            plan.taken,
            f"nothing queued for the slot; queue posts with `herald schedule queue {schedule_id} --text ...`",
            now,
            schedule_id=schedule_id,
        )
        log.info("schedule %s: slot %s came with nothing queued", schedule_id, plan.taken)
    else:
        result = ReleaseResult.SKIPPED
        log.info("schedule %s: %s missed slot(s) older than the catch-up window skipped", schedule_id, skipped)
    arm_release(schedule_id, clock)
    return Release(schedule_id, result, plan.taken, post_id, at, skipped, plan.next_slot)


def release_job(schedule_id: int) -> Release | None:
    """The schedule's timer (rq job ``release-<id>``): release its slot; the worker arms
    the next one after (``core.runtime.worker``)."""
    return release(schedule_id)


def release_due(horizon: datetime, clock: Clock | None = None) -> int:
    """The repair pass's share: release every schedule whose next slot comes before
    ``horizon`` (one not due yet gets its timer armed). Returns how many released a post."""
    with db.reading() as s:
        due = list(s.execute(queries.due_schedules(horizon)).scalars())
    done = [release(schedule_id, clock) for schedule_id in due]
    return sum(d is not None and d.result is ReleaseResult.RELEASED for d in done)

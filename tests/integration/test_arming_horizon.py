"""The arming horizon (§7): only posts due within it hold a job in Redis; the reconciler
arms the others as they enter it, and a move carries a post in or out of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rq.job import Job, JobStatus

from core.config import Settings
from core.runtime.arming import PUBLISH_FUNC, job_id, job_options
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.queue import post_queue
from core.services.posts import create_post, reschedule_post
from core.store import db
from reconciler.tick import repair

pytestmark = pytest.mark.integration

HOUR = timedelta(hours=1)


def armed_for(post_id: int) -> datetime | None:
    """The instant the post's job is scheduled for, or None when it has no scheduled job."""
    queue = post_queue()
    if not Job.exists(job_id(post_id), connection=queue.connection):
        return None
    job = Job.fetch(job_id(post_id), connection=queue.connection)
    assert job.get_status() is JobStatus.SCHEDULED
    score = queue.connection.zscore(queue.scheduled_job_registry.key, job.id)
    assert score is not None
    return datetime.fromtimestamp(score, UTC)


def db_now() -> datetime:
    return DatabaseClock(db.engine()).now()


def test_a_post_beyond_the_horizon_holds_no_job_and_one_within_it_does(
    herald: Settings, channels: dict[str, str]
) -> None:
    assert herald.arming_horizon == 3600
    soon = create_post(channels=[channels["native"]], parts=["soon"], at=db_now() + timedelta(minutes=50))
    later = create_post(channels=[channels["native"]], parts=["later"], at=db_now() + timedelta(days=90))
    assert armed_for(soon) is not None
    assert armed_for(later) is None
    assert post_queue().scheduled_job_registry.count == 1


def test_moving_a_post_out_of_the_horizon_drops_its_job_and_back_in_arms_it(
    herald: Settings, channels: dict[str, str]
) -> None:
    post = create_post(channels=[channels["native"]], parts=["moved"], at=db_now() + timedelta(minutes=30))
    assert armed_for(post) is not None
    reschedule_post(post, db_now() + timedelta(days=2))
    assert armed_for(post) is None
    slot = db_now() + timedelta(minutes=20)
    reschedule_post(post, slot)
    armed = armed_for(post)
    assert armed is not None and abs((armed - slot).total_seconds()) < 1


def test_the_reconciler_arms_a_post_for_its_slot_as_the_slot_enters_the_horizon(
    herald: Settings, channels: dict[str, str]
) -> None:
    start = db_now()
    slot = start + HOUR + timedelta(minutes=5)
    post = create_post(channels=[channels["native"]], parts=["entering"], at=slot)
    clock = ManualClock(start)
    repair(clock)
    assert armed_for(post) is None  # 65 min away: outside the hour
    clock.advance(4 * 60)
    repair(clock)
    assert armed_for(post) is None  # 61 min away
    clock.advance(2 * 60)
    report = repair(clock)
    armed = armed_for(post)
    # Armed 59 minutes ahead, for the slot itself: on time, not at a tick.
    assert report.armed == 1
    assert armed is not None and abs((armed - slot).total_seconds()) < 1


def test_a_first_pass_arms_everything_within_the_horizon_so_losing_redis_loses_nothing(
    herald: Settings, channels: dict[str, str]
) -> None:
    start = db_now()
    within = [
        create_post(channels=[channels["native"]], parts=[f"within {m}"], at=start + timedelta(minutes=m))
        for m in (10, 30, 55)
    ]
    beyond = create_post(channels=[channels["native"]], parts=["beyond"], at=start + timedelta(hours=3))
    post_queue().connection.flushdb()
    assert all(armed_for(p) is None for p in within)
    report = repair(ManualClock(start))
    assert report.armed == 3
    assert all(armed_for(p) is not None for p in within)
    assert armed_for(beyond) is None


def test_a_pass_after_an_outage_longer_than_the_horizon_arms_what_is_now_within_it(
    herald: Settings, channels: dict[str, str]
) -> None:
    start = db_now()
    clock = ManualClock(start)
    repair(clock)
    post = create_post(channels=[channels["native"]], parts=["after outage"], at=start + 3 * HOUR)
    clock.advance(150 * 60)  # the reconciler was down for 2.5 h
    repair(clock)
    assert armed_for(post) is not None


def test_a_post_entering_the_horizon_that_already_holds_a_job_keeps_one_job_at_its_slot(
    herald: Settings, channels: dict[str, str]
) -> None:
    start = db_now()
    slot = start + HOUR + timedelta(minutes=5)
    post = create_post(channels=[channels["native"]], parts=["already armed"], at=slot)
    queue = post_queue()
    queue.schedule_job(queue.create_job(PUBLISH_FUNC, **job_options(post)), start + 3 * HOUR)  # a stray job
    clock = ManualClock(start)
    repair(clock)
    clock.advance(6 * 60)
    assert repair(clock).armed == 1
    armed = armed_for(post)
    assert armed is not None and abs((armed - slot).total_seconds()) < 1
    assert queue.scheduled_job_registry.get_job_ids() == [job_id(post)]

"""Arming: the only way a post's job is created (§7).

A post has at most one job, id ``post-<id>``. The time it is armed for comes from the
row (:func:`due_at`), never from the caller, so every path that arms agrees.

* scheduled job exists → moved to the new time (one ZADD on rq's scheduled registry);
* queued → left alone (the job reads the row and re-arms itself if it is early);
* running → never cut short: the worker re-arms after it ends (``core.runtime.worker``),
  unless the row says no live job can be working on it: the lease is stale (its
  worker died mid-claim), or the post is due and nobody holds its lease (its worker
  died after taking the job from the queue and before claiming, or after releasing
  and before re-arming – rq only notices such a job after minutes);
* finished, failed or gone → a fresh job.

Only a post due within the arming horizon (``HERALD_ARMING_HORIZON``, an hour by default)
holds a job: one due later has none, and one moved out of the horizon loses its job. The
reconciler arms posts as they enter it, so Redis holds the posts due soon, not everything
scheduled for next year, and losing Redis loses nothing.

rq re-enqueues an id it already knows by pushing it twice, so the check and the create
happen under one short Redis lock per post. rq's ``Retry`` stays off: re-driving is
the claim's job, not rq's.

A recurring schedule (§12) has one timer the same way, id ``release-<id>``, armed by
:func:`arm_release` for its next slot (less ``RELEASE_LEAD``), read from its row; it runs
the schedule's release (``reconciler.releases``), and the worker re-arms it after.
"""

from __future__ import annotations

import calendar
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.scripts import _build_hset_args, get_unique_schedule_script
from sqlalchemy import Connection, select

from core.config import settings
from core.domain.recurrence import RELEASE_LEAD
from core.domain.states import DeliveryStatus, PostStatus
from core.ledger import statements as sql
from core.runtime import lease
from core.runtime.clock import Clock, DatabaseClock
from core.runtime.queue import post_queue
from core.store import db
from core.store.models import ReleaseSchedule

log = logging.getLogger(__name__)

#: The job's function, as rq stores it.
PUBLISH_FUNC = "core.runtime.job.publish_post"

#: Longest a post job may run, all parts and retries of one claim included (rq's timeout).
JOB_TIMEOUT = 3600

#: A schedule's release timer's function, as rq stores it.
RELEASE_FUNC = "reconciler.releases.release_job"


def job_id(post_id: int) -> str:
    return f"post-{post_id}"


def job_options(post_id: int) -> dict[str, Any]:
    """How a post's job is made, wherever one is made (arming; the benchmarks' bulk enqueue)."""
    return {
        "args": (post_id,),
        "job_id": job_id(post_id),
        "timeout": JOB_TIMEOUT,
        "result_ttl": 0,
        "failure_ttl": 7 * 24 * 3600,
    }


@dataclass(frozen=True)
class Timing:
    """What arming reads of a post: its state, lease and times, and its deliveries' times."""

    status: PostStatus
    scheduled_at: datetime
    not_before: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    #: Set for a post ``herald import`` recorded: it never needs a job.
    imported_at: datetime | None
    #: (status, next_attempt_at) of each delivery; read only when the post is active.
    deliveries: tuple[tuple[DeliveryStatus, datetime | None], ...] = ()

    @property
    def active(self) -> bool:
        # An imported post published elsewhere: its slot is history, never a time to send.
        return self.imported_at is None and self.status in (PostStatus.SCHEDULED, PostStatus.PUBLISHING)


def read_timing(conn: Connection, post_id: int) -> Timing | None:
    """The post's timing in one query, and its deliveries' in a second only when it is active."""
    row = conn.execute(sql.POST_TIMING, {"b_post": post_id}).one_or_none()
    if row is None:
        return None
    timing = Timing(**row._mapping)
    if not timing.active:
        return timing  # a done post – every post its own job just published – costs one query
    deliveries = conn.execute(sql.DELIVERY_TIMES, {"b_post": post_id})
    return replace(timing, deliveries=tuple((d.status, d.next_attempt_at) for d in deliveries))


def due_at(post: Timing, now: datetime, grace: float) -> datetime | None:
    """When the post next needs a job to run, or None when nothing is left to do."""
    if not post.active:
        return None
    if post.lease_owner is not None and post.lease_expires_at is not None:
        # Someone holds it. If they die, their lease goes stale at this instant.
        stale = lease.stale_at(post.lease_expires_at, grace)
        if stale > now:
            return stale
    # Admission's Wait, without its holds: an embargo is a floor under every first send.
    # Holds are decided by the claim, which records them; arming only picks the time.
    floor = max(post.scheduled_at, post.not_before or post.scheduled_at)
    times: list[datetime] = []
    for status, next_attempt_at in post.deliveries:
        if status is DeliveryStatus.SENDING:
            times.append(now)  # its attempt died with the lease: re-drive
        elif status is DeliveryStatus.PENDING:
            times.append(max(floor, next_attempt_at or floor))
        elif status is DeliveryStatus.RETRY_WAIT and next_attempt_at is not None:
            times.append(next_attempt_at)
    return min(times) if times else None


def arm(post_id: int, clock: Clock | None = None) -> datetime | None:
    """Make sure the post's one job exists for the time its row asks for.

    Returns:
        The instant the job is armed for, or None when the row asks for nothing. A Redis
        failure is logged and swallowed: the row is the truth and the reconciler re-arms
        from it, so no caller ever loses a post because the queue was down.
    """
    cfg = settings()
    clock = clock or DatabaseClock(db.engine())
    with db.peeking() as conn:
        post = read_timing(conn, post_id)
    if post is None:
        return None
    now = clock.now()
    when = due_at(post, now, cfg.grace_seconds)
    if when is not None and when > now + timedelta(seconds=cfg.arming_horizon):
        when = None  # beyond the horizon: no job yet; the reconciler arms it as it enters (§7)
    abandoned = lease.is_stale(post.lease_expires_at, now, cfg.grace_seconds) or (
        post.lease_owner is None and when is not None and when <= now
    )
    try:
        return _arm_job(post_id, when, now, abandoned)
    except RedisError as exc:
        log.warning("post %s: could not arm its job (%s); the reconciler will", post_id, exc)
        return None


def arm_entering(post_ids: Collection[int], clock: Clock | None = None) -> int:
    """Arm the posts whose slot has just entered the horizon (the reconciler's pass), at the
    cost of one read of their rows and one round trip to Redis for them all, instead of
    :func:`arm`'s lock and look-ups per post: such a post holds no job yet. One that does,
    or whose row asks for anything but a timer within the horizon, goes through
    :func:`arm`. Returns how many were armed.

    The timers are made by rq's own create-if-absent (the Lua script of ``schedule_job(...,
    unique=True)``), each atomic on its own, all sent in one pipeline. A create racing a
    move of the same post is harmless: a move's :func:`arm` that comes first makes the
    create find its job and re-arm through :func:`arm`; one that comes after replaces the
    job with its own time.
    """
    if not post_ids:
        return 0
    cfg = settings()
    clock = clock or DatabaseClock(db.engine())
    with db.peeking() as conn:
        rows = {r.id: r for r in conn.execute(sql.POSTS_TIMING, {"b_posts": list(post_ids)})}
        times: dict[int, list[tuple[DeliveryStatus, datetime | None]]] = {}
        for d in conn.execute(sql.DELIVERIES_TIMES, {"b_posts": list(rows)}):
            times.setdefault(d.post_id, []).append((d.status, d.next_attempt_at))
    now = clock.now()
    horizon = now + timedelta(seconds=cfg.arming_horizon)
    armed = 0
    timers: dict[int, datetime] = {}
    for post_id, row in rows.items():
        fields = {k: v for k, v in row._mapping.items() if k != "id"}
        timing = Timing(**fields, deliveries=tuple(times.get(post_id, ())))
        when = due_at(timing, now, cfg.grace_seconds)
        if when is None or when <= now or when > horizon or timing.lease_owner is not None:
            armed += arm(post_id, clock) is not None
        else:
            timers[post_id] = when
    try:
        held = _create_timers(post_queue(), timers)
    except RedisError as exc:
        log.warning("posts %s: could not arm their jobs (%s); the reconciler will", sorted(timers), exc)
        return armed
    for post_id in held:
        armed += arm(post_id, clock) is not None
    return armed + len(timers) - len(held)


def _create_timers(queue: Queue, timers: dict[int, datetime]) -> list[int]:
    """Create each post's job, scheduled for its instant, where it has none: rq's atomic
    create-if-absent, one per post, all in one pipeline. Returns the posts that held a job
    already (nothing of theirs was written)."""
    if not timers:
        return []
    redis = queue.connection
    script = get_unique_schedule_script(redis)  # type: ignore[no-untyped-call]
    registry = queue.scheduled_job_registry.key
    with redis.pipeline(transaction=False) as pipe:
        for post_id, when in timers.items():
            job = queue.create_job(PUBLISH_FUNC, retry=None, **job_options(post_id))
            job.enqueue_at_front = True  # as :func:`_schedule` makes every timer
            job._status = JobStatus.SCHEDULED  # as schedule_job(unique=True) does, before the hash is built
            ttl = job.ttl if job.ttl is not None else -1
            args = [job.id, ttl, calendar.timegm(when.utctimetuple()), queue.key, *_build_hset_args(job)]  # type: ignore[no-untyped-call]
            script(keys=[job.key, registry, queue.redis_queues_keys], args=args, client=pipe)
        created = pipe.execute()
    return [post_id for post_id, made in zip(timers, created, strict=True) if made == 0]


def _arm_job(post_id: int, when: datetime | None, now: datetime, abandoned: bool) -> datetime | None:
    def create(queue: Queue) -> Job:
        return queue.create_job(PUBLISH_FUNC, retry=None, **job_options(post_id))

    return _arm_timer(job_id(post_id), f"herald:arm:{post_id}", create, when, now, abandoned)


def release_job_id(schedule_id: int) -> str:
    return f"release-{schedule_id}"


def arm_release(schedule_id: int, clock: Clock | None = None) -> datetime | None:
    """Make sure the schedule's one timer exists for its next slot, as its row says
    (none once the schedule ended or was removed).

    Returns:
        The instant the timer is armed for, or None. A Redis failure is logged and
        swallowed: the reconciler releases due schedules from the rows on every tick.
    """
    with db.reading() as s:
        next_slot = s.execute(
            select(ReleaseSchedule.next_slot_at).where(ReleaseSchedule.id == schedule_id)
        ).scalar_one_or_none()
    now = (clock or DatabaseClock(db.engine())).now()
    when = None if next_slot is None else next_slot - RELEASE_LEAD

    def create(queue: Queue) -> Job:
        return queue.create_job(
            RELEASE_FUNC,
            args=(schedule_id,),
            job_id=release_job_id(schedule_id),
            timeout=300,
            result_ttl=0,
            failure_ttl=7 * 24 * 3600,
            retry=None,
        )

    try:
        return _arm_timer(release_job_id(schedule_id), f"herald:arm:release-{schedule_id}", create, when, now, False)
    except RedisError as exc:
        log.warning("schedule %s: could not arm its release timer (%s); the reconciler will", schedule_id, exc)
        return None


def _arm_timer(
    key: str, lock: str, create: Callable[[Queue], Job], when: datetime | None, now: datetime, abandoned: bool
) -> datetime | None:
    """Make sure job ``key`` exists for ``when`` (see the module's docstring); ``create``
    makes it where none lives."""
    queue = post_queue()
    redis = queue.connection
    if when is None and not Job.exists(key, connection=redis):
        # Nothing to cancel, and nothing to create: one atomic read decides it, as if
        # this ran under the lock just before any concurrent arm.
        return None
    with redis.lock(lock, timeout=10, blocking_timeout=10):
        try:
            job: Job | None = Job.fetch(key, connection=redis)
        except NoSuchJobError:
            job = None
        status = job.get_status(refresh=False) if job is not None else None
        if when is None:
            if status in (JobStatus.SCHEDULED, JobStatus.QUEUED) and job is not None:
                job.cancel()
                job.delete()
            return None
        if job is not None and status is JobStatus.SCHEDULED:
            if when <= now:
                queue.scheduled_job_registry.remove(job)
                queue.enqueue_job(job)
            else:
                _schedule(queue, job, when)  # ZADD: the same member at its new time
            return when
        # rq moves a job out of its queue before it marks it started: a worker that died
        # in between leaves it 'queued' in no queue at all.
        if job is not None and status is JobStatus.QUEUED and not (abandoned and _out_of_queue(queue, job)):
            return when
        # A second job beside a live one is harmless – only one claim wins – so a
        # running job that may be abandoned is not waited for.
        if job is not None and status is JobStatus.STARTED and not abandoned:
            return when
        if job is not None:
            job.delete()
        job = create(queue)
        if when <= now:
            queue.enqueue_job(job)
        else:
            _schedule(queue, job, when)
        return when


def _schedule(queue: Queue, job: Job, when: datetime) -> None:
    """Schedule ``job`` for ``when``; when its time comes, rq's scheduler puts it at the
    front of the queue. A job armed for an instant is due then, while jobs already queued
    are late – a backlog after an outage – so a post on time, a retry or a paced turn
    (``core.runtime.pacing``) is not held up behind them."""
    job.enqueue_at_front = True
    queue.schedule_job(job, when)


def _out_of_queue(queue: Queue, job: Job) -> bool:
    return queue.connection.lpos(queue.key, job.id) is None

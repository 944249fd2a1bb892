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

rq re-enqueues an id it already knows by pushing it twice, so the check and the create
happen under one short Redis lock per post. rq's ``Retry`` stays off: re-driving is
the claim's job, not rq's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from sqlalchemy import Connection

from core.config import settings
from core.domain.states import DeliveryStatus, PostStatus
from core.ledger import statements as sql
from core.runtime import lease
from core.runtime.clock import Clock, DatabaseClock
from core.runtime.queue import post_queue
from core.store import db

log = logging.getLogger(__name__)

#: The job's function, as rq stores it.
PUBLISH_FUNC = "core.runtime.job.publish_post"

#: Longest a post job may run, all parts and retries of one claim included (rq's timeout).
JOB_TIMEOUT = 3600


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
    #: (status, next_attempt_at) of each delivery; read only when the post is active.
    deliveries: tuple[tuple[DeliveryStatus, datetime | None], ...] = ()

    @property
    def active(self) -> bool:
        return self.status in (PostStatus.SCHEDULED, PostStatus.PUBLISHING)


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
    abandoned = lease.is_stale(post.lease_expires_at, now, cfg.grace_seconds) or (
        post.lease_owner is None and when is not None and when <= now
    )
    try:
        return _arm_job(post_id, when, now, abandoned)
    except RedisError as exc:
        log.warning("post %s: could not arm its job (%s); the reconciler will", post_id, exc)
        return None


def _arm_job(post_id: int, when: datetime | None, now: datetime, abandoned: bool) -> datetime | None:
    queue = post_queue()
    redis = queue.connection
    if when is None and not Job.exists(job_id(post_id), connection=redis):
        # Nothing to cancel, and nothing to create: one atomic read decides it, as if
        # this ran under the lock just before any concurrent arm.
        return None
    with redis.lock(f"herald:arm:{post_id}", timeout=10, blocking_timeout=10):
        try:
            job: Job | None = Job.fetch(job_id(post_id), connection=redis)
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
        job = queue.create_job(PUBLISH_FUNC, retry=None, **job_options(post_id))
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

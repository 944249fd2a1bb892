"""Minimal reproductions of what the chaos runs found, as ordinary integration tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rq.job import Job, JobStatus

from core.runtime.arming import job_id
from core.runtime.queue import post_queue
from core.services.posts import create_post
from reconciler.tick import tick
from tests.integration.conftest import Sandbox, drain, post_json

pytestmark = pytest.mark.integration


def _taken_by_a_worker_that_died(post_id: int) -> None:
    """What a worker SIGKILLed right after dequeuing leaves: a STARTED job, no claim."""
    queue = post_queue()
    job = Job.fetch(job_id(post_id), connection=queue.connection)
    queue.remove(job)
    job.set_status(JobStatus.STARTED)  # what arming reads; rq's own cleanup comes minutes later


def test_a_post_whose_worker_died_between_dequeue_and_claim_is_redriven_by_the_next_tick(
    channels: dict[str, str], platform: Sandbox
) -> None:
    # Found by the sigkill scenario (history: a worker killed at the post's slot; the post
    # stayed 'scheduled' with fence 0 for the whole 120 s settle window): arming left a
    # STARTED job alone unless the post's lease was stale, and an unclaimed post has no
    # lease, so nothing re-drove it until rq's own cleanup minutes later.
    post_id = create_post(channels=[channels["none"]], parts=["dequeued, then the worker died"])
    _taken_by_a_worker_that_died(post_id)
    assert post_queue().count == 0

    tick()
    drain()

    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts("none")) == 1


def test_a_post_whose_worker_died_between_taking_the_job_and_starting_it_is_redriven(
    channels: dict[str, str], platform: Sandbox
) -> None:
    # Found by the sigkill scenario after the fix above (history: seed 20260, post 1 stayed
    # 'scheduled', fence 0): rq moves a job id out of the queue (LMOVE) before it marks
    # the job started, so a worker killed in between leaves a 'queued' job in no queue,
    # and arming left every 'queued' job alone.
    post_id = create_post(channels=[channels["native"]], parts=["taken, then the worker died"])
    queue = post_queue()
    queue.connection.lrem(queue.key, 0, job_id(post_id))  # the LMOVE, without the worker
    assert Job.fetch(job_id(post_id), connection=queue.connection).get_status() == JobStatus.QUEUED

    tick()
    drain()

    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts("native")) == 1


def test_a_running_job_waiting_for_its_slot_is_left_alone(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["early"], at=datetime.now(UTC) + timedelta(seconds=30))
    queue = post_queue()
    _taken_by_a_worker_that_died(post_id)  # as a live job sleeping out the last second looks

    tick()

    assert queue.count == 0
    assert Job.fetch(job_id(post_id), connection=queue.connection).get_status() == JobStatus.STARTED

"""The publish path end to end: real SQL, real Redis, real HTTP to the sandbox platform."""

from __future__ import annotations

import logging
import os
import signal
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rq.job import Job
from sqlalchemy import func, select, text

from core import ledger
from core.config import Settings
from core.domain.errors import FencedOut
from core.plugins.adapter import Published
from core.runtime.arming import arm, job_id, job_options
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.queue import post_queue
from core.runtime.worker import PUBLISH_FUNC
from core.services.channels import add_channel
from core.services.controls import set_account_status, set_emergency_stop
from core.services.posts import approve_post, cancel_post, create_post, reschedule_post
from core.store import db
from core.store.models import AccountStatus, Publication
from reconciler.tick import tick
from tests.integration.conftest import Sandbox, Workers, channels_json, drain, post_json, wait_until

pytestmark = pytest.mark.integration


def now() -> datetime:
    return datetime.now(UTC)


def by_channel(post_id: int) -> dict[str, dict[str, Any]]:
    return {d["channel"]: d for d in post_json(post_id)["deliveries"]}


def status_is(post_id: int, *statuses: str) -> dict[str, Any] | None:
    info = post_json(post_id)
    return info if info["status"] in statuses else None


def test_post_scheduled_two_seconds_ahead_is_published_once_on_each_strategy(
    channels: dict[str, str], platform: Sandbox, workers: Workers
) -> None:
    workers.start()
    slot = now() + timedelta(seconds=2)
    post_id = create_post(channels=list(channels.values()), parts=["hello, three platforms"], at=slot)

    info = wait_until(lambda: status_is(post_id, "published"), timeout=30)

    accepted = platform.posts()
    assert sorted(p["strategy"] for p in accepted) == ["native", "none", "readback"]
    ids = {p["id"] for p in accepted}
    for delivery in info["deliveries"]:
        assert delivery["status"] == "published"
        assert delivery["platform_id"] in ids
        assert delivery["url"].endswith(f"/p/{delivery['platform_id']}")
    # Never before the slot: the platform's own record says when each copy arrived.
    assert min(datetime.fromisoformat(p["created_at"]) for p in accepted) >= slot


def test_arming_twice_and_enqueuing_twice_yield_one_platform_post(
    channels: dict[str, str], platform: Sandbox, workers: Workers
) -> None:
    post_id = create_post(channels=[channels["native"], channels["none"]], parts=["only once"])
    arm(post_id)
    arm(post_id)
    queue = post_queue()
    assert queue.job_ids == [job_id(post_id)]
    # Enqueue the same job id behind arming's back: rq pushes it a second time.
    queue.enqueue_job(Job.fetch(job_id(post_id), connection=queue.connection))
    assert queue.count == 2

    # Two burst workers race for the two copies and exit once the queue is empty: both
    # copies have been taken and run (or found gone) when both have exited.
    racing = [workers.start("--burst", "--no-scheduler") for _ in range(2)]
    for proc in racing:
        assert proc.wait(timeout=60) == 0, workers.output()

    assert status_is(post_id, "published")
    assert queue.count == 0
    assert len(platform.posts("native")) == 1
    assert len(platform.posts("none")) == 1


def test_rescheduling_a_scheduled_post_replaces_its_job(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["later"], at=now() + timedelta(minutes=5))
    registry = post_queue().scheduled_job_registry
    assert registry.get_job_ids() == [job_id(post_id)]
    first = registry.get_scheduled_time(job_id(post_id))

    reschedule_post(post_id, now() + timedelta(minutes=50))

    assert registry.get_job_ids() == [job_id(post_id)]
    moved = registry.get_scheduled_time(job_id(post_id))
    assert moved - first > timedelta(minutes=44)
    assert post_queue().count == 0


def test_a_cancelled_post_sends_nothing_even_when_a_job_for_it_runs_after_its_slot(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = create_post(channels=list(channels.values()), parts=["never"], at=clock.now() + timedelta(seconds=1))
    cancel_post(post_id)
    assert post_queue().scheduled_job_registry.get_job_ids() == []  # its timer is gone

    clock.advance(60)  # the slot has passed
    assert tick(clock).armed == 0  # the reconciler does not revive it
    # A job that survived the cancel (enqueued behind arming's back) runs anyway.
    post_queue().enqueue_job(post_queue().create_job(PUBLISH_FUNC, **job_options(post_id)))
    drain()

    assert platform.posts() == []
    assert post_json(post_id)["status"] == "cancelled"
    assert post_json(post_id)["attempts"] == []


@pytest.mark.parametrize("strategy", ["native", "readback", "none"])
def test_worker_killed_after_the_platform_accepted_is_redriven_without_a_second_copy(
    strategy: str, channels: dict[str, str], platform: Sandbox, workers: Workers, herald: Settings, clock: ManualClock
) -> None:
    # The platform stores the post, then holds its answer: the worker is inside the call.
    platform.faults(hold_after_accept=1.0, hold_seconds=30, times=1, strategies=[strategy])
    post_id = create_post(channels=[channels[strategy]], parts=[f"crash test {strategy}"])
    worker = workers.start()
    wait_until(lambda: platform.posts(strategy))
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()

    part = by_channel(post_id)[channels[strategy]]["parts"][0]
    assert part["state"] == "sending"  # the evidence that the platform may have it

    # Not while the dead worker's lease (and its grace) still runs...
    killed_at = DatabaseClock(db.engine()).now()
    assert ledger.claim_post(post_id, "early", killed_at, herald.lease_seconds, herald.grace_seconds) is None
    # ...and once both have passed: arm, then a fresh worker.
    clock.set(killed_at + timedelta(seconds=herald.lease_seconds + herald.grace_seconds + 0.2))
    assert arm(post_id, clock) is not None
    drain()

    copies = platform.posts(strategy)
    assert len(copies) == 1
    delivery = by_channel(post_id)[channels[strategy]]
    attempts = post_json(post_id)["attempts"]
    assert attempts[-1]["fence"] == 2
    if strategy == "none":
        assert delivery["status"] == "held"
        assert delivery["reason"] == "ambiguous_outcome"
        assert delivery["parts"][0]["state"] == "sending"
    else:
        assert delivery["status"] == "published"
        assert delivery["platform_id"] == copies[0]["id"]
    if strategy == "readback":
        assert attempts[-1]["outcome"] == "adopted"  # found by its key; no second call


def test_a_write_from_a_superseded_fence_changes_nothing_and_is_logged(
    channels: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["fenced"], at=now() - timedelta(seconds=1))
    t0 = now()
    first = ledger.claim_post(post_id, "worker-a", t0, lease=3, grace=2)
    assert first is not None and first.fence == 1
    assert ledger.claim_post(post_id, "worker-b", t0 + timedelta(seconds=4), lease=3, grace=2) is None
    second = ledger.claim_post(post_id, "worker-b", t0 + timedelta(seconds=6), lease=3, grace=2)
    assert second is not None and second.fence == 2
    assert second.plans[0].in_doubt

    plan = first.plans[0]
    with caplog.at_level(logging.WARNING), pytest.raises(FencedOut):
        ledger.part_published(first, plan.delivery_id, 0, Published("late-1", "http://x/late-1"), now(), 3.0)

    assert "fenced out" in caplog.text
    delivery = by_channel(post_id)[channels["native"]]
    assert delivery["status"] == "sending"
    assert delivery["platform_id"] is None
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Publication)).scalar_one() == 0


def test_rate_limited_delivery_waits_for_retry_after_while_other_channels_publish(
    channels: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    platform.faults(rate_limit=1.0, retry_after=2, times=1, strategies=["native"])
    post_id = create_post(channels=[channels["native"], channels["readback"]], parts=["busy"])
    started = clock.now()
    drain()

    deliveries = by_channel(post_id)
    native = deliveries[channels["native"]]
    assert native["status"] == "retry_wait"
    assert native["reason"] == "rate_limited"
    assert next_attempt_at(post_id, channels["native"]) >= started + timedelta(seconds=2)
    assert native["parts"][0]["state"] == "unsent"
    assert deliveries[channels["readback"]]["status"] == "published"
    assert platform.posts("native") == []

    clock.advance(1.5)  # before Retry-After: not due
    arm(post_id, clock)
    drain()
    assert by_channel(post_id)[channels["native"]]["status"] == "retry_wait"
    clock.advance(0.7)
    arm(post_id, clock)
    drain()
    assert by_channel(post_id)[channels["native"]]["status"] == "published"
    assert len(platform.posts("native")) == 1


def test_5xx_after_acceptance_is_ambiguous_and_the_retry_does_not_post_twice(
    channels: dict[str, str], platform: Sandbox, slow_retries: Settings, clock: ManualClock
) -> None:
    platform.faults(error_after_accept=1.0, times=1, strategies=["native"])
    post_id = create_post(channels=[channels["native"]], parts=["accepted then 500"])
    drain()

    native = by_channel(post_id)[channels["native"]]
    assert native["status"] == "retry_wait"
    assert native["parts"][0]["state"] == "sending"  # it may have landed, and it did
    assert len(platform.posts("native")) == 1

    clock.advance(slow_retries.backoff_max + 0.1)  # the backoff has passed
    assert arm(post_id, clock) is not None
    assert post_queue().count == 1
    drain()
    native = by_channel(post_id)[channels["native"]]
    assert native["status"] == "published"
    copies = platform.posts("native")
    assert len(copies) == 1
    assert native["platform_id"] == copies[0]["id"]


def test_4xx_rejection_is_terminal_with_its_reason_and_other_channels_publish(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.token("t-forbidden", "forbidden")
    add_channel("forbidden", "sandbox-native", {"base_url": sandbox_url, "token": "t-forbidden"})
    post_id = create_post(channels=["forbidden", channels["none"]], parts=["no permission"])
    drain()

    deliveries = by_channel(post_id)
    assert deliveries["forbidden"]["status"] == "failed"
    assert deliveries["forbidden"]["reason"] == "permission_denied"
    assert deliveries["forbidden"]["action"]
    assert deliveries[channels["none"]]["status"] == "published"
    assert post_json(post_id)["status"] == "partially_published"
    assert post_queue().scheduled_job_registry.get_job_ids() == []  # nothing to retry


def test_401_holds_the_delivery_and_disconnects_the_channel_while_others_publish(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("revoked", "sandbox-readback", {"base_url": sandbox_url, "token": "t-revoked"})
    post_id = create_post(channels=["revoked", channels["native"]], parts=["expired token"])
    drain()

    deliveries = by_channel(post_id)
    assert deliveries["revoked"]["status"] == "held"
    assert deliveries["revoked"]["reason"] == "auth_expired"
    assert deliveries[channels["native"]]["status"] == "published"
    assert {c["name"]: c["connected"] for c in channels_json()}["revoked"] is False
    assert platform.posts("readback") == []


@pytest.mark.parametrize(
    ("hold", "reason"),
    [
        (lambda: set_emergency_stop(True), "emergency_stop"),
        (lambda: set_emergency_stop(True, "default"), "emergency_stop"),
        (lambda: set_account_status("default", AccountStatus.UNPAID), "account_unpaid"),
        (lambda: set_account_status("default", AccountStatus.SUSPENDED), "account_suspended"),
    ],
    ids=["global-stop", "account-stop", "unpaid", "suspended"],
)
def test_admission_holds_send_nothing_and_record_the_reason(
    hold: Any, reason: str, channels: dict[str, str], platform: Sandbox
) -> None:
    hold()
    post_id = create_post(channels=list(channels.values()), parts=["held"])
    drain()

    assert platform.posts() == []
    info = post_json(post_id)
    assert info["status"] == "held"
    assert {d["reason"] for d in info["deliveries"]} == {reason}


def test_lifting_an_emergency_stop_publishes_what_it_held(channels: dict[str, str], platform: Sandbox) -> None:
    set_emergency_stop(True)
    post_id = create_post(channels=[channels["native"]], parts=["after the stop"])
    drain()
    assert post_json(post_id)["status"] == "held"

    assert set_emergency_stop(False) == [post_id]
    drain()
    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts()) == 1


def test_a_post_waiting_for_approval_is_held_until_approved(channels: dict[str, str], platform: Sandbox) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["needs a yes"], needs_approval=True)
    drain()
    assert by_channel(post_id)[channels["readback"]]["reason"] == "approval_pending"
    assert platform.posts() == []

    approve_post(post_id)
    drain()
    assert post_json(post_id)["status"] == "published"


def test_an_embargo_delays_the_post_until_not_before(channels: dict[str, str], platform: Sandbox) -> None:
    embargo = now() + timedelta(seconds=2)
    post_id = create_post(channels=[channels["native"]], parts=["embargoed news"], not_before=embargo)
    registry = post_queue().scheduled_job_registry
    assert registry.get_job_ids() == [job_id(post_id)]  # armed for the embargo, not the slot
    assert registry.get_scheduled_time(job_id(post_id)) == embargo.replace(microsecond=0)

    # A job that runs before the embargo anyway (enqueued behind arming's back) sends nothing.
    post_queue().enqueue_job(Job.fetch(job_id(post_id), connection=post_queue().connection))
    drain()
    delivery = by_channel(post_id)[channels["native"]]
    assert delivery["status"] == "pending"
    assert next_attempt_at(post_id, channels["native"]) == embargo
    assert platform.posts() == []

    wait_until(lambda: now() > embargo)
    arm(post_id)
    drain()
    copies = platform.posts()
    assert len(copies) == 1
    assert datetime.fromisoformat(copies[0]["created_at"]) >= embargo


def test_a_result_write_whose_held_connection_died_is_written_on_a_new_one(channels: dict[str, str]) -> None:
    if db.engine().dialect.name != "postgresql":
        pytest.skip("needs a database server that can end the job's session")
    post_id = create_post(channels=[channels["native"]], parts=["survives"], at=now() - timedelta(seconds=1))
    with db.holding():
        claim = ledger.claim_post(post_id, "w", now(), 30, 5)
        assert claim is not None
        with db.peeking() as conn:
            backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.engine().connect() as other:  # the server ends the job's session, as a restart would
            assert other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}).scalar_one()
        published = Published(platform_id="p-1", url="http://sandbox/p-1")
        assert ledger.part_published(claim, claim.plans[0].delivery_id, 0, published, now(), 30) == "published"
    post = post_json(post_id)
    assert post["status"] == "published"
    assert post["deliveries"][0]["platform_id"] == "p-1"


def test_a_second_publication_of_the_same_slot_and_revision_returns_the_first(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["once"], at=now() + timedelta(hours=1))
    slot = now()
    with db.transaction() as s:
        channel_id = by_channel_id(s, post_id)
        conn = s.connection()
        first = ledger.record_publication(conn, post_id, channel_id, slot, 1, "first", "http://x/first", slot)
        again = ledger.record_publication(conn, post_id, channel_id, slot, 1, "second", "http://x/second", slot)
        count = s.execute(select(func.count()).select_from(Publication)).scalar_one()
    assert (again.id, again.platform_id, again.url) == (first.id, "first", "http://x/first")
    assert count == 1


def next_attempt_at(post_id: int, channel: str) -> datetime:
    from core.store.models import Channel, Delivery

    with db.reading() as s:
        query = (
            select(Delivery.next_attempt_at).join(Channel).where(Delivery.post_id == post_id, Channel.name == channel)
        )
        return s.execute(query).scalars().one()


def by_channel_id(s: Any, post_id: int) -> int:
    from core.store.models import Delivery

    return int(s.execute(select(Delivery.channel_id).where(Delivery.post_id == post_id)).scalar_one())


def test_a_job_that_starts_well_before_its_slot_claims_nothing_and_is_armed_for_the_slot(
    channels: dict[str, str], platform: Sandbox, herald: Settings
) -> None:
    slot = now() + timedelta(seconds=herald.early_tolerance + 30)
    post_id = create_post(channels=[channels["native"]], parts=["not yet"], at=slot)
    queue = post_queue()
    queue.scheduled_job_registry.remove(job_id(post_id))
    queue.enqueue_job(Job.fetch(job_id(post_id), connection=queue.connection))  # behind arming's back

    drain()

    info = post_json(post_id)
    assert info["status"] == "scheduled"
    with db.reading() as s:
        fence, owner = s.execute(text("SELECT fence, lease_owner FROM posts WHERE id = :id"), {"id": post_id}).one()
    assert (fence, owner) == (0, None)  # no lease; on PostgreSQL the claim that read the slot was rolled back
    assert platform.posts() == []
    assert queue.scheduled_job_registry.get_job_ids() == [job_id(post_id)]  # re-armed for its slot


def test_a_job_that_starts_just_before_its_slot_waits_for_it_and_claims_once(
    channels: dict[str, str], platform: Sandbox
) -> None:
    slot = now() + timedelta(seconds=1.0)
    post_id = create_post(channels=[channels["native"]], parts=["right on time"], at=slot)
    queue = post_queue()
    queue.scheduled_job_registry.remove(job_id(post_id))
    queue.enqueue_job(Job.fetch(job_id(post_id), connection=queue.connection))  # as rq's scheduler may, early

    drain()

    assert post_json(post_id)["status"] == "published"
    (copy,) = platform.posts()
    assert datetime.fromisoformat(copy["created_at"]) >= slot
    with db.reading() as s:
        fence = s.execute(text("SELECT fence FROM posts WHERE id = :id"), {"id": post_id}).scalar_one()
        started = s.execute(text("SELECT started_at FROM attempts WHERE post_id = :id"), {"id": post_id}).all()
    assert fence == 1  # one claim, made at the slot
    assert len(started) == 1


def test_a_result_whose_publication_is_already_recorded_keeps_it_and_publishes_the_delivery(
    channels: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["recorded"], at=now() - timedelta(seconds=1))
    claim = ledger.claim_post(post_id, "w", now(), 30, 5)
    assert claim is not None
    plan = claim.plans[0]
    with db.transaction() as s:  # as a first attempt whose answer was lost would have left it
        first = ledger.record_publication(
            s.connection(), post_id, plan.channel_id, claim.slot, claim.revision, "first", "http://x/first", now()
        )

    with caplog.at_level(logging.WARNING):
        status = ledger.part_published(claim, plan.delivery_id, 0, Published("second", "http://x/second"), now(), 30)

    assert status == "published"
    assert "publication already recorded" in caplog.text
    post = post_json(post_id)
    assert post["status"] == "published"
    assert post["deliveries"][0]["status"] == "published"
    with db.reading() as s:
        rows = s.execute(select(Publication.id, Publication.platform_id)).all()
        lease = s.execute(text("SELECT lease_owner FROM posts WHERE id = :id"), {"id": post_id}).scalar_one()
    assert [tuple(r) for r in rows] == [(first.id, "first")]
    assert lease is None  # the last write gave the lease back


def test_a_claim_whose_held_connection_died_is_made_on_a_new_one(channels: dict[str, str]) -> None:
    if db.engine().dialect.name != "postgresql":
        pytest.skip("needs a database server that can end the job's session")
    post_id = create_post(channels=[channels["native"]], parts=["claimed anyway"], at=now() - timedelta(seconds=1))
    with db.holding():
        with db.peeking() as conn:
            backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.engine().connect() as other:
            assert other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}).scalar_one()
        claim = ledger.claim_post(post_id, "w", now(), 30, 5)
    assert claim is not None and claim.fence == 1
    assert post_json(post_id)["deliveries"][0]["status"] == "sending"

"""The lease's timing invariants hold in practice: heartbeat, hard timeout, grace."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from core import ledger
from core.config import Settings
from core.plugins.adapter import Published
from core.runtime.arming import arm
from core.runtime.clock import ManualClock
from core.runtime.job import heartbeat_for
from core.services.posts import create_post
from core.store import db
from core.store.models import Post
from tests.integration.conftest import Sandbox, drain, post_json, wait_until

pytestmark = pytest.mark.integration


def lease_expiry(post_id: int) -> datetime:
    with db.reading() as s:
        expiry = s.get_one(Post, post_id).lease_expires_at
    assert expiry is not None
    return expiry


def test_heartbeat_keeps_renewing_the_lease_while_the_attempt_runs(channels: dict[str, str], herald: Settings) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["long call"], at=datetime.now(UTC) + timedelta(hours=1))
    cfg = herald.with_(lease_seconds=0.9, call_timeout=0.3, grace_seconds=0.5)
    claim = ledger.claim_post(post_id, "w", datetime.now(UTC), cfg.lease_seconds, cfg.grace_seconds)
    assert claim is not None
    first = lease_expiry(post_id)

    with heartbeat_for(claim, cfg) as heartbeat:
        time.sleep(2.0)  # more than twice the lease
        renewed = lease_expiry(post_id)
    assert renewed > first + timedelta(seconds=1)
    assert renewed > datetime.now(UTC)  # never lapsed while the attempt ran
    assert not heartbeat.fenced.is_set()


def test_one_heartbeat_thread_renews_every_claim_in_flight_and_stops_with_each(
    channels: dict[str, str], herald: Settings
) -> None:
    cfg = herald.with_(lease_seconds=0.9, call_timeout=0.3, grace_seconds=0.5)
    later = datetime.now(UTC) + timedelta(hours=1)
    first_id, second_id = (create_post(channels=[channels["native"]], parts=[text], at=later) for text in "ab")
    first = ledger.claim_post(first_id, "w", datetime.now(UTC), cfg.lease_seconds, cfg.grace_seconds)
    second = ledger.claim_post(second_id, "w", datetime.now(UTC), cfg.lease_seconds, cfg.grace_seconds)
    assert first is not None and second is not None

    claimed = lease_expiry(first_id), lease_expiry(second_id)
    with heartbeat_for(first, cfg):
        with heartbeat_for(second, cfg):
            # Both renewed by the one thread.
            wait_until(lambda: lease_expiry(first_id) > claimed[0] and lease_expiry(second_id) > claimed[1])
        ended = lease_expiry(second_id)
        # Wait for a renewal of the first claim made after the second's lease ran out: more
        # than a beat after the second's block ended, so the one thread has come round to
        # the second's turn since, and skipped it.
        wait_until(lambda: lease_expiry(first_id) > ended + timedelta(seconds=cfg.lease_seconds))
        renewed = lease_expiry(first_id)
    assert renewed > datetime.now(UTC)  # still renewed after the other claim ended
    assert lease_expiry(second_id) == ended  # never renewed after its block ended
    assert ended < datetime.now(UTC)


def test_heartbeat_notices_when_a_newer_claim_fences_it_out(channels: dict[str, str], herald: Settings) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["x"], at=datetime.now(UTC) - timedelta(seconds=1))
    cfg = herald.with_(lease_seconds=0.6, call_timeout=0.2, grace_seconds=0.3)
    t0 = datetime.now(UTC)
    old = ledger.claim_post(post_id, "old", t0, cfg.lease_seconds, cfg.grace_seconds)
    assert old is not None
    assert ledger.claim_post(post_id, "new", t0 + timedelta(seconds=5), 30, cfg.grace_seconds) is not None

    with heartbeat_for(old, cfg) as heartbeat:
        assert heartbeat.fenced.wait(timeout=10)  # its first beat finds the lease taken


def test_a_call_slower_than_the_hard_timeout_is_ambiguous_and_resolved_by_the_key(
    channels: dict[str, str], platform: Sandbox, herald: Settings, clock: ManualClock
) -> None:
    assert herald.call_timeout < herald.lease_seconds < herald.lease_seconds + herald.grace_seconds
    platform.faults(latency=herald.call_timeout + 1.0, times=1, strategies=["native"])
    post_id = create_post(channels=[channels["native"]], parts=["slow platform"])
    started = time.monotonic()
    drain()
    assert time.monotonic() - started < herald.lease_seconds  # the call was cut at its hard timeout

    delivery = post_json(post_id)["deliveries"][0]
    assert delivery["status"] == "retry_wait"
    assert delivery["parts"][0]["state"] == "sending"
    assert "deadline passed" in (delivery["detail"] or "")

    platform.faults()  # the platform is fast again
    wait_until(lambda: platform.posts("native"))  # the slow request has landed meanwhile
    # The next attempt waits for the backoff and for the slow call's deadline (§6 step 7).
    clock.advance(max(herald.backoff_max, herald.call_timeout) + 0.1)
    assert arm(post_id, clock) is not None
    drain()
    assert post_json(post_id)["status"] == "published"
    assert len(platform.posts("native")) == 1


def test_the_lease_is_kept_until_the_last_delivery_of_the_claim_has_committed(
    channels: dict[str, str], herald: Settings
) -> None:
    # Two channels: one delivery's result commits while the other's result is still on its
    # way (a slow call, or a commit waiting for the database's write lock).
    post_id = create_post(channels=[channels["native"], channels["readback"]], parts=["two"])
    claim = ledger.claim_post(post_id, "w", datetime.now(UTC), herald.lease_seconds, herald.grace_seconds)
    assert claim is not None
    first, second = claim.plans

    ledger.part_published(claim, second.delivery_id, 0, Published("r-1", "u"), datetime.now(UTC), 3.0)
    with db.reading() as s:
        assert s.get_one(Post, post_id).lease_owner == "w"  # the other delivery is still sending
    assert ledger.claim_post(post_id, "other", datetime.now(UTC), herald.lease_seconds, herald.grace_seconds) is None

    ledger.part_published(claim, first.delivery_id, 0, Published("n-1", "u"), datetime.now(UTC), 3.0)
    with db.reading() as s:
        post = s.get_one(Post, post_id)
        assert (post.lease_owner, post.lease_expires_at, post.status) == (None, None, "published")

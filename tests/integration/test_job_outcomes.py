"""Every way a delivery can end is an outcome with a reason (§6 steps 7–8).

The job runs in this process with an injected clock (``core.runtime.job.use_clock``), so
attempt times, backoff and deadlines are exact; the platform is the real sandbox.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from adapters.sandbox.adapters import SandboxNative
from core.config import Settings
from core.domain.states import DeliveryStatus, PartState, Reason
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import reconnect_channel
from core.services.posts import create_post
from core.store import db
from core.store.models import Delivery, Post
from tests.integration.channels_made_before import add_unchecked_channel
from tests.integration.conftest import Sandbox

pytestmark = pytest.mark.integration


@pytest.fixture
def clock(herald: Settings) -> ManualClock:
    # Ahead of the real clock by more than a slow machine takes to create a post "now", so
    # the post is due on it (a job that found its post early would do nothing).
    at = ManualClock(datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5))
    job.use_clock(at)
    return at


def delivery(post_id: int) -> Delivery:
    with db.reading() as s:
        (found,) = s.query(Delivery).filter(Delivery.post_id == post_id).all()
        assert found.parts  # loaded while the session is open
        return found


def lease_owner(post_id: int) -> str | None:
    with db.reading() as s:
        return s.get_one(Post, post_id).lease_owner


@pytest.mark.parametrize("platform_name", ["sandbox-native", "sandbox-none"])
def test_a_channel_missing_a_required_setting_is_held_misconfigured_with_the_fix_after_one_attempt(
    herald: Settings, clock: ManualClock, platform: Sandbox, platform_name: str
) -> None:
    add_unchecked_channel("nourl", platform_name, {"token": "t-ok"})
    post_id = create_post(channels=["nourl"], parts=["no base_url"])

    outcome = job.publish_post(post_id)

    ended = delivery(post_id)
    assert (ended.status, ended.reason) == (DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED)
    assert "--set base_url=" in (ended.detail or "")  # the fix, in the adapter's words
    assert ended.attempts == 1
    # Nothing was sent: the part is not in doubt, so no channel is held ambiguous_outcome.
    assert ended.parts[0].state is PartState.UNSENT
    assert outcome.deliveries[0].reason is Reason.CHANNEL_MISCONFIGURED
    assert lease_owner(post_id) is None
    assert platform.posts() == []


def test_an_adapter_bug_before_any_request_is_retried_as_adapter_error_then_fails(
    channels: dict[str, str], herald: Settings, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: SandboxNative, ctx: Any) -> Any:
        raise KeyError("id")  # e.g. a field the adapter expected in its settings

    monkeypatch.setattr(SandboxNative, "publish", broken)
    post_id = create_post(channels=[channels["native"]], parts=["bug"])

    for attempt in range(1, herald.max_attempts + 1):
        job.publish_post(post_id)
        ended = delivery(post_id)
        assert ended.attempts == attempt
        assert ended.parts[0].state is PartState.UNSENT  # nothing was written: not in doubt
        if attempt < herald.max_attempts:
            assert (ended.status, ended.reason) == (DeliveryStatus.RETRY_WAIT, Reason.ADAPTER_ERROR)
            assert ended.next_attempt_at is not None
            clock.set(ended.next_attempt_at)
    assert (ended.status, ended.reason) == (DeliveryStatus.FAILED, Reason.ADAPTER_ERROR)
    assert "KeyError" in (ended.detail or "")
    assert lease_owner(post_id) is None


def test_a_reply_chain_whose_parent_has_no_platform_id_fails_thread_parent_missing(
    channels: dict[str, str], herald: Settings, clock: ManualClock, platform: Sandbox
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["one", "two"])
    with db.transaction() as s:  # part 1 counts as landed, but its platform id is gone
        s.execute(
            text("UPDATE delivery_parts SET state = 'published', platform_id = NULL WHERE idx = 0"),
        )

    job.publish_post(post_id)

    ended = delivery(post_id)
    assert (ended.status, ended.reason) == (DeliveryStatus.FAILED, Reason.THREAD_PARENT_MISSING)
    assert ended.parts[1].state is PartState.UNSENT
    assert platform.posts() == []  # part 2 was not sent as a new thread
    assert lease_owner(post_id) is None


def test_after_an_ambiguous_call_the_next_attempt_waits_for_its_deadline(
    channels: dict[str, str], herald: Settings, clock: ManualClock, platform: Sandbox
) -> None:
    # The platform stores the post and drops the connection: an answer that never comes.
    platform.faults(drop_after_accept=1.0, times=1, strategies=["readback"])
    post_id = create_post(channels=[channels["readback"]], parts=["in doubt"])
    started = clock.now()

    job.publish_post(post_id)

    parked = delivery(post_id)
    assert parked.status is DeliveryStatus.RETRY_WAIT
    assert parked.parts[0].state is PartState.SENDING
    # Backoff alone would be ~0.2 s; the call could have gone on until its deadline.
    assert parked.next_attempt_at == started + timedelta(seconds=herald.call_timeout)

    clock.set(started + timedelta(seconds=herald.call_timeout - 0.1))
    early = job.publish_post(post_id)
    assert early.result is job.JobResult.NOTHING_DUE  # no read-back while the call could land
    assert delivery(post_id).attempts == 1

    clock.set(started + timedelta(seconds=herald.call_timeout))
    job.publish_post(post_id)
    settled = delivery(post_id)
    assert settled.status is DeliveryStatus.PUBLISHED  # the read-back found the copy and adopted it
    assert settled.first_seen_at is not None
    assert len(platform.posts("readback")) == 1


def test_a_part_of_a_delivery_row_missing_its_channel_adapter_is_held_misconfigured(
    channels: dict[str, str], herald: Settings, clock: ManualClock
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["gone"])
    with db.transaction() as s:
        s.execute(text("UPDATE channels SET platform = 'retired-platform'"))

    job.publish_post(post_id)

    ended = delivery(post_id)
    assert (ended.status, ended.reason) == (DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED)
    assert "plugins.toml" in (ended.detail or "")
    assert ended.parts[0].state is PartState.UNSENT


def test_a_misconfigured_channel_reconnected_with_its_setting_publishes_without_anything_else(
    herald: Settings, sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    add_unchecked_channel("nourl", "sandbox-native", {"token": "t-ok"})
    post_id = create_post(channels=["nourl"], parts=["fixed by a reconnect"])
    job.publish_post(post_id)
    assert delivery(post_id).reason is Reason.CHANNEL_MISCONFIGURED

    reconnected = reconnect_channel("nourl", {"base_url": sandbox_url})

    assert post_id in reconnected.armed
    job.publish_post(post_id)
    assert delivery(post_id).status is DeliveryStatus.PUBLISHED
    assert [p["text"] for p in platform.posts("native")] == ["fixed by a reconnect"]

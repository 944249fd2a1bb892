"""Paced sends (core/runtime/pacing.py): the shared pacer on real Redis, the publish job
keeping a channel's rate with an injected clock, and Redis down failing open.

The catch-up of a backlog by real worker processes against the sandbox's own rate limit
is tests/integration/test_catchup.py.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import select

from core.config import Settings
from core.domain.states import DeliveryStatus, PartState, Reason
from core.ledger import DeliveryPlan
from core.plugins import Rate, RateScope
from core.plugins import manager as plugins
from core.runtime import job, pacing
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.pacing import MARGIN, Pacer, budget_key, turn
from core.runtime.queue import connection
from core.services.channels import add_channel
from core.services.posts import create_post
from core.store import db
from core.store.models import Attempt, Delivery
from tests.integration.channels_made_before import add_unchecked_channel
from tests.integration.conftest import Sandbox

pytestmark = pytest.mark.integration

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# -- the pacer itself ----------------------------------------------------------------------


class Channel:
    """One channel's budgets on the real pacer, asked with instants the test picks."""

    def __init__(self, *rates: Rate) -> None:
        self.pacer, self.rates = Pacer(connection()), rates
        self.keys = [f"test:{i}" for i in range(len(rates))]

    def take(self, waiter: str, seconds: float) -> datetime | None:
        return self.pacer.take(self.keys, self.rates, "test:turns", f"{waiter}@{seconds}", waiter, at(seconds))


def test_sends_within_the_rate_go_at_once_and_the_next_waits_for_the_oldest_to_leave_the_window(
    herald: Settings,
) -> None:
    channel = Channel(Rate(3, 10))
    assert [channel.take(f"s{i}", i) for i in range(3)] == [None, None, None]

    assert channel.take("s3", 5) == at(10 + MARGIN)


def test_a_backlog_told_to_wait_is_spread_at_the_sustained_rate_not_sent_back_at_one_instant(
    herald: Settings,
) -> None:
    channel, window = Channel(Rate(2, 10)), 10 + MARGIN
    assert [channel.take(f"s{i}", 0) for i in range(2)] == [None, None]

    waits = [channel.take(f"w{i}", 0) for i in range(4)]

    assert waits == [at(window + i * window / 2) for i in range(4)]


def test_a_waiter_goes_at_its_turn_and_a_newcomer_does_not_take_the_room_kept_for_it(herald: Settings) -> None:
    channel, window = Channel(Rate(1, 10)), 10 + MARGIN
    assert channel.take("first", 0) is None
    assert channel.take("second", 0) == at(window)
    assert channel.take("third", 0) == at(2 * window)

    # The window has room again, but two waiters are ahead of a newcomer.
    assert channel.take("newcomer", window + 0.5) == at(3 * window)
    assert channel.take("second", window + 0.5) is None


def test_a_waiter_whose_room_is_a_moment_late_is_told_that_moment_and_keeps_its_place(herald: Settings) -> None:
    channel, window = Channel(Rate(1, 10)), 10 + MARGIN
    channel.take("first", 0)
    channel.take("second", 0)
    channel.take("third", 0)
    assert channel.take("second", window + 0.2) is None  # its job ran 0.2 s late

    assert channel.take("third", 2 * window) == at(2 * window + 0.2)
    assert channel.take("newcomer", 2 * window + 0.1) == at(3 * window + 0.2)
    assert channel.take("third", 2 * window + 0.2) is None


def test_every_rate_of_a_channel_holds_the_tightest_decides(herald: Settings) -> None:
    channel = Channel(Rate(5, 1), Rate(2, 60))
    assert [channel.take(f"s{i}", i * 0.1) for i in range(2)] == [None, None]

    assert channel.take("s2", 0.2) == at(60 + MARGIN)


def test_a_channel_scope_is_each_channels_own_and_a_platform_scope_is_shared(herald: Settings) -> None:
    adapter = plugins.adapter("sandbox-native")

    def plan(channel_id: int) -> DeliveryPlan:
        return DeliveryPlan(channel_id, channel_id, "sandbox-native", {}, (), 0, False, 1)

    mine, theirs = Rate(1, 60), Rate(1, 60, RateScope.PLATFORM)
    assert budget_key(adapter, plan(1), mine) != budget_key(adapter, plan(2), mine)
    assert budget_key(adapter, plan(1), theirs) == budget_key(adapter, plan(2), theirs)


def test_a_turn_a_moment_away_is_slept_out_in_the_job_not_parked(herald: Settings) -> None:
    adapter, plan = (
        plugins.adapter("sandbox-native"),
        DeliveryPlan(7, 3, "sandbox-native", {"rate": "1/0.2"}, (), 0, False, 1),
    )
    now = DatabaseClock(db.engine())
    assert turn(adapter, plan, 0, 1, now) is None
    started = time.monotonic()

    assert turn(adapter, replace(plan, delivery_id=8), 0, 1, now) is None

    assert time.monotonic() - started >= 0.2  # it waited for the room, then went


# -- the publish job keeping a channel's rate ----------------------------------------------


@pytest.fixture
def clock(herald: Settings) -> ManualClock:
    # Ahead of the real clock, so a post created "now" is due on it.
    manual = ManualClock(datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5))
    job.use_clock(manual)
    return manual


def delivery_of(post_id: int) -> Delivery:
    with db.reading() as s:
        (found,) = s.query(Delivery).filter(Delivery.post_id == post_id).all()
        assert found.parts
        return found


def attempts_of(post_id: int) -> list[Attempt]:
    with db.reading() as s:
        return list(s.execute(select(Attempt).where(Attempt.post_id == post_id)).scalars())


def test_a_post_due_now_on_an_idle_channel_is_not_delayed_by_the_pacer(
    herald: Settings, clock: ManualClock, sandbox_url: str, platform: Sandbox
) -> None:
    channel_id = add_channel("paced", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok", "rate": "1/60"})
    post_id = create_post(channels=["paced"], parts=["on time"])

    outcome = job.publish_post(post_id)

    # Its wait is zero: sent on the job's first run, and counted in the channel's window.
    assert outcome.deliveries[0].status is DeliveryStatus.PUBLISHED
    assert len(platform.posts()) == 1
    plan = DeliveryPlan(0, channel_id, "sandbox-native", {}, (), 0, False, 1)
    key = budget_key(plugins.adapter("sandbox-native"), plan, Rate(1, 60))
    assert connection().zcard(f"{key}:log") == 1


def test_a_post_past_its_channels_rate_waits_for_its_turn_unsent_and_uncounted_then_goes(
    herald: Settings, clock: ManualClock, sandbox_url: str, platform: Sandbox
) -> None:
    add_channel("paced", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok", "rate": "2/60"})
    first, second, third = (create_post(channels=["paced"], parts=[f"post {i}"]) for i in range(3))
    sent_at = clock.now()
    for post_id in (first, second):
        assert job.publish_post(post_id).deliveries[0].status is DeliveryStatus.PUBLISHED
        clock.advance(1)

    outcome = job.publish_post(third)

    (paced,) = outcome.deliveries
    assert (paced.status, paced.reason) == (DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED)
    waiting = delivery_of(third)
    assert (waiting.status, waiting.reason) == (DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED)
    # Its turn: when the first send leaves the window, on the whole second rq can keep.
    turn_at = sent_at + timedelta(seconds=60 + MARGIN)
    assert waiting.next_attempt_at == datetime.fromtimestamp(-(-turn_at.timestamp() // 1), UTC)
    assert "paced" in (waiting.detail or "") and "2 per 60s" in (waiting.detail or "")
    # Nothing of the claim stays: no attempt counted, none logged, the part not in doubt.
    assert waiting.attempts == 0
    assert attempts_of(third) == []
    assert waiting.parts[0].state is PartState.UNSENT
    assert len(platform.posts()) == 2

    clock.set(waiting.next_attempt_at)
    assert job.publish_post(third).deliveries[0].status is DeliveryStatus.PUBLISHED
    assert delivery_of(third).attempts == 1
    assert [p["text"] for p in platform.posts()] == ["post 0", "post 1", "post 2"]


def test_a_thread_past_the_rate_waits_at_the_part_it_reached(
    herald: Settings, clock: ManualClock, sandbox_url: str, platform: Sandbox
) -> None:
    add_channel("paced", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok", "rate": "2/60"})
    post_id = create_post(channels=["paced"], parts=["one", "two", "three"])

    job.publish_post(post_id)

    waiting = delivery_of(post_id)
    assert (waiting.status, waiting.reason) == (DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED)
    assert [p.state for p in waiting.parts] == [PartState.PUBLISHED, PartState.PUBLISHED, PartState.UNSENT]
    assert waiting.attempts == 1  # the claim's one attempt, which sent two parts
    assert [a.part_idx for a in attempts_of(post_id)] == [0, 1]

    assert waiting.next_attempt_at is not None
    clock.set(waiting.next_attempt_at)
    assert job.publish_post(post_id).deliveries[0].status is DeliveryStatus.PUBLISHED
    posts = platform.posts()
    assert [p["text"] for p in posts] == ["one", "two", "three"]
    assert posts[2]["reply_to"] == posts[1]["id"]


def test_when_redis_cannot_be_asked_the_part_is_sent_and_a_line_says_so(
    herald: Settings, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens there; asked once, without the client's retries, to keep the test short.
    down = Redis.from_url("redis://127.0.0.1:1/0", retry=Retry(NoBackoff(), 0))
    monkeypatch.setattr(pacing, "connection", lambda: down)
    plan = DeliveryPlan(7, 3, "sandbox-native", {"rate": "1/60"}, (), 0, False, 1)

    with caplog.at_level(logging.WARNING, logger="core.runtime.pacing"):
        assert turn(plugins.adapter("sandbox-native"), plan, 0, 1, ManualClock(T0)) is None

    assert "delivery 7: the pacer could not be asked" in caplog.text
    assert "sending without it" in caplog.text


def test_a_channel_whose_rate_setting_is_no_rate_is_held_misconfigured_and_nothing_is_sent(
    herald: Settings, clock: ManualClock, sandbox_url: str, platform: Sandbox
) -> None:
    # Made before herald checked the setting (channel add refuses it now).
    add_unchecked_channel("badrate", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok", "rate": "fast"})
    post_id = create_post(channels=["badrate"], parts=["never sent"])

    job.publish_post(post_id)

    held = delivery_of(post_id)
    assert (held.status, held.reason) == (DeliveryStatus.HELD, Reason.CHANNEL_MISCONFIGURED)
    assert "COUNT/SECONDS" in (held.detail or "")
    assert held.parts[0].state is PartState.UNSENT
    assert platform.posts() == []

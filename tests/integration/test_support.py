"""Support (§18) through the services: retry only what failed, resolve an attempt in doubt,
reconnect, honest health, alarms resolved by hand.

The job runs in this process with the injected clock, so backoff and leases are moved by
hand; the platform is the real sandbox, and its copies are the oracle.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis import Redis
from sqlalchemy import select, update

from core.config import Settings
from core.domain.errors import Conflict, NotFound, UserError
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason
from core.ledger import renew_lease
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.alarms import list_alarms, resolve_alarm
from core.services.channels import add_channel, reconnect_channel
from core.services.controls import set_emergency_stop
from core.services.health import health, stuck_sending, waiting_deliveries
from core.services.posts import create_post, show_post
from core.services.support import Landed, SendAgain, resolve_post, retry_post
from core.services.timeline import timeline
from core.services.views import jsonable
from core.store import db
from core.store.models import Delivery, DeliveryPart, Post, Publication
from reconciler.tick import tick
from tests.integration.conftest import Sandbox
from tests.integration.test_query_plans import plan

pytestmark = pytest.mark.integration


@pytest.fixture
def two(herald: Settings, sandbox_url: str, platform: Sandbox) -> dict[str, str]:
    """A native channel that works, and a none channel whose token the platform refuses (403)."""
    platform.token("t-forbidden", "forbidden")
    add_channel("n1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"})
    add_channel("x1", "sandbox-none", {"base_url": sandbox_url, "token": "t-forbidden"})
    return {"native": "n1", "none": "x1"}


@pytest.fixture
def none_channel(herald: Settings, sandbox_url: str) -> str:
    add_channel("x1", "sandbox-none", {"base_url": sandbox_url, "token": "t-ok"})
    return "x1"


def deliveries(post_id: int) -> dict[str, Any]:
    return {d.channel: d for d in show_post(post_id).deliveries}


def run_until_settled(post_id: int, clock: ManualClock, runs: int = 12) -> None:
    """Run the post's job until none of its deliveries is waiting, moving the clock past
    every retry it parks (no real time passes)."""
    for _ in range(runs):
        job.publish_post(post_id)
        waiting = [d for d in show_post(post_id).deliveries if d.status is DeliveryStatus.RETRY_WAIT]
        if not waiting:
            return
        clock.advance(30)
    raise AssertionError("the post kept waiting for retries")


def held_in_doubt(channel: str, clock: ManualClock, platform: Sandbox, parts: list[str] | None = None) -> int:
    """A post on a none channel whose attempt the platform accepted and never answered."""
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])
    post_id = create_post(channels=[channel], parts=parts or ["in doubt"])
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason) == (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME)
    return post_id


# -- retry ---------------------------------------------------------------------------


def test_retry_sends_only_the_failed_channel_of_a_post_that_published_on_the_other(
    two: dict[str, str], platform: Sandbox, clock: ManualClock
) -> None:
    post_id = create_post(channels=["n1", "x1"], parts=["retry only what failed"])
    job.publish_post(post_id)
    assert show_post(post_id).status is PostStatus.PARTIALLY_PUBLISHED
    assert (deliveries(post_id)["x1"].status, deliveries(post_id)["x1"].reason) == (
        DeliveryStatus.FAILED,
        Reason.PERMISSION_DENIED,
    )

    platform.token("t-forbidden", "ok")  # the permission is granted on the platform
    done = retry_post(post_id, clock=clock)
    assert [(r.channel, r.was, r.reason) for r in done.retried] == [
        ("x1", DeliveryStatus.FAILED, Reason.PERMISSION_DENIED)
    ]
    assert done.refused == () and done.armed_at is not None
    assert jsonable(done) == {  # `herald post retry --json`
        "post_id": post_id,
        "retried": [{"channel": "x1", "was": "failed", "reason": "permission_denied"}],
        "refused": [],
        "armed_at": done.armed_at.isoformat(timespec="seconds"),
    }
    job.publish_post(post_id)

    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert len(platform.posts("native")) == 1 and len(platform.posts("none")) == 1
    (action,) = timeline(post_id).deliveries[1].actions
    assert action.action == "retry" and "permission_denied" in action.detail
    assert timeline(post_id).deliveries[0].actions == ()


def test_a_retry_gives_a_fresh_attempt_budget_that_backoff_and_max_attempts_count_from(
    none_channel: str, platform: Sandbox, clock: ManualClock, herald: Settings
) -> None:
    platform.faults(error_before_accept=1.0, strategies=["none"])  # 503: provably not sent
    post_id = create_post(channels=[none_channel], parts=["keeps failing"])
    run_until_settled(post_id, clock)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason, d.attempts) == (DeliveryStatus.FAILED, Reason.PLATFORM_UNAVAILABLE, 4)

    platform.faults(error_before_accept=1.0, times=1, strategies=["none"])  # one more 503, then it works
    retry_post(post_id, clock=clock)
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    # The fifth attempt is the first of a new budget: parked with the first step's backoff.
    assert (d.status, d.attempts) == (DeliveryStatus.RETRY_WAIT, 5)
    assert d.next_attempt_at is not None
    assert d.next_attempt_at - clock.now() <= timedelta(seconds=herald.backoff_base)
    clock.advance(30)
    job.publish_post(post_id)
    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert len(platform.posts("none")) == 1


def test_retry_with_nothing_to_retry_is_refused_saying_why(two: dict[str, str], clock: ManualClock) -> None:
    post_id = create_post(channels=["n1"], parts=["published already"])
    job.publish_post(post_id)

    with pytest.raises(UserError, match="nothing to retry: n1 is published: retry never sends a published"):
        retry_post(post_id, clock=clock)
    with pytest.raises(NotFound, match="no delivery on channel 'x1'; its channels: n1"):
        retry_post(post_id, "x1", clock=clock)
    with pytest.raises(NotFound, match="no post 999"):
        retry_post(999, clock=clock)


def test_retry_refuses_a_hold_another_action_lifts_naming_that_action(
    none_channel: str, platform: Sandbox, clock: ManualClock
) -> None:
    in_doubt = held_in_doubt(none_channel, clock, platform)
    with pytest.raises(
        UserError, match=rf"x1 is held ambiguous_outcome: .*herald post resolve {in_doubt} --channel x1"
    ):
        retry_post(in_doubt, clock=clock)

    waiting = create_post(channels=[none_channel], parts=["needs approval"], needs_approval=True)
    job.publish_post(waiting)
    with pytest.raises(UserError, match=rf"approval_pending: approve it: `herald post approve {waiting}`"):
        retry_post(waiting, clock=clock)

    set_emergency_stop(True)
    stopped = create_post(channels=[none_channel], parts=["stopped"])
    job.publish_post(stopped)
    with pytest.raises(UserError, match="emergency_stop: publishing is stopped; lift the stop with `herald resume`"):
        retry_post(stopped, clock=clock)
    assert len(platform.posts("none")) == 1  # only the copy in doubt


def test_retry_retries_the_failed_channel_and_reports_the_one_left_in_doubt(
    two: dict[str, str], sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    add_channel("f1", "sandbox-native", {"base_url": sandbox_url, "token": "t-forbidden"})
    add_channel("x2", "sandbox-none", {"base_url": sandbox_url, "token": "t-ok"})
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])
    post_id = create_post(channels=["n1", "f1", "x2"], parts=["one of each"])
    job.publish_post(post_id)
    assert {name: (d.status, d.reason) for name, d in deliveries(post_id).items()} == {
        "n1": (DeliveryStatus.PUBLISHED, None),
        "f1": (DeliveryStatus.FAILED, Reason.PERMISSION_DENIED),
        "x2": (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME),
    }

    platform.token("t-forbidden", "ok")
    done = retry_post(post_id, clock=clock)
    assert [r.channel for r in done.retried] == ["f1"]
    assert [(r.channel, r.reason) for r in done.refused] == [("x2", Reason.AMBIGUOUS_OUTCOME)]
    assert f"herald post resolve {post_id} --channel x2 send-again" in done.refused[0].fix
    job.publish_post(post_id)
    assert deliveries(post_id)["f1"].status is DeliveryStatus.PUBLISHED
    assert deliveries(post_id)["x2"].status is DeliveryStatus.HELD
    assert len(platform.posts("native")) == 2 and len(platform.posts("none")) == 1


def test_retry_refuses_what_admission_would_hold_at_once(two: dict[str, str], clock: ManualClock) -> None:
    post_id = create_post(channels=["x1"], parts=["forbidden, then stopped"])
    job.publish_post(post_id)
    set_emergency_stop(True, "default")
    with pytest.raises(
        UserError, match=r"x1 is failed permission_denied: emergency_stop: .*`herald resume --account default`"
    ):
        retry_post(post_id, clock=clock)
    assert deliveries(post_id)["x1"].status is DeliveryStatus.FAILED  # left as it was


# -- resolve ---------------------------------------------------------------------------


def test_an_attempt_in_doubt_resolved_landed_is_published_with_that_url_and_no_second_copy(
    none_channel: str, platform: Sandbox, clock: ManualClock, herald: Settings
) -> None:
    post_id = held_in_doubt(none_channel, clock, platform)
    (copy,) = platform.posts("none")
    url = f"{platform.url}/p/{copy['id']}"

    done = resolve_post(post_id, none_channel, Landed(url), clock=clock)

    assert (done.outcome, done.part, done.url, done.platform_id) == ("landed", 0, url, copy["id"])
    assert (done.delivery_status, done.post_status) == (DeliveryStatus.PUBLISHED, PostStatus.PUBLISHED)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason, d.url, d.platform_id) == (DeliveryStatus.PUBLISHED, None, url, copy["id"])
    with db.reading() as s:
        (publication,) = s.execute(select(Publication).where(Publication.post_id == post_id)).scalars()
        assert (publication.url, publication.platform_id) == (url, copy["id"])
        assert s.get_one(Post, post_id).lease_owner is None
    job.publish_post(post_id)  # a job that runs anyway
    clock.advance(60)
    tick(clock)
    assert len(platform.posts("none")) == 1
    (action,) = timeline(post_id).deliveries[0].actions
    assert (action.action, action.part) == ("landed", 0) and url in action.detail


def test_send_again_makes_exactly_one_more_copy_and_is_recorded_as_accepted_by_a_person(
    none_channel: str, platform: Sandbox, clock: ManualClock
) -> None:
    post_id = held_in_doubt(none_channel, clock, platform)

    done = resolve_post(post_id, none_channel, SendAgain(), clock=clock)
    assert (done.outcome, done.delivery_status) == ("send_again", DeliveryStatus.PENDING)
    job.publish_post(post_id)
    job.publish_post(post_id)

    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert len(platform.posts("none")) == 2  # the one in doubt, and the one sent again
    (d,) = timeline(post_id).deliveries
    assert [a.action for a in d.attempts] == ["send", "resend"]
    (action,) = d.actions
    assert action.action == "send_again" and "resend accepted by a person" in action.detail


def test_send_again_is_good_for_one_attempt_only(none_channel: str, platform: Sandbox, clock: ManualClock) -> None:
    post_id = held_in_doubt(none_channel, clock, platform)
    resolve_post(post_id, none_channel, SendAgain(), clock=clock)
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])  # the resend is in doubt too

    job.publish_post(post_id)
    job.publish_post(post_id)
    clock.advance(60)
    tick(clock)
    job.publish_post(post_id)

    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason) == (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME)
    assert len(platform.posts("none")) == 2  # never a third without a person saying so


def test_resolve_is_refused_for_a_delivery_that_is_not_in_doubt(two: dict[str, str], clock: ManualClock) -> None:
    post_id = create_post(channels=["n1", "x1"], parts=["not in doubt"])
    job.publish_post(post_id)

    with pytest.raises(Conflict, match=r"on n1 is published, not an attempt in doubt .*nothing is in doubt"):
        resolve_post(post_id, "n1", SendAgain(), clock=clock)
    with pytest.raises(
        Conflict, match=rf"on x1 is failed permission_denied.*`herald post retry {post_id} --channel x1`"
    ):
        resolve_post(post_id, "x1", Landed("https://example.org/p/1"), clock=clock)
    later = create_post(channels=["n1"], parts=["later"], at=datetime.now(UTC) + timedelta(hours=1))
    with pytest.raises(Conflict, match="is pending, not an attempt in doubt"):
        resolve_post(later, "n1", SendAgain(), clock=clock)


@pytest.mark.parametrize(
    ("url", "platform_id", "message"),
    [
        ("not a url", None, "give the post's address on the platform"),
        ("ftp://host/p/1", None, "give the post's address on the platform"),
        ("https://host/", None, "give the post's id with --platform-id"),
    ],
)
def test_landed_with_an_address_that_is_not_one_is_refused(
    none_channel: str, platform: Sandbox, clock: ManualClock, url: str, platform_id: str | None, message: str
) -> None:
    post_id = held_in_doubt(none_channel, clock, platform)
    with pytest.raises(UserError, match=message):
        resolve_post(post_id, none_channel, Landed(url, platform_id), clock=clock)
    assert show_post(post_id).deliveries[0].status is DeliveryStatus.HELD


def test_landed_takes_the_fence_so_a_dead_workers_attempt_is_fenced_out_and_a_live_one_is_waited_for(
    none_channel: str, platform: Sandbox, clock: ManualClock, herald: Settings
) -> None:
    post_id = held_in_doubt(none_channel, clock, platform)
    with db.transaction() as s:
        before = s.get_one(Post, post_id).fence
        s.execute(
            update(Post)
            .where(Post.id == post_id)
            .values(lease_owner="a-worker", lease_expires_at=clock.now() + timedelta(seconds=herald.lease_seconds))
        )
    with pytest.raises(Conflict, match=f"post {post_id} is being published by a worker right now"):
        resolve_post(post_id, none_channel, Landed("https://example.org/p/7"), clock=clock)

    clock.advance(herald.lease_seconds + herald.grace_seconds + 1)  # that worker died
    resolve_post(post_id, none_channel, Landed("https://example.org/p/7", "seven"), clock=clock)

    with db.reading() as s:
        post = s.get_one(Post, post_id)
        assert post.fence == before + 1 and post.lease_owner is None
    # The dead worker's attempt, writing with its fence, changes nothing.
    assert renew_lease(post_id, before, clock.now(), herald.lease_seconds) is False
    assert show_post(post_id).deliveries[0].platform_id == "seven"


def test_a_thread_part_in_doubt_resolved_landed_and_the_rest_of_the_thread_goes_out(
    none_channel: str, platform: Sandbox, clock: ManualClock, herald: Settings
) -> None:
    platform.faults(drop_after_accept=1.0, after=1, times=1, strategies=["none"])  # part 2's answer is lost
    post_id = create_post(channels=[none_channel], parts=["1/3", "2/3", "3/3"])
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason, d.progress) == (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, "1/3")
    first, second = platform.posts("none")

    done = resolve_post(post_id, none_channel, Landed(f"{platform.url}/p/{second['id']}"), clock=clock)
    assert (done.part, done.delivery_status) == (1, DeliveryStatus.PENDING)
    job.publish_post(post_id)

    (d,) = show_post(post_id).deliveries
    assert (d.status, d.progress) == (DeliveryStatus.PUBLISHED, "3/3")
    copies = platform.posts("none")
    assert [p["text"] for p in copies] == ["1/3", "2/3", "3/3"]
    assert copies[2]["reply_to"] == second["id"]  # part 3 replies to the part a person resolved
    with db.reading() as s:
        (publication,) = s.execute(select(Publication).where(Publication.post_id == post_id)).scalars()
        assert publication.platform_id == first["id"]  # the thread's first part: what people open


# -- reconnect ------------------------------------------------------------------------


def test_a_reconnect_lifts_the_401_hold_with_a_fresh_budget_and_the_timeline_says_so(
    herald: Settings, sandbox_url: str, platform: Sandbox, clock: ManualClock
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("lapsed", "sandbox-none", {"base_url": sandbox_url, "token": "t-revoked"})
    post_id = create_post(channels=["lapsed"], parts=["after the reconnect"])
    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason) == (DeliveryStatus.HELD, Reason.AUTH_EXPIRED)
    with pytest.raises(UserError, match="reconnect the channel: `herald channel reconnect lapsed"):
        retry_post(post_id, clock=clock)

    done = reconnect_channel("lapsed", {"token": "t-renewed"})
    assert done.armed == (post_id,)
    job.publish_post(post_id)

    assert show_post(post_id).status is PostStatus.PUBLISHED
    assert len(platform.posts("none")) == 1
    (action,) = timeline(post_id).deliveries[0].actions
    assert action.action == "reconnect" and "auth_expired" in action.detail
    with db.reading() as s:
        delivery = s.execute(select(Delivery).where(Delivery.post_id == post_id)).scalar_one()
        assert (delivery.attempts, delivery.budget_start) == (2, 1)


# -- health and alarms -----------------------------------------------------------------


def test_health_counts_what_needs_a_person_and_the_stops_and_is_never_healthy_with_them(
    two: dict[str, str], none_channel_too: str, platform: Sandbox, clock: ManualClock
) -> None:
    tick()
    assert health().healthy is True and health().needs_person == 0

    failed = create_post(channels=["x1"], parts=["forbidden"])
    job.publish_post(failed)
    held_in_doubt(none_channel_too, clock, platform)
    waiting = create_post(channels=["n1"], parts=["approve me"], needs_approval=True)
    job.publish_post(waiting)
    stuck = create_post(channels=["n1"], parts=["its worker died"])
    with db.transaction() as s:  # a claim whose worker died mid-call, its lease run out
        s.execute(update(Post).where(Post.id == stuck).values(status=PostStatus.PUBLISHING, fence=1))
        s.execute(update(Post).where(Post.id == stuck).values(lease_owner="dead", lease_expires_at=clock.now()))
        s.execute(update(Delivery).where(Delivery.post_id == stuck).values(status=DeliveryStatus.SENDING))
    set_emergency_stop(True, "default")
    tick()

    report = health(clock)
    assert (report.held, report.failed, report.in_doubt, report.needs_person) == (2, 1, 2, 4)
    assert dict(report.held_reasons) == {"ambiguous_outcome": 1, "approval_pending": 1}
    assert (report.emergency_stop, report.stopped_accounts) == (False, ("default",))
    assert report.healthy is False and report.state == "needs_person"
    assert any("herald resume --account NAME" in line for line in report.attention)
    assert any("1 delivery(ies) failed" in line for line in report.attention)

    set_emergency_stop(True)
    assert health(clock).emergency_stop is True
    assert any("emergency stop is ON: nothing is sent" in line for line in health(clock).attention)


@pytest.fixture
def none_channel_too(herald: Settings, sandbox_url: str) -> str:
    add_channel("x9", "sandbox-none", {"base_url": sandbox_url, "token": "t-ok"})
    return "x9"


@pytest.mark.parametrize("query", [waiting_deliveries(), stuck_sending(datetime(2026, 11, 30, tzinfo=UTC))])
def test_the_health_counts_use_an_index_not_a_full_scan(herald: Settings, query: Any) -> None:
    lines = plan(query)
    assert not [line for line in lines if line.startswith("SCAN deliveries") or "Seq Scan on deliveries" in line]


def test_an_alarm_is_resolved_by_hand_once_and_unknown_ones_are_refused(herald: Settings, sandbox_url: str) -> None:
    add_channel("w1", "sandbox-native", {"base_url": sandbox_url})
    then = datetime.now(UTC) - timedelta(minutes=3)
    create_post(channels=["w1"], parts=["late"], clock=ManualClock(then))  # made then, for then
    Redis.from_url(herald.redis_url).flushdb()  # nothing ran it
    tick()
    (alarm,) = list_alarms()

    resolved = resolve_alarm(alarm.id)
    assert (resolved.id, resolved.state) == (alarm.id, "resolved") and resolved.resolved_at is not None
    assert list_alarms() == []
    with pytest.raises(Conflict, match=f"alarm {alarm.id} was resolved already"):
        resolve_alarm(alarm.id)
    with pytest.raises(NotFound, match="no alarm 999; `herald alarms` lists the open ones"):
        resolve_alarm(999)


def test_a_part_left_sending_by_a_failed_delivery_stays_in_doubt_through_a_retry(
    none_channel: str, platform: Sandbox, clock: ManualClock
) -> None:
    """A retry never forgets that a copy may exist: the next claim settles it by the strategy."""
    post_id = create_post(channels=[none_channel], parts=["rejected after a doubt"])
    with db.transaction() as s:  # an earlier attempt in doubt, then a refusal: failed, part still sending
        s.execute(update(Post).where(Post.id == post_id).values(status=PostStatus.FAILED, fence=1))
        s.execute(
            update(Delivery)
            .where(Delivery.post_id == post_id)
            .values(status=DeliveryStatus.FAILED, reason=Reason.CONTENT_REJECTED, attempts=2)
        )
        delivery_id = s.execute(select(Delivery.id).where(Delivery.post_id == post_id)).scalar_one()
        s.execute(update(DeliveryPart).where(DeliveryPart.delivery_id == delivery_id).values(state=PartState.SENDING))
    retry_post(post_id, clock=clock)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.parts[0].state) == (DeliveryStatus.PENDING, PartState.SENDING)

    job.publish_post(post_id)
    (d,) = show_post(post_id).deliveries
    assert (d.status, d.reason) == (DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME)
    assert platform.posts("none") == []  # held for a person, not resent

"""Refusals through the services, with real SQL and the sandbox: a slot in the past, an
empty part, a cancel or an approval that would change nothing – each refused with what
to do, and nothing created or changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from core.config import Settings
from core.domain.errors import Conflict, UserError
from core.runtime.clock import ManualClock
from core.runtime.queue import post_queue
from core.services.channels import add_channel
from core.services.posts import approve_post, cancel_post, create_post, reschedule_post
from core.store import db
from core.store.models import Post
from tests.integration.conftest import Sandbox, drain, post_json

pytestmark = pytest.mark.integration


def now() -> datetime:
    return datetime.now(UTC)


def post_count() -> int:
    with db.reading() as s:
        return s.execute(select(func.count()).select_from(Post)).scalar_one()


# -- times --------------------------------------------------------------------------------


def test_a_slot_in_the_past_is_refused_at_create_and_nothing_is_created(channels: dict[str, str]) -> None:
    with pytest.raises(UserError) as info:
        create_post(
            channels=[channels["native"]], parts=["too late"], at=now() - timedelta(seconds=150), zone="Asia/Tokyo"
        )
    # Whole minutes, counted down: 150 s by this machine's clock is "2 min" whether the
    # database's clock lags it by a round trip (it never leads) or not – away from the
    # boundaries where the count turns (120 s, 180 s).
    assert "2 min in the past: give a later --at or --in, or --now to publish at once" in str(info.value)
    assert "+09:00" in str(info.value)  # named in the zone it was given in
    assert post_count() == 0
    assert post_queue().count == 0


def test_a_slot_a_few_seconds_past_is_taken_and_goes_out_at_once(channels: dict[str, str], platform: Sandbox) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["just now"], at=now() - timedelta(seconds=20))
    drain()
    assert post_json(post_id)["status"] == "published"
    assert [p["text"] for p in platform.posts()] == ["just now"]


def test_the_past_is_judged_by_the_one_clock_not_this_machines(channels: dict[str, str]) -> None:
    slot = now() + timedelta(minutes=10)  # ahead by this machine's clock...
    with pytest.raises(UserError, match="in the past"):
        create_post(channels=[channels["native"]], parts=["x"], at=slot, clock=ManualClock(slot + timedelta(minutes=2)))
    assert post_count() == 0


def test_a_move_into_the_past_is_refused_and_the_slot_stays(channels: dict[str, str]) -> None:
    slot = (now() + timedelta(hours=1)).replace(microsecond=0)
    post_id = create_post(channels=[channels["native"]], parts=["stay"], at=slot)
    with pytest.raises(UserError, match="in the past: give a later --at or --in, or --now to publish at once"):
        reschedule_post(post_id, now() - timedelta(hours=1))
    assert datetime.fromisoformat(post_json(post_id)["scheduled_at"]) == slot


def test_a_move_to_now_publishes_at_once(channels: dict[str, str], platform: Sandbox) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["sooner"], at=now() + timedelta(hours=1))
    before = now()
    reschedule_post(post_id, None)
    assert before - timedelta(seconds=1) <= datetime.fromisoformat(post_json(post_id)["scheduled_at"]) <= now()
    assert post_queue().job_ids == [f"post-{post_id}"]  # due: queued, not scheduled for later
    drain()
    assert post_json(post_id)["status"] == "published"


# -- parts --------------------------------------------------------------------------------


def test_an_empty_part_is_refused_by_its_number_and_nothing_is_created(channels: dict[str, str]) -> None:
    with pytest.raises(UserError) as info:
        create_post(channels=[channels["native"]], parts=["1/3", "  ", "3/3"])
    assert str(info.value) == "part 2 of 3 is empty: give it text, or leave it out"
    assert post_count() == 0


# -- cancel -------------------------------------------------------------------------------


def test_cancelling_a_published_post_is_refused_saying_why(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["out"])
    drain()
    with pytest.raises(Conflict) as info:
        cancel_post(post_id)
    assert str(info.value) == (
        f"post {post_id} is already published on every channel: there is nothing left to cancel "
        "(herald does not delete published posts; remove it on the platform)"
    )
    assert post_json(post_id)["status"] == "published"


def test_cancelling_twice_is_refused_the_second_time(channels: dict[str, str]) -> None:
    post_id = create_post(
        channels=[channels["native"], channels["none"]], parts=["never"], at=now() + timedelta(hours=1)
    )
    done = cancel_post(post_id)
    assert (done.status, done.cancelled, done.published, done.ended, done.kept_parts) == (
        "cancelled",
        ("n1", "x1"),
        (),
        (),
        0,
    )
    assert post_queue().count == 0 and post_queue().scheduled_job_registry.count == 0
    with pytest.raises(Conflict) as info:
        cancel_post(post_id)
    assert str(info.value) == f"post {post_id} is already cancelled: there is nothing left to cancel"


def test_cancelling_a_partly_published_post_cancels_the_rest_and_says_what_stays(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("lapsed", "sandbox-native", {"base_url": sandbox_url, "token": "t-revoked"})
    post_id = create_post(channels=[channels["native"], "lapsed"], parts=["half"])
    drain()
    assert {d["channel"]: d["status"] for d in post_json(post_id)["deliveries"]} == {
        "n1": "published",
        "lapsed": "held",
    }

    done = cancel_post(post_id)

    assert (done.status, done.cancelled, done.published, done.ended) == (
        "partially_published",
        ("lapsed",),
        ("n1",),
        (),
    )
    assert {d["channel"]: d["status"] for d in post_json(post_id)["deliveries"]} == {
        "n1": "published",
        "lapsed": "cancelled",
    }
    with pytest.raises(Conflict, match="is partially_published: no channel is waiting to be sent"):
        cancel_post(post_id)


def test_cancelling_a_thread_cut_short_cancels_its_unsent_parts_and_keeps_the_published(
    channels: dict[str, str], platform: Sandbox, slow_retries: Settings, clock: ManualClock
) -> None:
    platform.faults(error_before_accept=1.0, after=1, strategies=["native"])  # part 2 on: 503, nothing stored
    post_id = create_post(channels=[channels["native"]], parts=["1/3", "2/3", "3/3"])
    drain()
    assert post_json(post_id)["deliveries"][0]["status"] == "retry_wait"

    done = cancel_post(post_id)

    assert (done.status, done.cancelled, done.kept_parts) == ("partially_published", ("n1",), 1)
    (delivery,) = post_json(post_id)["deliveries"]
    assert (delivery["status"], delivery["progress"]) == ("cancelled", "1/3")
    assert [p["state"] for p in delivery["parts"]] == ["published", "unsent", "unsent"]
    platform.faults()
    clock.advance(slow_retries.backoff_max + 1)
    drain()
    assert [p["text"] for p in platform.posts()] == ["1/3"]  # the rest never goes out


# -- approve ------------------------------------------------------------------------------


def test_approving_a_post_that_needs_no_approval_is_refused(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["free"], at=now() + timedelta(hours=1))
    with pytest.raises(Conflict) as info:
        approve_post(post_id)
    assert str(info.value) == (
        f"post {post_id} needs no approval (it was created without --needs-approval): "
        f"nothing to approve; it goes out at its slot (`herald post show {post_id}`)"
    )
    assert post_json(post_id)["approval"] == "not_required"


def test_approving_twice_is_refused_the_second_time_and_publishes_once(
    channels: dict[str, str], platform: Sandbox
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["reviewed"], needs_approval=True)
    drain()
    assert post_json(post_id)["deliveries"][0]["reason"] == "approval_pending"
    approve_post(post_id)
    drain()
    with pytest.raises(Conflict) as info:
        approve_post(post_id)
    assert str(info.value) == f"post {post_id} is already approved: nothing to do (`herald post show {post_id}`)"
    assert [p["text"] for p in platform.posts()] == ["reviewed"]


def test_approving_a_cancelled_post_is_refused(channels: dict[str, str]) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["dropped"], needs_approval=True)
    cancel_post(post_id)
    with pytest.raises(Conflict, match=f"post {post_id} is cancelled: approving it would send nothing"):
        approve_post(post_id)
    assert post_json(post_id)["approval"] == "pending"


def test_cancelling_a_failed_post_gives_up_on_it_so_it_no_longer_needs_a_person(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    from core.services.health import health

    platform.token("t-forbidden", "forbidden")
    add_channel("barred", "sandbox-native", {"base_url": sandbox_url, "token": "t-forbidden"})
    post_id = create_post(channels=["barred"], parts=["no way"])
    drain()
    assert post_json(post_id)["status"] == "failed"
    assert health().failed == 1

    done = cancel_post(post_id)

    assert (done.status, done.cancelled) == ("cancelled", ("barred",))
    assert health().failed == 0
    assert platform.posts() == []

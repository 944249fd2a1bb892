"""Posting slots and add-to-queue (§12) over real SQL: the next free slot, what frees one,
several channels, the refusals, an idempotent repeat, and two creates at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from core.config import Settings
from core.domain.errors import Conflict, NotFound, UserError
from core.domain.posting_slots import parse_slots
from core.runtime.clock import ManualClock
from core.services import queue
from core.services.channels import add_channel, remove_channel
from core.services.posting_slots import PostingSlotsView, change_posting_slots, show_posting_slots
from core.services.posts import cancel_post, create_post, show_post, submit_post
from core.store import db
from core.store.models import Post, PostingSlot

pytestmark = pytest.mark.integration

#: A Monday, 09:00 in Berlin (winter: UTC+1).
START = datetime(2030, 1, 7, 8, 0, tzinfo=UTC)


def at(day: int, hour: int) -> datetime:
    """``hour`` UTC on the ``day``-th day of the week of :data:`START` (0: that Monday)."""
    return START.replace(hour=hour) + timedelta(days=day)


def set_slots(channel: str, *specs: str, zone: str | None = None, clear: bool = False) -> PostingSlotsView:
    return change_posting_slots(
        channel, add=[s for spec in specs for s in parse_slots(spec)], zone=zone, clear=clear, clock=ManualClock(START)
    )


def queued(channels: list[str], clock: ManualClock, **given: Any) -> int:
    return create_post(channels=channels, parts=["queued"], queue=True, clock=clock, **given)


def slot_of(post_id: int) -> datetime:
    return show_post(post_id).scheduled_at.astimezone(UTC)


def posts() -> int:
    with db.reading() as s:
        return int(s.execute(select(func.count()).select_from(Post)).scalar_one())


def test_successive_posts_take_successive_free_slots_and_a_cancel_frees_one(channels: dict[str, str]) -> None:
    clock = ManualClock(START)
    set_slots("n1", "mon-fri 09:00,13:00", zone="Europe/Berlin")  # 08:00 and 12:00 UTC in winter

    first, second, third = (queued(["n1"], clock) for _ in range(3))

    # Monday 09:00 is now: not free. Then Monday 13:00, Tuesday 09:00 and 13:00.
    assert [slot_of(p) for p in (first, second, third)] == [at(0, 12), at(1, 8), at(1, 12)]
    shown = show_post(first)
    assert (shown.zone, shown.scheduled_at.isoformat()) == ("Europe/Berlin", "2030-01-07T13:00:00+01:00")

    cancel_post(second)
    assert slot_of(queued(["n1"], clock)) == at(1, 8)


def test_only_a_post_on_the_channel_that_is_not_a_draft_takes_a_slot(channels: dict[str, str]) -> None:
    clock = ManualClock(START)
    set_slots("n1", "mon-fri 09:00,13:00", zone="Europe/Berlin")
    create_post(channels=["n1"], parts=["a draft"], at=at(0, 12), draft=True, clock=clock)
    create_post(channels=["r1"], parts=["another channel"], at=at(1, 8), clock=clock)
    create_post(channels=["n1"], parts=["given its slot"], at=at(1, 12), clock=clock)

    assert [slot_of(queued(["n1"], clock)) for _ in range(3)] == [at(0, 12), at(1, 8), at(2, 8)]


def test_a_slot_in_the_past_or_now_is_never_taken(channels: dict[str, str]) -> None:
    set_slots("n1", "daily 09:00")
    clock = ManualClock(at(0, 9))
    assert slot_of(queued(["n1"], clock)) == at(1, 9)
    clock.set(at(1, 9) - timedelta(seconds=1))
    assert slot_of(queued(["n1"], clock)) == at(2, 9)  # the one a second ahead is taken already


def test_several_channels_take_the_first_instant_free_on_every_one(channels: dict[str, str]) -> None:
    clock = ManualClock(START)
    set_slots("n1", "mon-fri 09:00", zone="Europe/Berlin")  # 08:00 UTC
    set_slots("x1", "daily 08:00,12:00")  # UTC
    assert [slot_of(queued(["x1"], clock)) for _ in range(2)] == [at(0, 12), at(1, 8)]

    both = queued(["n1", "x1"], clock)

    assert slot_of(both) == at(2, 8)  # Tuesday's 08:00 is taken on x1
    assert show_post(both).zone == "Europe/Berlin"  # the first channel's slots' zone
    other_way = queued(["x1", "n1"], clock, zone="America/New_York")
    assert (slot_of(other_way), show_post(other_way).zone) == (at(3, 8), "America/New_York")
    assert {d.channel for d in show_post(both).deliveries} == {"n1", "x1"}


def test_channels_with_no_common_slot_or_none_at_all_are_refused_and_nothing_is_made(
    channels: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock(START)
    set_slots("n1", "mon 09:00", zone="Europe/Berlin")
    set_slots("x1", "tue 09:00")

    with pytest.raises(UserError) as none_common:
        queued(["n1", "x1"], clock)
    assert str(none_common.value) == (
        "channels n1 and x1 share no free posting slot in the next 366 days: "
        "add the post to the queue one channel at a time, or give it a slot with --at"
    )
    with pytest.raises(UserError) as bare:
        queued(["n1", "r1"], clock)
    assert str(bare.value) == (
        "channel r1 has no posting slots to queue to: add some with "
        '`herald channel slots r1 --add "mon-fri 09:00"`, or give the post a slot with --at'
    )
    monkeypatch.setattr(queue, "WINDOW", timedelta(days=7))
    queued(["x1"], clock)
    with pytest.raises(UserError, match=r"^channel x1 has no free posting slot in the next 7 days: add slots with"):
        queued(["x1"], clock)
    assert posts() == 1


def test_queue_is_not_taken_with_a_slot_or_as_a_draft(channels: dict[str, str]) -> None:
    clock = ManualClock(START)
    set_slots("n1", "daily 09:00")
    with pytest.raises(UserError, match="--queue gives the post its channels' next free posting slot"):
        queued(["n1"], clock, at=at(3, 9))
    with pytest.raises(UserError, match="--queue gives the post"):
        queued(["n1"], clock, draft=True)
    with pytest.raises(UserError, match="unknown time zone 'Mars/Olympus'"):
        queued(["n1"], clock, zone="Mars/Olympus")
    assert posts() == 0


def test_a_repeated_create_with_its_idempotency_key_answers_the_first_post_not_a_new_slot(
    channels: dict[str, str],
) -> None:
    clock = ManualClock(START)
    set_slots("n1", "daily 09:00")
    first = submit_post(channels=["n1"], parts=["once"], queue=True, idempotency_key="q-1", clock=clock)
    clock.advance(3600)
    again = submit_post(channels=["n1"], parts=["once"], queue=True, idempotency_key="q-1", clock=clock)

    assert (again.post_id, again.existed) == (first.post_id, True)
    assert slot_of(first.post_id) == at(0, 9) and posts() == 1
    assert slot_of(queued(["n1"], clock)) == at(1, 9)  # the repeat took no slot
    with pytest.raises(Conflict, match="queue differ"):
        submit_post(channels=["n1"], parts=["once"], idempotency_key="q-1", clock=clock)


def test_two_creates_at_once_take_two_slots(channels: dict[str, str]) -> None:
    clock = ManualClock(START)
    set_slots("n1", "daily 09:00")
    racers = 4
    start = threading.Barrier(racers)
    made: list[int] = []
    errors: list[BaseException] = []

    def create() -> None:
        start.wait()
        try:
            made.append(queued(["n1"], clock))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert sorted(slot_of(p) for p in made) == [at(day, 9) for day in range(racers)]


# -- setting the slots -------------------------------------------------------------------


def test_slots_are_added_listed_removed_and_cleared(channels: dict[str, str]) -> None:
    assert show_posting_slots("n1") == PostingSlotsView("n1", None, (), (), ())
    added = set_slots("n1", "mon-fri 09:00,13:00", "sat 10:00", zone="Europe/Berlin")
    assert (added.zone, added.rules) == ("Europe/Berlin", ("mon-fri 09:00,13:00", "sat 10:00"))
    assert [f"{s.day} {s.time}" for s in added.slots[:3]] == ["mon 09:00", "mon 13:00", "tue 09:00"]
    assert [t.isoformat() for t in added.next_free] == [
        "2030-01-07T13:00:00+01:00",
        "2030-01-08T09:00:00+01:00",
        "2030-01-08T13:00:00+01:00",
        "2030-01-09T09:00:00+01:00",
        "2030-01-09T13:00:00+01:00",
    ]

    removed = change_posting_slots("n1", remove=parse_slots("sat 10:00") + parse_slots("wed 13:00"))
    assert removed.rules == ("mon,tue,thu,fri 09:00,13:00", "wed 09:00")
    with pytest.raises(UserError, match=r"^channel n1 has no posting slot sun 10:00: `herald channel slots n1` lists"):
        change_posting_slots("n1", remove=parse_slots("sun 10:00"))
    assert set_slots("n1", "sun 10:00").zone == "Europe/Berlin"  # no zone given: the channel's

    cleared = change_posting_slots("n1", clear=True)
    assert (cleared.zone, cleared.slots, cleared.next_free) == (None, (), ())
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(PostingSlot)).scalar_one() == 0


def test_a_channels_slots_share_one_zone(channels: dict[str, str]) -> None:
    set_slots("n1", "mon 09:00", zone="Europe/Berlin")
    with pytest.raises(UserError) as other:
        set_slots("n1", "tue 09:00", zone="America/New_York")
    assert str(other.value) == (
        "channel n1's posting slots are in Europe/Berlin: add or remove them in it (leave --zone out), move them "
        "all first with `herald channel slots n1 --zone America/New_York`, or replace them with --clear"
    )
    moved = change_posting_slots("n1", zone="America/New_York", clock=ManualClock(START))
    assert (moved.zone, moved.rules) == ("America/New_York", ("mon 09:00",))  # the same local time
    assert moved.next_free[0].isoformat() == "2030-01-07T09:00:00-05:00"
    replaced = set_slots("n1", "fri 18:00", zone="Asia/Tokyo", clear=True)
    assert (replaced.zone, replaced.rules) == ("Asia/Tokyo", ("fri 18:00",))
    assert set_slots("x1", "mon 09:00").zone == "UTC"  # a channel's first slots: UTC unless given
    with pytest.raises(UserError, match="unknown time zone 'Europe'"):
        set_slots("x1", "mon 09:00", zone="Europe")
    with pytest.raises(NotFound, match="no channel named 'nope'"):
        show_posting_slots("nope")


def test_a_removed_channel_takes_its_slots_with_it(herald: Settings, sandbox_url: str) -> None:
    add_channel("gone", "sandbox-native", {"base_url": sandbox_url})
    set_slots("gone", "daily 09:00")
    assert remove_channel("gone").kept_as is None
    add_channel("gone", "sandbox-native", {"base_url": sandbox_url})
    assert show_posting_slots("gone").slots == ()

"""`herald channel slots` and `herald post create --queue` as people use them: real
processes, real database and Redis, this machine's clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.config import Settings
from core.domain.posting_slots import parse_slots
from core.services.channels import add_channel
from core.services.posting_slots import change_posting_slots, show_posting_slots
from core.services.posts import cancel_post, create_post, show_post
from tests.integration.test_cli_input import refused
from tests.integration.test_editing_cli import ok

pytestmark = pytest.mark.integration

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def q_channels(herald: Settings, sandbox_url: str) -> None:
    for name in ("q1", "q2"):
        add_channel(name, "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"})


def queue(*channels: str) -> int:
    args = [a for name in channels for a in ("--channel", name)]
    return int(ok("post", "create", *args, "--text", "queued", "--queue").strip())


def local_slot(post_id: int) -> datetime:
    return show_post(post_id).scheduled_at.astimezone(BERLIN)


def following(slot: datetime) -> datetime:
    """The slot after ``slot`` among daily 06:00 and 18:00 in Berlin, as a wall time."""
    if slot.hour == 6:
        return slot.replace(hour=18)
    return (slot.replace(tzinfo=None, hour=6) + timedelta(days=1)).replace(tzinfo=BERLIN)


def test_slots_are_set_and_listed_and_posts_take_the_next_free_one(q_channels: None) -> None:
    started = datetime.now(UTC)
    listed = ok("channel", "slots", "q1", "--add", "daily 06:00,18:00", "--add", "sat 10:00", "--zone", "Europe/Berlin")
    lines = listed.splitlines()
    assert lines[:3] == [
        "channel q1: posting slots in Europe/Berlin",
        "  mon-fri,sun 06:00,18:00",
        "  sat 06:00,10:00,18:00",
    ]
    assert len(lines) == 4 and lines[3].startswith("next free: ") and lines[3].count("+0") == 5
    shown = json.loads(ok("channel", "slots", "q1", "--remove", "sat 10:00", "--json"))
    assert (shown["zone"], shown["rules"]) == ("Europe/Berlin", ["mon-sun 06:00,18:00"])

    first, second = queue("q1"), queue("q1")

    one, two = local_slot(first), local_slot(second)
    assert (one.hour, one.minute) in ((6, 0), (18, 0)) and started < one < started + timedelta(hours=13)
    assert two.replace(tzinfo=None) == following(one).replace(tzinfo=None)
    assert show_post(first).zone == "Europe/Berlin"
    assert shown["next_free"][:2] == [one.isoformat(), two.isoformat()]
    cancel_post(first)
    assert local_slot(queue("q1")) == one  # the cancel freed it


def test_several_channels_take_a_common_slot_or_are_refused(q_channels: None) -> None:
    change_posting_slots("q1", add=parse_slots("daily 06:00,18:00"), zone="Europe/Berlin")
    assert refused("post", "create", "--channel", "q1", "--channel", "q2", "--text", "x", "--queue") == (
        'channel q2 has no posting slots to queue to: add some with `herald channel slots q2 --add "mon-fri 09:00"`, '
        "or give the post a slot with --at"
    )
    change_posting_slots("q2", add=parse_slots("daily 07:00"))  # UTC: never 06:00 or 18:00 in Berlin
    assert refused("post", "create", "--channel", "q1", "--channel", "q2", "--text", "x", "--queue") == (
        "channels q1 and q2 share no free posting slot in the next 366 days: "
        "add the post to the queue one channel at a time, or give it a slot with --at"
    )
    change_posting_slots("q2", add=parse_slots("daily 06:00"), clear=True, zone="Europe/Berlin")
    alone = create_post(channels=["q1"], parts=["alone"], queue=True)

    both = queue("q1", "q2")

    slot = local_slot(both)
    assert (slot.hour, slot.minute) == (6, 0) and slot != local_slot(alone)
    assert {d.channel for d in show_post(both).deliveries} == {"q1", "q2"}


def test_bad_slots_and_queue_beside_a_slot_are_refused_in_one_line(q_channels: None) -> None:
    assert refused("channel", "slots", "q1", "--add", "funday 09:00").startswith(
        "'funday' in 'funday 09:00' is not a day: write mon, tue, wed, thu, fri, sat or sun"
    )
    assert refused("channel", "slots", "q1", "--add", "mon 25:00") == (
        "'25:00' in 'mon 25:00' is not a time of day: write HH:MM from 00:00 to 23:59, e.g. 09:00"
    )
    assert refused("channel", "slots", "q1", "--add", "mon 09:00", "--zone", "Mars/Base").startswith(
        "unknown time zone 'Mars/Base'"
    )
    assert refused("post", "create", "--channel", "q1", "--text", "x", "--queue", "--in", "1h") == (
        "--queue gives the post its channels' next free posting slot: give it without --in"
    )
    assert show_posting_slots("q1").slots == ()  # nothing was kept

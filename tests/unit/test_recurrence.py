"""Recurring rules (core.domain.recurrence): counted from a slot, a rule gives exactly the
slots it gives counted from its start, so a release's cost grows with the slots since the
last one, not since the schedule began."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from core.domain.errors import UserError
from core.domain.recurrence import Rule, parse_rule, plan_release

START = datetime(2027, 1, 5, 7, 37, 12, tzinfo=UTC)
#: 02:30 in Berlin: a rule that takes its hour from the start meets the spring-forward gap.
GAP_START = datetime(2027, 3, 20, 1, 30, tzinfo=UTC)
RULES = [
    ("FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,FR;BYHOUR=10;BYMINUTE=0", "Europe/Berlin", START),
    ("FREQ=WEEKLY", "Europe/Berlin", START),  # its weekday, hour and minute come from the start
    ("FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=18;BYMINUTE=30", "America/New_York", START),
    ("FREQ=MONTHLY;INTERVAL=3", "Australia/Sydney", START),
    ("FREQ=HOURLY;INTERVAL=5;BYMINUTE=15", "Europe/Berlin", START),
    ("FREQ=MINUTELY;INTERVAL=97", "Europe/Berlin", START),
    ("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "Europe/Berlin", START),  # in the spring-forward gap once a year
    ("FREQ=YEARLY;BYMONTH=3,10;BYMONTHDAY=-1;BYHOUR=2;BYMINUTE=30", "Europe/Berlin", START),
    ("FREQ=DAILY;UNTIL=20280101T000000Z", "UTC", START),
    ("FREQ=DAILY", "Europe/Berlin", GAP_START),  # 02:30 every day, 03:30 on the 28th of March
]


@pytest.mark.parametrize(("text", "zone", "start"), RULES)
def test_counted_from_any_of_its_slots_a_rule_gives_the_slots_it_gives_from_its_start(
    text: str, zone: str, start: datetime
) -> None:
    rule = parse_rule(text, zone, start)
    slots = list(islice(rule.slots_after(start), 400))
    assert slots == sorted(set(slots))
    for k in range(0, len(slots) - 12, 7):
        assert list(islice(rule.slots_since(slots[k]), 12)) == slots[k + 1 : k + 13], (text, slots[k])


def test_a_count_rule_is_counted_from_its_start() -> None:
    rule = parse_rule("FREQ=DAILY;COUNT=3;BYHOUR=10;BYMINUTE=0", "UTC", START)
    slots = list(rule.slots_after(START))
    assert len(slots) == 3
    assert list(rule.slots_since(slots[1])) == slots[2:]
    assert list(rule.slots_since(slots[2])) == []


def test_a_plan_takes_the_latest_slot_inside_the_window_and_skips_the_rest() -> None:
    rule = Rule("FREQ=DAILY;BYHOUR=10;BYMINUTE=0", "UTC", START)
    plan = plan_release(rule, START, START + timedelta(days=4, hours=1), timedelta(hours=24))
    assert plan is not None
    # Now is 2027-01-09 08:37: the slots of the 5th to the 8th came.
    assert plan.taken == datetime(2027, 1, 8, 10, 0, tzinfo=UTC)
    assert plan.skipped is not None
    assert (plan.skipped.first, plan.skipped.last, plan.skipped.count) == (
        datetime(2027, 1, 5, 10, 0, tzinfo=UTC),
        datetime(2027, 1, 7, 10, 0, tzinfo=UTC),
        3,
    )
    assert plan.next_slot == datetime(2027, 1, 9, 10, 0, tzinfo=UTC)
    assert plan_release(rule, plan.stamp, START + timedelta(days=4, hours=2), timedelta(hours=24)) is None


@pytest.mark.parametrize(
    "text", ["", "FREQ=DAILY\nFREQ=WEEKLY", "DTSTART:20270101T000000Z", "FREQ=DAILY;BYHOUR", "FREQ=DAILY;FOO=1"]
)
def test_what_is_not_one_rrule_line_is_refused(text: str) -> None:
    with pytest.raises(UserError, match="is not an RRULE"):
        parse_rule(text, "UTC", START)

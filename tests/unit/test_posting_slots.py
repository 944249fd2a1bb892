"""Posting slots (§12): days × local times in a zone, across the changes of the clocks in
both hemispheres, and the first instant free on several channels at once."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.domain.errors import UserError
from core.domain.posting_slots import (
    PostingSchedule,
    PostingSlot,
    describe,
    free_instants,
    parse_slots,
    slots_of,
)


def schedule(zone: str, *specs: str) -> PostingSchedule:
    return PostingSchedule(zone, frozenset(slot for spec in specs for slot in parse_slots(spec)))


def first(sched: PostingSchedule, after: datetime, count: int) -> list[datetime]:
    return list(itertools.islice(sched.instants(after), count))


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# -- the changes of the clocks -----------------------------------------------------------

#: Zone, the local time of a slot in its 2026 spring-forward gap (and the day), and of one
#: in the hour that repeats when it falls back (the day, and that slot's first occurrence).
CHANGES = [
    ("Europe/Berlin", date(2026, 3, 29), "02:30", date(2026, 10, 25), "02:30", utc(2026, 10, 25, 0, 30)),
    ("America/New_York", date(2026, 3, 8), "02:30", date(2026, 11, 1), "01:30", utc(2026, 11, 1, 5, 30)),
    ("Australia/Sydney", date(2026, 10, 4), "02:30", date(2026, 4, 5), "02:30", utc(2026, 4, 4, 15, 30)),
    ("Pacific/Auckland", date(2026, 9, 27), "02:30", date(2026, 4, 5), "02:30", utc(2026, 4, 4, 13, 30)),
    # Chile changes at midnight: the gap is Sunday's first hour, the repeat Saturday's last.
    ("America/Santiago", date(2026, 9, 6), "00:30", date(2026, 4, 4), "23:30", utc(2026, 4, 5, 2, 30)),
]
ZONES = [change[0] for change in CHANGES]


def test_a_weekly_0900_in_berlin_is_0900_local_on_both_sides_of_march_and_october() -> None:
    sundays = schedule("Europe/Berlin", "sun 09:00")
    # The last Sundays of March and October 2026: CET → CEST, then back.
    assert first(sundays, utc(2026, 3, 20), 3) == [utc(2026, 3, 22, 8), utc(2026, 3, 29, 7), utc(2026, 4, 5, 7)]
    assert first(sundays, utc(2026, 10, 18), 3) == [utc(2026, 10, 18, 7), utc(2026, 10, 25, 8), utc(2026, 11, 1, 8)]


@pytest.mark.parametrize("zone", ZONES)
def test_a_daily_slot_keeps_its_local_time_all_year(zone: str) -> None:
    where = ZoneInfo(zone)
    daily = schedule(zone, "daily 09:00,21:15")
    year = [i for i in first(daily, datetime(2026, 1, 1, tzinfo=where), 2 * 400) if i.astimezone(where).year == 2026]

    local = [i.astimezone(where) for i in year]
    assert {(t.hour, t.minute) for t in local} == {(9, 0), (21, 15)}
    assert len(local) == 2 * 365 and len({t.date() for t in local}) == 365
    assert year == sorted(year)
    # The year crossed both changes: two offsets, and each slot's UTC time moved by an hour.
    assert len({t.utcoffset() for t in local}) == 2
    assert len({i.time() for i in year}) == 4


@pytest.mark.parametrize(("zone", "gap_day", "gap_time"), [change[:3] for change in CHANGES])
def test_a_slot_in_the_spring_forward_gap_is_skipped_that_day(zone: str, gap_day: date, gap_time: str) -> None:
    where = ZoneInfo(zone)
    weekly = schedule(zone, f"{('mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun')[gap_day.weekday()]} {gap_time}")
    start = datetime.combine(gap_day - timedelta(days=8), time(12), tzinfo=where)

    local = [i.astimezone(where) for i in first(weekly, start, 3)]

    week = timedelta(days=7)
    assert [t.date() for t in local] == [gap_day - week, gap_day + week, gap_day + 2 * week]
    assert {t.strftime("%H:%M") for t in local} == {gap_time}


@pytest.mark.parametrize(("zone", "day", "at", "first_occurrence"), [(c[0], *c[3:]) for c in CHANGES])
def test_a_slot_in_the_repeated_hour_takes_its_first_occurrence(
    zone: str, day: date, at: str, first_occurrence: datetime
) -> None:
    where = ZoneInfo(zone)
    weekly = schedule(zone, f"{('mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun')[day.weekday()]} {at}")
    start = datetime.combine(day - timedelta(days=1), time(12), tzinfo=where)

    got = first(weekly, start, 2)

    assert got[0] == first_occurrence
    assert got[1] - got[0] == timedelta(days=7, hours=1)  # the next week, an hour later in UTC
    second_occurrence = first_occurrence + timedelta(hours=1)
    assert second_occurrence.astimezone(where).strftime("%H:%M") == at  # the same wall time...
    assert weekly.includes(first_occurrence) and not weekly.includes(second_occurrence)  # ...not a slot


def test_only_instants_after_the_start_count_and_only_whole_slots_are_included() -> None:
    daily = schedule("UTC", "daily 09:00")
    assert first(daily, utc(2026, 5, 1, 9), 1) == [utc(2026, 5, 2, 9)]
    assert first(daily, utc(2026, 5, 1, 8, 59, 59), 1) == [utc(2026, 5, 1, 9)]
    assert daily.includes(utc(2026, 5, 1, 9))
    assert not daily.includes(utc(2026, 5, 1, 9, 0, 1)) and not daily.includes(utc(2026, 5, 1, 10))
    assert first(PostingSchedule("UTC", frozenset()), utc(2026, 5, 1), 1) == []


def test_the_days_are_the_zones_not_utcs() -> None:
    # 22:00 on Friday 1 May in New York is already Saturday in UTC: Friday 23:00 there is
    # still ahead.
    late = schedule("America/New_York", "fri 23:00")
    assert first(late, utc(2026, 5, 2, 2), 2) == [utc(2026, 5, 2, 3), utc(2026, 5, 9, 3)]


# -- several channels ------------------------------------------------------------------


def test_several_channels_take_the_first_instant_that_is_a_slot_on_each() -> None:
    # Monday 15:00 in Berlin and 09:00 in New York are one instant while the two are six
    # hours apart; from 8 to 29 March 2026 New York has sprung forward and Berlin not yet.
    berlin, new_york = schedule("Europe/Berlin", "mon 15:00"), schedule("America/New_York", "mon 09:00")
    common = list(
        itertools.islice(free_instants([berlin, new_york], lambda at: False, utc(2026, 3, 2), utc(2027, 1, 1)), 2)
    )
    assert common == [utc(2026, 3, 2, 14), utc(2026, 3, 30, 13)]


def test_a_taken_instant_is_passed_over_and_none_common_within_the_window_is_none() -> None:
    daily = schedule("UTC", "daily 09:00")
    taken = {utc(2026, 5, 1, 9), utc(2026, 5, 2, 9)}
    found = free_instants([daily], taken.__contains__, utc(2026, 5, 1), utc(2026, 6, 1))
    assert next(found) == utc(2026, 5, 3, 9)

    mondays, tuesdays = schedule("UTC", "mon 09:00"), schedule("UTC", "tue 09:00")
    assert list(free_instants([mondays, tuesdays], lambda at: False, utc(2026, 5, 1), utc(2027, 5, 1))) == []
    assert list(free_instants([daily], lambda at: True, utc(2026, 5, 1), utc(2026, 5, 5))) == []


# -- as people write them ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "days", "times"),
    [
        ("mon-fri 09:00,13:00", [0, 1, 2, 3, 4], ["09:00", "13:00"]),
        ("sat 10:00", [5], ["10:00"]),
        ("mon,wed 9:05", [0, 2], ["09:05"]),
        ("Mon, Wed  18:00, 08:00", [0, 2], ["08:00", "18:00"]),
        ("fri-mon 07:00", [0, 4, 5, 6], ["07:00"]),
        ("daily 00:00 23:59", list(range(7)), ["00:00", "23:59"]),
        ("weekdays 12:00", [0, 1, 2, 3, 4], ["12:00"]),
        ("weekends,mon 12:00", [0, 5, 6], ["12:00"]),
        ("tuesday 12:00", [1], ["12:00"]),
    ],
)
def test_days_and_times_as_people_write_them(spec: str, days: list[int], times: list[str]) -> None:
    slots = parse_slots(spec)
    assert sorted({s.weekday for s in slots}) == days
    assert sorted({f"{s.at:%H:%M}" for s in slots}) == times
    assert len(slots) == len(days) * len(times)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("funday 09:00", "'funday' in 'funday 09:00' is not a day: write mon, tue"),
        ("mon-fry 09:00", "'fry' in 'mon-fry 09:00' is not a day"),
        ("mon 25:00", "'25:00' in 'mon 25:00' is not a time of day: write HH:MM from 00:00 to 23:59"),
        ("mon 09:60", "'09:60' in 'mon 09:60' is not a time of day"),
        ("mon 9am", "'9am' in 'mon 9am' is not a time of day"),
        ("mon 09:00,", "'' in 'mon 09:00,' is not a time of day"),
        ("mon", "'mon' is not a posting slot: write days, a space, then times"),
        ("", "'' is not a posting slot"),
    ],
)
def test_a_bad_slot_is_refused_naming_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(UserError) as refused:
        parse_slots(spec)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_an_unknown_zone_is_refused() -> None:
    with pytest.raises(UserError, match="unknown time zone 'Europe/Nowhere'"):
        first(schedule("Europe/Nowhere", "mon 09:00"), utc(2026, 5, 1), 1)
    with pytest.raises(UserError, match="unknown time zone 'Europe'"):  # a folder of zones, not one
        first(schedule("Europe", "mon 09:00"), utc(2026, 5, 1), 1)


def test_slots_are_described_as_they_are_written_and_read_back() -> None:
    slots = [*parse_slots("mon-fri 09:00,13:00"), *parse_slots("sat,sun 10:00"), *parse_slots("wed 18:00")]
    described = describe(slots)
    assert described == ("mon,tue,thu,fri 09:00,13:00", "wed 09:00,13:00,18:00", "sat,sun 10:00")
    assert {s for line in described for s in parse_slots(line)} == set(slots)
    assert describe(slots_of("daily", ["08:00"])) == ("mon-sun 08:00",)
    assert str(PostingSlot(4, time(9, 5))) == "fri 09:05"

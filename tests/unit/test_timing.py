"""Instants as people give them (§11), and durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.domain.errors import UserError
from core.domain.timing import parse_duration, parse_instant, show, zone


def test_instant_with_an_offset_is_converted_to_utc() -> None:
    instant, tz = parse_instant("2026-12-01T09:00:00+01:00")
    assert instant == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert instant.utcoffset() == timedelta(0)
    assert tz == "Etc/GMT-1"


def test_instant_with_a_negative_offset_is_converted_to_utc() -> None:
    instant, tz = parse_instant("2026-12-01T09:00:00-05:00")
    assert instant == datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
    assert tz == "Etc/GMT+5"


def test_instant_with_z_is_utc() -> None:
    instant, tz = parse_instant("2026-12-01T09:00:00Z")
    assert instant == datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert tz == "UTC"


def test_instant_with_an_offset_keeps_the_zone_given_for_display() -> None:
    instant, tz = parse_instant("2026-12-01T09:00:00+01:00", tz="Europe/Paris")
    assert instant == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert tz == "Europe/Paris"


def test_local_time_with_a_zone_is_converted_to_utc() -> None:
    winter, tz = parse_instant("2026-12-01T09:00", tz="Europe/Paris")
    summer, _ = parse_instant("2026-07-01T09:00", tz="Europe/Paris")
    assert winter == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert summer == datetime(2026, 7, 1, 7, 0, tzinfo=UTC)
    assert tz == "Europe/Paris"


def test_local_time_without_a_zone_is_refused() -> None:
    with pytest.raises(UserError, match="no offset"):
        parse_instant("2026-12-01T09:00")


def test_local_time_in_the_spring_forward_gap_is_refused_with_a_clear_message() -> None:
    with pytest.raises(UserError) as info:
        parse_instant("2026-03-29T02:30", tz="Europe/Paris")
    message = str(info.value)
    assert "does not exist" in message
    assert "Europe/Paris" in message
    assert "spring forward" in message


def test_local_time_next_to_the_spring_forward_gap_is_accepted() -> None:
    before, _ = parse_instant("2026-03-29T01:59", tz="Europe/Paris")
    after, _ = parse_instant("2026-03-29T03:00", tz="Europe/Paris")
    assert before == datetime(2026, 3, 29, 0, 59, tzinfo=UTC)
    assert after == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_repeated_local_time_at_fall_back_is_refused_without_fold() -> None:
    with pytest.raises(UserError) as info:
        parse_instant("2026-10-25T02:30", tz="Europe/Paris")
    message = str(info.value)
    assert "twice" in message
    assert "fold 0 (00:30 UTC)" in message
    assert "fold 1 (01:30 UTC)" in message


def test_fold_0_picks_the_first_occurrence_of_a_repeated_local_time() -> None:
    instant, tz = parse_instant("2026-10-25T02:30", tz="Europe/Paris", fold=0)
    assert instant == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert tz == "Europe/Paris"


def test_fold_1_picks_the_second_occurrence_of_a_repeated_local_time() -> None:
    instant, _ = parse_instant("2026-10-25T02:30", tz="Europe/Paris", fold=1)
    assert instant == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)


def test_parse_instant_reads_an_unambiguous_local_time_the_same_whatever_the_fold() -> None:
    # A fold that picks nothing is refused one level up, by core.services.slots.parse_slot
    # (it knows every local time given: --at and --not-before); see tests/unit/test_slots.py.
    first, _ = parse_instant("2026-12-01T09:00", tz="Europe/Paris", fold=0)
    second, _ = parse_instant("2026-12-01T09:00", tz="Europe/Paris", fold=1)
    assert first == second == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_unknown_zone_is_refused() -> None:
    with pytest.raises(UserError, match="unknown time zone 'Mars/Olympus'"):
        parse_instant("2026-12-01T09:00", tz="Mars/Olympus")
    with pytest.raises(UserError, match="unknown time zone"):
        zone("Mars/Olympus")


@pytest.mark.parametrize("text", ["tomorrow", "", "2026-13-01T09:00", "2026-12-01T25:00", "12/01/2026 9am"])
def test_garbage_text_is_refused(text: str) -> None:
    with pytest.raises(UserError, match="not an ISO 8601 time"):
        parse_instant(text, tz="Europe/Paris")


def test_instant_is_shown_back_in_its_zone() -> None:
    assert show(datetime(2026, 12, 1, 8, 0, tzinfo=UTC), "Europe/Paris") == "2026-12-01T09:00:00+01:00"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("5min", timedelta(minutes=5)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("90", timedelta(seconds=90)),
        ("1.5h", timedelta(minutes=90)),
        (" 10 sec ", timedelta(seconds=10)),
    ],
)
def test_duration_is_parsed(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "soon", "5x", "-5m", "m5", "5 m s", "1e3s"])
def test_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(UserError, match="not a duration"):
        parse_duration(text)


def test_absurdly_long_duration_is_refused_as_user_error() -> None:
    with pytest.raises(UserError):
        parse_duration("99999999999d")

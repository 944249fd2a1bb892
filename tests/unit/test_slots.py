"""Slots as people write them (§11, §13): in the past, now, out of range, and --fold."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from core import config
from core.config import Settings
from core.domain.errors import UserError
from core.domain.timing import EARLIEST, LATEST, occurrences, parse_instant, show
from core.runtime.clock import ManualClock
from core.services.slots import parse_slot, refuse_past

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def settings() -> Iterator[Settings]:
    chosen = Settings()
    config.use(chosen)
    yield chosen
    config.use(None)


# -- in the past ------------------------------------------------------------------------


def test_a_slot_further_in_the_past_than_the_tolerance_is_refused_naming_now() -> None:
    with pytest.raises(UserError) as info:
        refuse_past(NOW - timedelta(seconds=61), NOW, "Europe/Paris", tolerance=60)
    assert str(info.value) == (
        "the slot 2030-06-01T13:58:59+02:00 is 61 s in the past: give a later --at or --in, or --now to publish at once"
    )


@pytest.mark.parametrize(
    ("late", "said"),
    [(timedelta(minutes=5), "5 min"), (timedelta(hours=3), "3 h"), (timedelta(days=400), "400 days")],
)
def test_how_far_in_the_past_is_said_in_a_unit_people_read(late: timedelta, said: str) -> None:
    with pytest.raises(UserError, match=f"is {said} in the past"):
        refuse_past(NOW - late, NOW, tolerance=60)


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=59), timedelta(seconds=60), -timedelta(days=1)])
def test_a_slot_within_the_tolerance_or_ahead_is_taken(late: timedelta) -> None:
    refuse_past(NOW - late, NOW, tolerance=60)


def test_the_tolerance_is_herald_past_slot_tolerance(settings: Settings) -> None:
    assert settings.past_slot_tolerance == 60
    refuse_past(NOW - timedelta(seconds=60), NOW)
    with pytest.raises(UserError, match="in the past"):
        refuse_past(NOW - timedelta(seconds=61), NOW)
    config.use(settings.with_(past_slot_tolerance=0.0))
    with pytest.raises(UserError, match="1 s in the past"):
        refuse_past(NOW - timedelta(seconds=1), NOW)


# -- --now ------------------------------------------------------------------------------


def test_now_is_a_slot_of_now(clock: ManualClock) -> None:
    assert parse_slot(now=True, zone="Asia/Tokyo", clock=clock) == parse_slot(zone="Asia/Tokyo")
    assert parse_slot(now=True, clock=clock).at is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"at": "2030-06-01T15:00+00:00"}, "--now publishes at once: give it without --at"),
        ({"delay": "5m"}, "--now publishes at once: give it without --in"),
    ],
)
def test_now_with_at_or_in_is_refused(clock: ManualClock, given: dict[str, str], said: str) -> None:
    with pytest.raises(UserError) as info:
        parse_slot(now=True, clock=clock, **given)  # type: ignore[arg-type]
    assert str(info.value) == said


def test_a_move_needs_at_in_or_now(clock: ManualClock) -> None:
    with pytest.raises(UserError) as info:
        parse_slot(required=True, clock=clock)
    assert str(info.value) == "give the new slot with --at or --in, or --now to publish at once"
    assert parse_slot(required=True, now=True).at is None


# -- out of range -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            {"delay": "99999999d"},
            "'now + 99999999d' is out of range: herald takes instants from 0001-01-02 to 9999-12-30",
        ),
        ({"delay": "99999999999d"}, "'99999999999d' is too long a duration"),
        ({"delay": "1" + "0" * 400}, "is too long a duration"),
        ({"at": "99999-01-01"}, "year 99999 is out of range: herald takes years 1 to 9999"),
        ({"at": "0000-01-01T00:00Z"}, "'0000-01-01T00:00Z' is not an ISO 8601 time (year 0 is out of range)"),
        ({"at": "0001-01-01T00:00+01:00"}, "'0001-01-01T00:00+01:00' is out of range"),
        ({"at": "0001-01-01T05:00", "zone": "Asia/Tokyo"}, "'0001-01-01T05:00' is out of range"),
        ({"at": "9999-12-31T23:59-01:00"}, "'9999-12-31T23:59-01:00' is out of range"),
        ({"at": "2030-02-30T09:00Z"}, "is not an ISO 8601 time (day is out of range for month)"),
    ],
)
def test_an_instant_or_a_delay_out_of_range_is_a_clear_user_error(
    clock: ManualClock, given: dict[str, str], said: str
) -> None:
    with pytest.raises(UserError) as info:
        parse_slot(clock=clock, **given)  # type: ignore[arg-type]
    assert said in str(info.value)


def test_the_range_ends_are_taken_and_can_be_shown_in_any_zone() -> None:
    for instant in (EARLIEST, LATEST):
        assert parse_instant(instant.isoformat())[0] == instant
        for tz in ("Pacific/Kiritimati", "Etc/GMT+12"):
            assert show(instant, tz)


# -- --fold -------------------------------------------------------------------------------

#: The clocks fall back in Berlin from 03:00 CEST to 02:00 CET: 02:30 happens twice.
REPEATED = "2027-10-31T02:30"
#: They spring forward from 02:00 to 03:00 CEST: 02:30 never happens.
SKIPPED = "2027-03-28T02:30"


def test_fold_picks_either_occurrence_of_a_repeated_local_time() -> None:
    first = parse_slot(at=REPEATED, zone="Europe/Berlin", fold=0)
    second = parse_slot(at=REPEATED, zone="Europe/Berlin", fold=1)
    assert first.at == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)  # 02:30 CEST (+02:00)
    assert second.at == datetime(2027, 10, 31, 1, 30, tzinfo=UTC)  # 02:30 CET (+01:00), an hour later
    assert first.zone == second.zone == "Europe/Berlin"


def test_a_repeated_local_time_without_fold_is_refused_naming_both_instants() -> None:
    with pytest.raises(UserError) as info:
        parse_slot(at=REPEATED, zone="Europe/Berlin")
    assert str(info.value) == (
        "2027-10-31T02:30 happens twice in Europe/Berlin (the clocks fall back): say which with "
        "--fold 0 (00:30 UTC) or --fold 1 (01:30 UTC)"
    )


@pytest.mark.parametrize("fold", [None, 0, 1])
def test_a_local_time_that_does_not_exist_is_refused_with_or_without_fold(fold: int | None) -> None:
    with pytest.raises(UserError) as info:
        parse_slot(at=SKIPPED, zone="Europe/Berlin", fold=fold)
    assert str(info.value) == (
        "2027-03-28T02:30 does not exist in Europe/Berlin: the clocks skip over it (spring forward). "
        "Pick a time outside the gap, e.g. 2027-03-28T03:30."
    )


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({"at": "2027-10-30T02:30", "zone": "Europe/Berlin"}, "2027-10-30T02:30 happens once in Europe/Berlin"),
        ({"at": "2027-10-31T02:30+01:00"}, "2027-10-31T02:30+01:00 has an offset, so it names one instant"),
        ({"delay": "5m", "zone": "Europe/Berlin"}, "no local --at time is given"),
        ({"now": True}, "no local --at time is given"),
    ],
)
def test_fold_where_it_picks_nothing_is_refused_rather_than_ignored(
    clock: ManualClock, given: dict[str, object], why: str
) -> None:
    with pytest.raises(UserError) as info:
        parse_slot(fold=1, clock=clock, **given)  # type: ignore[arg-type]
    assert str(info.value) == (
        "--fold picks one of the two occurrences of a local time that happens twice (when the clocks fall back), "
        f"but {why}: drop --fold"
    )


def test_fold_may_be_for_the_embargo_when_only_the_embargo_is_repeated() -> None:
    slot = parse_slot(at="2027-11-02T09:00", not_before=REPEATED, zone="Europe/Berlin", fold=1)
    assert slot.not_before == datetime(2027, 10, 31, 1, 30, tzinfo=UTC)
    assert slot.at == datetime(2027, 11, 2, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "tz", "count"),
    [(REPEATED, "Europe/Berlin", 2), (SKIPPED, "Europe/Berlin", 0), ("2027-10-30T02:30", "Europe/Berlin", 1)],
)
def test_occurrences_counts_a_local_time_in_its_zone(text: str, tz: str, count: int) -> None:
    assert occurrences(text, tz) == count
    assert occurrences(f"{text}+01:00", tz) is None

"""Instants as people give them (§11): with an offset, or a local time and an IANA zone.

A local time that does not exist (the clocks sprang forward over it) is refused; one that
occurs twice (they fell back) is refused unless the caller says which one with ``fold``.

Instants are kept between :data:`EARLIEST` and :data:`LATEST`: a day inside the range
Python's datetime can hold, so showing one in any zone (offsets are under a day) never
overflows. A text or a delay beyond that is a :class:`UserError`, never an OverflowError.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.domain.errors import UserError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
_UNITS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
#: A year of five digits or more: datetime stops at 9999.
_LONG_YEAR = re.compile(r"^\s*[+-]?(\d{5,})-")

#: The earliest and latest instants herald takes (see the module docstring).
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def zone(name: str) -> ZoneInfo:
    """The IANA zone called ``name``.

    Raises:
        UserError: no such zone.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder ("Europe"), a name too long
        raise UserError(f"unknown time zone {name!r}: use an IANA name such as Europe/Paris or UTC") from None


def parse_duration(text: str) -> timedelta:
    """``30s``, ``5m``, ``2h``, ``1d`` or a number of seconds.

    Raises:
        UserError: not a duration.
    """
    match = _DURATION.match(text)
    if not match:
        raise UserError(f"{text!r} is not a duration: write e.g. 30s, 5m, 2h or 1d")
    try:
        return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    except OverflowError:
        raise UserError(f"{text!r} is too long a duration: give one that ends before the year 9999") from None


def after(instant: datetime, delay: timedelta, text: str) -> datetime:
    """``instant + delay``, the delay written as ``text``.

    Raises:
        UserError: the sum is out of range.
    """
    try:
        return in_range(instant + delay, text)
    except OverflowError:
        raise _out_of_range(text) from None


def in_range(instant: datetime, text: str) -> datetime:
    """``instant``, if herald can hold it.

    Raises:
        UserError: before :data:`EARLIEST` or after :data:`LATEST`.
    """
    if not EARLIEST <= instant <= LATEST:
        raise _out_of_range(text)
    return instant


def _out_of_range(text: str) -> UserError:
    return UserError(
        f"{text.strip()!r} is out of range: herald takes instants from "
        f"{EARLIEST.date().isoformat()} to {LATEST.date().isoformat()} (UTC)"
    )


def parse_instant(text: str, tz: str | None = None, fold: int | None = None) -> tuple[datetime, str]:
    """The UTC instant ``text`` names, and the zone to show it back in.

    Args:
        text: ISO 8601, with an offset (``2026-12-01T09:00+01:00``), or local without one
            when ``tz`` is given.
        tz: IANA zone for a local time.
        fold: 0 for the first, 1 for the second occurrence of a repeated local time.

    Raises:
        UserError: unparseable, out of range, local without a zone, or a local time that
            does not exist or is ambiguous without ``fold``.
    """
    value = _parsed(text)
    try:
        return _resolved(text, value, tz, fold)
    except OverflowError:  # a day from either end of what datetime holds, shifted past it
        raise _out_of_range(text) from None


def occurrences(text: str, tz: str) -> int | None:
    """How many times the local time ``text`` happens in ``tz``: 0 (in a spring-forward
    gap), 1, or 2 (when the clocks fall back); None when ``text`` has an offset.

    Raises:
        UserError: unparseable, or an unknown zone.
    """
    value = _parsed(text)
    if value.tzinfo is not None:
        return None
    where = zone(tz)
    first, second = value.replace(tzinfo=where, fold=0), value.replace(tzinfo=where, fold=1)
    try:
        if value not in (_roundtrip(first), _roundtrip(second)):
            return 0
        return 1 if first.utcoffset() == second.utcoffset() else 2
    except OverflowError:  # at either end of the range: no clock changes there
        return 1


def _parsed(text: str) -> datetime:
    long_year = _LONG_YEAR.match(text)
    if long_year:
        raise UserError(f"year {long_year.group(1)} is out of range: herald takes years 1 to 9999")
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        # datetime's own reason names the field ("month must be in 1..12", "year 0 is
        # out of range"), unless it only says the string is not ISO 8601.
        why = "" if str(exc).startswith("Invalid isoformat") else f" ({exc})"
        raise UserError(
            f"{text!r} is not an ISO 8601 time{why}: write e.g. 2026-12-01T09:00:00+01:00, "
            "or a local time with --zone Europe/Paris"
        ) from None


def _resolved(text: str, value: datetime, tz: str | None, fold: int | None) -> tuple[datetime, str]:
    if value.tzinfo is not None:
        return in_range(value.astimezone(UTC), text), tz or _offset_zone(value)
    if tz is None:
        raise UserError(
            f"{text!r} has no offset: add one (e.g. +01:00) or give the zone it is in (e.g. --zone Europe/Paris)"
        )
    where = zone(tz)
    first, second = value.replace(tzinfo=where, fold=0), value.replace(tzinfo=where, fold=1)
    if _roundtrip(first) != value.replace(tzinfo=None) and _roundtrip(second) != value.replace(tzinfo=None):
        # fold 0 reads it with the offset before the jump: the same instant after the gap.
        raise UserError(
            f"{text} does not exist in {tz}: the clocks skip over it (spring forward). "
            f"Pick a time outside the gap, e.g. {_roundtrip(first):%Y-%m-%dT%H:%M}."
        )
    if first.utcoffset() != second.utcoffset():
        if fold is None:
            raise UserError(
                f"{text} happens twice in {tz} (the clocks fall back): say which with --fold 0 "
                f"({first.astimezone(UTC):%H:%M} UTC) or --fold 1 ({second.astimezone(UTC):%H:%M} UTC)"
            )
        return in_range((second if fold else first).astimezone(UTC), text), tz
    return in_range(first.astimezone(UTC), text), tz


def _roundtrip(local: datetime) -> datetime:
    assert local.tzinfo is not None
    return local.astimezone(UTC).astimezone(local.tzinfo).replace(tzinfo=None)


def _offset_zone(value: datetime) -> str:
    offset = value.utcoffset() or timedelta(0)
    if offset == timedelta(0):
        return "UTC"
    # Etc/GMT zones have inverted signs; only whole hours exist there.
    hours, rest = divmod(int(offset.total_seconds()), 3600)
    return f"Etc/GMT{-hours:+d}" if rest == 0 else "UTC"


def show(instant: datetime, tz: str) -> str:
    """``instant`` in the zone it was given in, with its offset."""
    return instant.astimezone(zone(tz)).isoformat(timespec="seconds")

"""Instants as people give them (§11): with an offset, or a local time and an IANA zone.

A local time that does not exist (the clocks sprang forward over it) or that occurs
twice (they fell back) is refused unless the caller says which one with ``fold``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.domain.errors import UserError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
_UNITS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def zone(name: str) -> ZoneInfo:
    """The IANA zone called ``name``.

    Raises:
        UserError: no such zone.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
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
        raise UserError(f"{text!r} is too long a duration") from None


def parse_instant(text: str, tz: str | None = None, fold: int | None = None) -> tuple[datetime, str]:
    """The UTC instant ``text`` names, and the zone to show it back in.

    Args:
        text: ISO 8601, with an offset (``2026-12-01T09:00+01:00``), or local without one
            when ``tz`` is given.
        tz: IANA zone for a local time.
        fold: 0 for the first, 1 for the second occurrence of a repeated local time.

    Raises:
        UserError: unparseable, local without a zone, or a local time that does not
            exist or is ambiguous without ``fold``.
    """
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(
            f"{text!r} is not an ISO 8601 time: write e.g. 2026-12-01T09:00:00+01:00, "
            "or a local time with --zone Europe/Paris"
        ) from None
    if value.tzinfo is not None:
        return value.astimezone(UTC), tz or _offset_zone(value)
    if tz is None:
        raise UserError(
            f"{text!r} has no offset: add one (e.g. +01:00) or give the zone it is in (e.g. --zone Europe/Paris)"
        )
    where = zone(tz)
    first, second = value.replace(tzinfo=where, fold=0), value.replace(tzinfo=where, fold=1)
    if _roundtrip(first) != value.replace(tzinfo=None) and _roundtrip(second) != value.replace(tzinfo=None):
        raise UserError(
            f"{text} does not exist in {tz}: the clocks skip over it (spring forward). Pick a time outside the gap."
        )
    if first.utcoffset() != second.utcoffset():
        if fold is None:
            raise UserError(
                f"{text} happens twice in {tz} (the clocks fall back): say which with fold 0 "
                f"({first.astimezone(UTC):%H:%M} UTC) or fold 1 ({second.astimezone(UTC):%H:%M} UTC)"
            )
        return (second if fold else first).astimezone(UTC), tz
    return first.astimezone(UTC), tz


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

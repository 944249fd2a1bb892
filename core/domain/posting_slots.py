"""A channel's posting slots (§12): weekdays × local times in one IANA zone, Buffer-style.

"Add to queue" gives a post the next slot that is free. A slot is kept as a weekday and a
local time with its zone's name, never as a UTC instant: 09:00 in Europe/Berlin is 08:00
UTC in winter and 07:00 in summer, and stays 09:00 local on both sides of the change.

On the days the clocks change, a local time may not exist or may happen twice. A slot in
the spring-forward gap is skipped that day (there is no 02:30 to post at); one in the
hour the clocks fall back takes its first occurrence, so it is one instant, never two.

People write slots as days and times: ``mon-fri 09:00,13:00``, ``sat 10:00``,
``mon,wed 18:30``, ``daily 08:00`` (also ``weekdays``, ``weekends``; a range may wrap, as
``fri-mon``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from core.domain.errors import UserError
from core.domain.timing import zone as named_zone

#: Day names, Monday first (``datetime.weekday()`` order).
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_FULL = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_GROUPS = {"daily": tuple(range(7)), "weekdays": tuple(range(5)), "weekends": (5, 6)}
_TIME = re.compile(r"^([0-9]{1,2}):([0-9]{2})$")
_EXAMPLE = 'e.g. "mon-fri 09:00,13:00"'


@dataclass(frozen=True, order=True)
class PostingSlot:
    """One weekly slot: a weekday and a local time (in the channel's zone)."""

    #: 0 for Monday … 6 for Sunday.
    weekday: int
    at: time

    def __str__(self) -> str:
        return f"{DAYS[self.weekday]} {self.at:%H:%M}"


def _day(name: str, spec: str) -> int:
    word = name.lower()
    if word in DAYS:
        return DAYS.index(word)
    if word in _FULL:
        return _FULL.index(word)
    raise UserError(
        f"{name!r} in {spec!r} is not a day: write mon, tue, wed, thu, fri, sat or sun, a range such as "
        "mon-fri, a list such as mon,wed, or daily, weekdays or weekends"
    )


def parse_days(text: str, spec: str | None = None) -> tuple[int, ...]:
    """The weekdays ``text`` names (``mon-fri``, ``mon,wed``, ``daily``...), Monday first.

    Args:
        spec: the whole slot text, for the message.

    Raises:
        UserError: a word that is not a day, naming it.
    """
    spec = text if spec is None else spec
    days: set[int] = set()
    for item in re.sub(r"\s*([,-])\s*", r"\1", text.strip()).split(","):
        if item.lower() in _GROUPS:
            days.update(_GROUPS[item.lower()])
            continue
        first, dash, last = item.partition("-")
        start = _day(first, spec)
        end = _day(last, spec) if dash else start
        # A range may wrap around the week's end: fri-mon is fri, sat, sun, mon.
        days.update((start + i) % 7 for i in range((end - start) % 7 + 1))
    return tuple(sorted(days))


def parse_time(text: str, spec: str | None = None) -> time:
    """The local time of day ``text`` names (``HH:MM``, 24-hour).

    Raises:
        UserError: not ``HH:MM`` from 00:00 to 23:59 (``25:00``, ``9am``), naming it.
    """
    match = _TIME.match(text.strip())
    hour, minute = (int(match.group(1)), int(match.group(2))) if match else (-1, -1)
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        where = f" in {spec!r}" if spec is not None and spec != text else ""
        raise UserError(f"{text!r}{where} is not a time of day: write HH:MM from 00:00 to 23:59, e.g. 09:00")
    return time(hour, minute)


def slots_of(days: str, times: Iterable[str], spec: str | None = None) -> tuple[PostingSlot, ...]:
    """Every slot of ``days`` × ``times``, in order.

    Raises:
        UserError: a bad day or time, or no time at all.
    """
    given = list(times)
    spec = spec if spec is not None else f"{days} {','.join(given)}"
    at = sorted({parse_time(t, spec) for t in given})
    if not at:
        raise UserError(f"{spec!r} has no time: write days and times, {_EXAMPLE}")
    return tuple(PostingSlot(day, t) for day in parse_days(days, spec) for t in at)


def parse_slots(spec: str) -> tuple[PostingSlot, ...]:
    """The slots ``spec`` names: days, a space, times (``mon-fri 09:00,13:00``; the times
    may be apart by spaces too).

    Raises:
        UserError: not days and times, or a bad day or time (naming it).
    """
    words = re.sub(r"\s*([,-])\s*", r"\1", spec.strip()).split()
    if len(words) < 2:
        raise UserError(f"{spec!r} is not a posting slot: write days, a space, then times, {_EXAMPLE}")
    days, *times = words
    return slots_of(days, [t for word in times for t in word.split(",")], spec)


def describe(slots: Iterable[PostingSlot]) -> tuple[str, ...]:
    """The slots as people write them, the days with the same times on one line:
    ``("mon-fri 09:00,13:00", "sat 10:00")``. Each line reads back with :func:`parse_slots`."""
    times: dict[int, list[time]] = {}
    for slot in sorted(set(slots)):
        times.setdefault(slot.weekday, []).append(slot.at)
    groups: dict[tuple[time, ...], list[int]] = {}
    for day, at in times.items():
        groups.setdefault(tuple(at), []).append(day)
    lines = [(days[0], f"{_days_text(days)} {','.join(f'{t:%H:%M}' for t in at)}") for at, days in groups.items()]
    return tuple(line for _first, line in sorted(lines))


def _days_text(days: Sequence[int]) -> str:
    runs: list[list[int]] = []
    for day in days:
        if runs and runs[-1][-1] == day - 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    # Two days in a row read as a list (sat,sun), three or more as a range (mon-fri).
    return ",".join(
        f"{DAYS[run[0]]}-{DAYS[run[-1]]}" if len(run) > 2 else ",".join(DAYS[d] for d in run) for run in runs
    )


def first_occurrence(local: datetime, where: ZoneInfo) -> datetime | None:
    """The UTC instant of the naive local time ``local`` in ``where``: its first occurrence
    when the clocks fall back over it, None when they spring forward over it."""
    instant = local.replace(tzinfo=where, fold=0).astimezone(UTC)
    # In a gap, fold 0 reads the time with the offset before the jump: back in local time,
    # that instant is a wall time after the gap, not the one asked for.
    if instant.astimezone(where).replace(tzinfo=None) != local:
        return None
    return instant


@dataclass(frozen=True)
class PostingSchedule:
    """A channel's posting slots, in their zone."""

    zone: str
    slots: frozenset[PostingSlot]

    def instants(self, after: datetime) -> Iterator[datetime]:
        """Every slot's UTC instant later than ``after``, earliest first, without end (none
        when there are no slots): the caller stops where it stops looking."""
        if not self.slots:
            return
        where = named_zone(self.zone)
        by_day: dict[int, list[time]] = {}
        for slot in sorted(self.slots):
            by_day.setdefault(slot.weekday, []).append(slot.at)
        day: date = after.astimezone(where).date()  # the zone's day, not UTC's
        while True:
            # Within a day the instants keep the local order: a repeated time takes its
            # first occurrence, which comes before every time after the repeated hour.
            for at in by_day.get(day.weekday(), ()):
                instant = first_occurrence(datetime.combine(day, at), where)
                if instant is not None and instant > after:
                    yield instant
            day += timedelta(days=1)

    def includes(self, instant: datetime) -> bool:
        """Whether ``instant`` is one of the slots (of a repeated local time, only its first
        occurrence is)."""
        local = instant.astimezone(named_zone(self.zone))
        return local.fold == 0 and PostingSlot(local.weekday(), local.time()) in self.slots


def free_instants(
    schedules: Sequence[PostingSchedule],
    taken: Callable[[datetime], bool],
    after: datetime,
    until: datetime,
) -> Iterator[datetime]:
    """The instants after ``after`` and up to ``until`` that are a slot of every schedule and
    not ``taken``, earliest first.

    A post to several channels is one instant (one slot, one key, one cancel), so it needs an
    instant that is a free slot on each of them, not each channel's own next one.
    """
    if not schedules:
        return
    lead, *rest = schedules
    for instant in lead.instants(after):
        if instant > until:
            return
        if all(s.includes(instant) for s in rest) and not taken(instant):
            yield instant

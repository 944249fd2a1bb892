"""Recurring release slots (§12): an RFC 5545 RRULE in an IANA zone, and the catch-up rule.

A rule is computed in its zone's wall time (python-dateutil's ``rrule`` over a start that
carries the zone), so ``BYHOUR=10`` is 10:00 local on both sides of a DST change. A local
time the clocks skip over is read with the offset before the gap (as RFC 5545 says: 02:30
on a spring-forward night is 03:30 local); one that happens twice is its first occurrence.

The catch-up rule (:func:`plan_release`): of the slots that came after the schedule's
stamp (``last_release_slot``), the most recent one inside the catch-up window is taken;
every other one is skipped, never flooded out.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateutil.rrule import rrule, rrulestr

from core.domain.errors import UserError
from core.domain.timing import zone as named_zone

#: How long before its slot a release may take it: the release's timer fires this much
#: early (rq's scheduler may start a job up to about a second early anyway), and the
#: post it releases is scheduled at the slot itself and armed for it, so it is on time.
RELEASE_LEAD = timedelta(seconds=5)

#: Longer than any jump of a zone's clocks (Lord Howe's is 30 minutes, most are an hour).
_LONGEST_JUMP = timedelta(hours=3)

#: The catch-up window when none is given.
DEFAULT_CATCH_UP = timedelta(hours=24)

#: The parts of an RRULE line herald takes (RFC 5545 §3.3.10).
_PARTS = {
    "FREQ",
    "UNTIL",
    "COUNT",
    "INTERVAL",
    "BYSECOND",
    "BYMINUTE",
    "BYHOUR",
    "BYDAY",
    "BYMONTHDAY",
    "BYYEARDAY",
    "BYWEEKNO",
    "BYMONTH",
    "BYSETPOS",
    "WKST",
}


class SlotOutcome(enum.StrEnum):
    #: The slot's queued post was scheduled for it (at the slot, or at once if it had passed).
    RELEASED = "released"
    #: A missed slot passed over by catch-up: older than a later one, or than the window.
    SKIPPED = "skipped"
    #: The slot came with nothing in the queue.
    EMPTY = "empty"


@dataclass(frozen=True)
class Rule:
    """A recurring rule: its RRULE text, the zone it is computed in, and where it starts."""

    #: The RRULE line, upper case, without the ``RRULE:`` prefix.
    text: str
    zone: str
    #: The instant the rule is counted from (its DTSTART, in ``zone``, to the minute).
    start: datetime

    def _rrule(self, start: datetime | None = None) -> rrule:
        """The rule counted from its start (to the minute), or from ``start``, one of its slots."""
        where = named_zone(self.zone)
        local = start.astimezone(where) if start else self.start.astimezone(where).replace(second=0, microsecond=0)
        made = rrulestr(self.text, dtstart=local, forceset=False)
        assert isinstance(made, rrule)  # one RRULE line, checked by parse_rule
        return made

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        """The rule's slots strictly after ``after``, as UTC instants, in order, counted
        from the rule's start (the cost grows with the slots since then)."""
        return _instants(self._rrule(), after)

    def slots_since(self, stamp: datetime) -> Iterator[datetime]:
        """The slots after a schedule's stamp: its start, or one of its slots.

        From a slot, the rule is counted from that slot itself, which gives the same slots
        (a slot matches every part the rule takes from its start), so the cost grows with
        the slots since the last release, not since the schedule began: an every-minute
        rule would otherwise walk half a million slots a year to find the next one. Not
        with a COUNT (counted from the start), nor just after the clocks jumped: a slot
        there may stand for a wall time the clocks skipped, which reads back as another.
        """
        where = named_zone(self.zone)
        if stamp != self.start and "COUNT=" not in self.text:
            local = stamp.astimezone(where)
            if (stamp - _LONGEST_JUMP).astimezone(where).utcoffset() == local.utcoffset():
                return _instants(self._rrule(stamp), stamp)
        return self.slots_after(stamp)

    def next_slot(self, after: datetime) -> datetime | None:
        """The first slot after ``after``, or None when the rule has ended."""
        return next(self.slots_after(after), None)

    def upcoming(self, stamp: datetime, count: int) -> list[datetime]:
        """Up to ``count`` slots after a schedule's stamp (see :meth:`slots_since`)."""
        found: list[datetime] = []
        for instant in self.slots_since(stamp):
            found.append(instant)
            if len(found) == count:
                break
        return found


def _instants(rule: rrule, after: datetime) -> Iterator[datetime]:
    """``rule``'s occurrences strictly after ``after``, as UTC instants, in order.

    Two local times can name one instant (the skipped hour read with the offset before
    the gap): each instant is given once.
    """
    last = after
    for local in rule:
        instant = local.astimezone(UTC)
        if instant > last:
            last = instant
            yield instant


def parse_rule(text: str, zone: str, start: datetime) -> Rule:
    """The rule ``text`` names in ``zone``, counted from ``start``.

    Args:
        text: one RRULE line (``FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0``), with or
            without the ``RRULE:`` prefix.
        zone: the IANA zone the rule's wall times are in.
        start: the rule's start (now, for a new schedule); it must have a slot after it.

    Raises:
        UserError: not an RRULE, an unknown zone, a rule more frequent than once a minute,
            or one with no slot after ``start``.
    """
    named_zone(zone)
    line = text.strip()
    if line.upper().startswith("RRULE:"):
        line = line[len("RRULE:") :]
    line = line.upper()
    if not line or "\n" in line or ":" in line:
        raise UserError(
            f"{text!r} is not an RRULE: give one rule line, e.g. FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0 "
            "(the start is the moment the schedule is added)"
        )
    parts: dict[str, str] = {}
    for item in line.split(";"):
        name, _, value = item.partition("=")
        if name not in _PARTS or not value:
            raise UserError(f"{text!r} is not an RRULE: {item!r} is not a rule part such as FREQ=WEEKLY or BYHOUR=10")
        parts[name] = value
    if "FREQ" not in parts:
        raise UserError(f"{text!r} is not an RRULE: it needs a FREQ (e.g. FREQ=WEEKLY)")
    if parts["FREQ"] == "SECONDLY" or len(parts.get("BYSECOND", "0").split(",")) > 1:
        raise UserError(
            f"{text!r} recurs more often than once a minute: a release schedule takes at most one slot a minute "
            "(use FREQ=MINUTELY or slower, with at most one BYSECOND)"
        )
    rule = Rule(line, zone, start)
    try:
        first = rule.next_slot(start)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UserError(f"{text!r} is not an RRULE ({exc}): e.g. FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0") from None
    if first is None:
        raise UserError(f"{text!r} has no slot after now (its COUNT or UNTIL has passed): give a rule that recurs")
    return rule


@dataclass(frozen=True)
class Skipped:
    """A run of missed slots passed over by one release: recorded as one line of history."""

    first: datetime
    last: datetime
    count: int


@dataclass(frozen=True)
class ReleasePlan:
    """What a release does with the slots that came since the stamp."""

    #: The slot to release (the most recent inside the window), or None: all were too old.
    taken: datetime | None
    #: The other slots that came, recorded skipped; None when there were none.
    skipped: Skipped | None
    #: Where the stamp moves: the latest slot that came.
    stamp: datetime
    #: The first slot after the new stamp, or None when the rule has ended.
    next_slot: datetime | None


def plan_release(rule: Rule, stamp: datetime, now: datetime, window: timedelta) -> ReleasePlan | None:
    """The catch-up decision (§12), or None when no slot came since ``stamp``.

    A slot has come when it is no later than ``now`` + :data:`RELEASE_LEAD`. Of the slots
    that came after ``stamp``, the most recent is taken if it is inside the window (no
    older than ``now - window``); every other one is skipped.
    """
    come = now + RELEASE_LEAD
    first: datetime | None = None
    latest: datetime | None = None
    before: datetime | None = None
    count = 0
    following: datetime | None = None
    for instant in rule.slots_since(stamp):
        if instant > come:
            following = instant
            break
        first = first or instant
        before, latest = latest, instant
        count += 1
    if first is None or latest is None:
        return None
    if latest >= now - window:
        skipped = Skipped(first, before, count - 1) if count > 1 and before is not None else None
        return ReleasePlan(taken=latest, skipped=skipped, stamp=latest, next_slot=following)
    return ReleasePlan(taken=None, skipped=Skipped(first, latest, count), stamp=latest, next_slot=following)

"""When a post goes out, as people write it (§11): an instant with an offset, a local
time in a zone, a delay from now, or now – now by the one clock (§2), never this machine's.

A slot further in the past than ``past_slot_tolerance`` is refused at create and
reschedule (§13): scheduling into the past is almost always a mistake (a wrong date, a
zone forgotten), and one who means "as soon as possible" says ``--now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from core.config import settings
from core.domain.errors import UserError
from core.domain.timing import after, occurrences, parse_duration, parse_instant, show
from core.runtime.clock import Clock, DatabaseClock
from core.store import db


@dataclass(frozen=True)
class Slot:
    """A post's slot, the zone it is shown in, and its embargo."""

    #: The UTC instant; None for "now" (``--now``, or nothing given at create).
    at: datetime | None
    zone: str
    #: ``--not-before``: an instant the platform must not see the post before.
    not_before: datetime | None = None

    @property
    def instant(self) -> datetime:
        """The instant, where one must be given.

        Raises:
            UserError: none was given.
        """
        if self.at is None:
            raise UserError("give the new slot with --at or --in, or --now to publish at once")
        return self.at


def parse_slot(
    *,
    at: str | None = None,
    delay: str | None = None,
    now: bool = False,
    zone: str | None = None,
    fold: int | None = None,
    not_before: str | None = None,
    required: bool = False,
    queue: bool = False,
    clock: Clock | None = None,
) -> Slot:
    """The slot ``--at``, ``--in`` or ``--now`` names, and the ``--not-before`` embargo.

    Args:
        at: ISO 8601 with an offset, or a local time in ``zone``.
        delay: a duration from now (``30s``, ``5m``, ``2h``, ``1d``).
        now: publish at once.
        zone: the IANA zone of a local ``at`` or ``not_before``, and the one to show the
            slot in (UTC if none).
        fold: which of a repeated local time (0 or 1); refused where no local time given
            is repeated, since it would change nothing.
        not_before: the embargo, read like ``at``.
        required: one of ``at``, ``delay`` and ``now`` must be given (a move).
        queue: the post is added to its channels' queue (`post create --queue`): none of
            ``at``, ``delay`` and ``now`` may be given.
        clock: where now comes from; the database's by default.

    Raises:
        UserError: more than one of ``at``, ``delay`` and ``now``; none where one is
            required, one with ``queue``; unparseable or out of range; ``fold`` that picks nothing.
    """
    if queue and (at is not None or delay is not None or now):
        given = ", ".join(name for name, value in (("--at", at), ("--in", delay), ("--now", now or None)) if value)
        raise UserError(f"--queue gives the post its channels' next free posting slot: give it without {given}")
    if now and (at is not None or delay is not None):
        given = " and ".join(name for name, value in (("--at", at), ("--in", delay)) if value is not None)
        raise UserError(f"--now publishes at once: give it without {given}")
    if at is not None and delay is not None:
        raise UserError("give --at or --in, not both")
    if required and at is None and delay is None and not now:
        raise UserError("give the new slot with --at or --in, or --now to publish at once")
    embargo = parse_instant(not_before, zone, fold)[0] if not_before is not None else None
    if delay is not None:
        offset = parse_duration(delay)
        instant = after((clock or DatabaseClock(db.engine())).now(), offset, f"now + {delay.strip()}")
        slot = Slot(instant, zone or "UTC", embargo)
    elif at is not None:
        instant, shown_in = parse_instant(at, zone, fold)
        slot = Slot(instant, shown_in, embargo)
    else:
        slot = Slot(None, zone or "UTC", embargo)
    if fold is not None:
        check_fold(at, zone, not_before)
    return slot


def check_fold(at: str | None, zone: str | None, not_before: str | None) -> None:
    """Refuse a ``fold`` that picks nothing: silently ignoring it would hide a wrong date.

    Raises:
        UserError: no local time given (``at``, ``not_before``) happens twice in ``zone``.
    """
    if zone is not None and any(text is not None and occurrences(text, zone) == 2 for text in (at, not_before)):
        return
    if at is None:
        why = "no local --at time is given"
    elif zone is None or occurrences(at, zone) is None:
        why = f"{at} has an offset, so it names one instant"
    else:
        why = f"{at} happens once in {zone}"
    raise UserError(
        "--fold picks one of the two occurrences of a local time that happens twice (when the clocks "
        f"fall back), but {why}: drop --fold"
    )


def parse_embargo(text: str | None, zone: str | None = None, fold: int | None = None) -> datetime | None:
    """The instant ``--not-before`` names (read like ``--at``), or None.

    Raises:
        UserError: unparseable.
    """
    return parse_instant(text, zone, fold)[0] if text else None


def refuse_past(at: datetime, now: datetime, zone: str = "UTC", tolerance: float | None = None) -> None:
    """Refuse a slot more than ``tolerance`` seconds before ``now`` (§13).

    Args:
        at: the slot asked for.
        now: by the one clock.
        zone: the zone to name the slot in.
        tolerance: seconds; ``HERALD_PAST_SLOT_TOLERANCE`` by default. A slot this little
            in the past (a command typed at the last second) publishes at once.

    Raises:
        UserError: the slot is further in the past, naming ``--now``.
    """
    allowed = settings().past_slot_tolerance if tolerance is None else tolerance
    late = now - at
    if late.total_seconds() > allowed:
        raise UserError(
            f"the slot {show(at, zone)} is {_duration(late)} in the past: give a later --at or --in, "
            "or --now to publish at once"
        )


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size:.0f} {unit}"
    return f"{seconds:.0f} s"

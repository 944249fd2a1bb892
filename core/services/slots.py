"""When a post goes out, as people write it (§11): an instant with an offset, a local
time in a zone, or a delay from now – now by the one clock (§2), never this machine's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.domain.errors import UserError
from core.domain.timing import parse_duration, parse_instant
from core.runtime.clock import Clock, DatabaseClock
from core.store import db


@dataclass(frozen=True)
class Slot:
    """A post's slot, and the zone it is shown in."""

    #: The UTC instant; None for "now" (nothing given).
    at: datetime | None
    zone: str

    @property
    def instant(self) -> datetime:
        """The instant, where one must be given (a move needs a new slot).

        Raises:
            UserError: none was given.
        """
        if self.at is None:
            raise UserError("give the new slot with --at or --in")
        return self.at


def parse_slot(
    *,
    at: str | None = None,
    delay: str | None = None,
    zone: str | None = None,
    fold: int | None = None,
    clock: Clock | None = None,
) -> Slot:
    """The slot ``--at`` or ``--in`` names.

    Args:
        at: ISO 8601 with an offset, or a local time in ``zone``.
        delay: a duration from now (``30s``, ``5m``, ``2h``, ``1d``).
        zone: the IANA zone of a local ``at``, and the one to show the slot in (UTC if none).
        fold: which of a repeated local time (0 or 1).
        clock: where now comes from; the database's by default.

    Raises:
        UserError: both given, or either unparseable.
    """
    if at and delay:
        raise UserError("give --at or --in, not both")
    if delay:
        offset = parse_duration(delay)
        return Slot((clock or DatabaseClock(db.engine())).now() + offset, zone or "UTC")
    if at:
        instant, shown_in = parse_instant(at, zone, fold)
        return Slot(instant, shown_in)
    return Slot(None, zone or "UTC")


def parse_embargo(text: str | None, zone: str | None = None, fold: int | None = None) -> datetime | None:
    """The instant ``--not-before`` names (read like ``--at``), or None.

    Raises:
        UserError: unparseable.
    """
    return parse_instant(text, zone, fold)[0] if text else None

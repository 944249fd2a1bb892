"""A channel's posting slots as people set them (§12): `herald channel slots`, and
``/api/v1/channels/{name}/slots``. Add-to-queue reads them (``core.services.queue``).

Every slot of a channel is in one zone. Slots given without a zone are in the channel's
current one (UTC for its first); adding slots in another zone is refused, since the
existing ones would silently mean other hours. Moving them all is its own change
(``--zone`` alone: each keeps its local time), and so is replacing them (``--clear``,
or ``PUT``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.orm import Session

from core import ledger
from core.domain.errors import NotFound, UserError
from core.domain.posting_slots import DAYS, PostingSlot, describe
from core.domain.timing import zone as named_zone
from core.runtime.clock import Clock, DatabaseClock
from core.services.queue import free_slots, schedules
from core.services.views import shown_in
from core.store import db
from core.store.models import Channel
from core.store.models import PostingSlot as SlotRow

#: How many of the next free slots a listing shows.
UPCOMING = 5


@dataclass(frozen=True)
class SlotView:
    """One weekly slot."""

    #: mon, tue, wed, thu, fri, sat or sun.
    day: str
    #: The local time, HH:MM.
    time: str


@dataclass(frozen=True)
class PostingSlotsView:
    """A channel's posting slots as `herald channel slots` lists them."""

    channel: str
    #: The IANA zone every slot is in; None while the channel has none.
    zone: str | None
    slots: tuple[SlotView, ...]
    #: The slots as they are written, the days with the same times on one line
    #: (``mon-fri 09:00,13:00``); each reads back as ``--add`` or ``--remove``.
    rules: tuple[str, ...]
    #: The next instants that are a free slot (`herald post create --queue` takes the
    #: first), in the zone.
    next_free: tuple[datetime, ...]


def _now(clock: Clock | None) -> datetime:
    return (clock or DatabaseClock(db.engine())).now()


def _channel(s: Session, name: str, *, for_update: bool = False) -> Channel:
    channel = ledger.live_channel(s, name, for_update=for_update)
    if channel is None:
        raise NotFound(f"no channel named {name!r}; `herald channel list` shows them")
    return channel


def _view(s: Session, channel: Channel, now: datetime) -> PostingSlotsView:
    found = schedules(s, [channel.id]).get(channel.id)
    if found is None:
        return PostingSlotsView(channel.name, None, (), (), ())
    upcoming = itertools.islice(free_slots(s, [channel.id], now), UPCOMING)
    return PostingSlotsView(
        channel=channel.name,
        zone=found.zone,
        slots=tuple(SlotView(DAYS[slot.weekday], f"{slot.at:%H:%M}") for slot in sorted(found.slots)),
        rules=describe(found.slots),
        next_free=tuple(shown_in(at, found.zone) for at in upcoming),
    )


def show_posting_slots(name: str, *, clock: Clock | None = None) -> PostingSlotsView:
    """A channel's posting slots and the next free ones.

    Raises:
        NotFound: no such channel.
    """
    with db.reading() as s:
        return _view(s, _channel(s, name), _now(clock))


def change_posting_slots(
    name: str,
    *,
    add: Iterable[PostingSlot] = (),
    remove: Iterable[PostingSlot] = (),
    clear: bool = False,
    zone: str | None = None,
    clock: Clock | None = None,
) -> PostingSlotsView:
    """Change a channel's posting slots: ``clear`` them all, then ``remove`` some, then
    ``add`` some, in ``zone``.

    Args:
        zone: the IANA zone of the slots; None keeps the channel's current one (UTC when it
            has none). Another zone than the current one is taken only with ``clear``, or
            alone (no ``add``, no ``remove``): then every slot moves to it, at the same local time.

    Raises:
        NotFound: no such channel.
        UserError: an unknown zone, another zone than the current one beside ``add`` or
            ``remove`` without ``clear``, or a slot to remove that the channel does not have.
    """
    added, removed = set(add), set(remove)
    if zone is not None:
        named_zone(zone)
    with db.transaction() as s:
        channel = _channel(s, name, for_update=True)
        current = schedules(s, [channel.id]).get(channel.id)
        kept = set() if clear or current is None else set(current.slots)
        if zone is not None and current is not None and zone != current.zone and not clear and (added or removed):
            raise UserError(
                f"channel {name}'s posting slots are in {current.zone}: add or remove them in it (leave --zone out), "
                f"move them all first with `herald channel slots {name} --zone {zone}`, or replace them with --clear"
            )
        absent = removed - kept
        if absent:
            raise UserError(
                f"channel {name} has no posting slot {'; '.join(describe(absent))}: "
                f"`herald channel slots {name}` lists them"
            )
        slots = (kept - removed) | added
        where = zone or (current.zone if current is not None else "UTC")
        s.execute(delete(SlotRow).where(SlotRow.channel_id == channel.id))
        s.add_all(
            SlotRow(channel_id=channel.id, weekday=slot.weekday, local_time=slot.at, zone=where)
            for slot in sorted(slots)
        )
        s.flush()
        return _view(s, channel, _now(clock))

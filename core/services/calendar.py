"""The dashboard's calendar (§15): an account's posts in a window of slots, each with its
channels' states, for a week, a month or a list.

One indexed range scan: the posts of one account in ``[start, end)`` of the slot, read in
slot order from ``ix_posts_account_id_scheduled_at_id`` (the statement is
``core.services.finding``'s, the one `herald post list` pages with), then one lookup of
those posts' deliveries. A window holds at most :data:`CALENDAR_LIMIT` posts; a busier one
says so (``more``), and the list view pages on with ``herald post list``'s cursor. So a
month costs the same on a table of a million posts as on one of ten thousand
(``bench/calendar.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from core.domain.errors import UserError
from core.domain.timing import zone as named_zone
from core.services.finding import (
    MAX_LIMIT,
    ChannelState,
    PostQuery,
    PostRow,
    deliveries_statement,
    post_row,
    posts_statement,
)
from core.services.views import shown_in
from core.store import db

#: The most posts one calendar window shows; the list view pages past it.
CALENDAR_LIMIT = MAX_LIMIT

#: What a calendar shows: a week (Monday to Monday), a month, or a list of a week's posts.
VIEWS = ("week", "month", "list")


@dataclass(frozen=True)
class CalendarWindow:
    """The posts of an account in ``[start, end)``; instants in the viewer's zone ``tz``."""

    view: str
    tz: str
    start: datetime
    end: datetime
    #: The first day shown and the day after the last (whole weeks, for a month).
    days: tuple[date, ...]
    #: Slot order, each slot in ``tz``.
    posts: tuple[PostRow, ...]
    #: True when the window holds more than :data:`CALENDAR_LIMIT` posts: only the first are shown.
    more: bool


def window(view: str, around: date, tz: str) -> tuple[datetime, datetime, tuple[date, ...]]:
    """The ``[start, end)`` instants and the days of the week or month holding ``around``,
    midnight to midnight in ``tz``; a month is shown as the whole weeks that hold it.

    Raises:
        UserError: an unknown view or zone.
    """
    if view not in VIEWS:
        raise UserError(f"no calendar view {view!r}: one of {', '.join(VIEWS)}")
    where = named_zone(tz)
    if view == "month":
        first = around.replace(day=1)
        after = (first + timedelta(days=32)).replace(day=1)
        start_day = first - timedelta(days=first.weekday())
        end_day = after + timedelta(days=(7 - after.weekday()) % 7)
    else:
        start_day = around - timedelta(days=around.weekday())
        end_day = start_day + timedelta(days=7)
    days = tuple(start_day + timedelta(days=i) for i in range((end_day - start_day).days))
    start, end = (datetime.combine(day, time(0), tzinfo=where).astimezone(UTC) for day in (start_day, end_day))
    return start, end, days


def calendar(account_id: int, view: str, around: date, tz: str = "UTC") -> CalendarWindow:
    """The account's posts in the week or month (``view``) holding ``around`` in zone ``tz``.

    Raises:
        UserError: an unknown view or zone.
    """
    start, end, days = window(view, around, tz)
    posts, more = calendar_posts(account_id, start, end)
    shown = tuple(replace(row, scheduled_at=shown_in(row.scheduled_at, tz)) for row in posts)
    return CalendarWindow(view, tz, start, end, days, shown, more)


def calendar_posts(account_id: int, start: datetime, end: datetime) -> tuple[tuple[PostRow, ...], bool]:
    """The account's posts with a slot in ``[start, end)``, at most :data:`CALENDAR_LIMIT`,
    each with its deliveries' states; and whether more were left out."""
    query = PostQuery(start=start, end=end, limit=CALENDAR_LIMIT)
    with db.reading() as s:
        found = s.execute(posts_statement(query, account_id=account_id)).all()
        page = found[:CALENDAR_LIMIT]
        states: dict[int, list[ChannelState]] = defaultdict(list)
        if page:
            for d in s.execute(deliveries_statement([row.id for row in page])):
                states[d.post_id].append(ChannelState(channel=d.channel, status=d.status, reason=d.reason))
    return tuple(post_row(row, tuple(states[row.id])) for row in page), len(found) > CALENDAR_LIMIT

"""Finding posts: `herald post list`, and the query behind the dashboard's calendar and its
needs-attention view (§15).

Posts come in slot order (then id), a page at a time. A page ends with an opaque cursor
that encodes the last row's (slot, id); the next page starts strictly after it (keyset
pagination), so rows with equal slots are neither repeated nor skipped, however the
table changes between pages, and a page costs the same on page 1 as on page 1,000: the
database seeks to the cursor in ``ix_posts_scheduled_at_id`` instead of counting rows
past an OFFSET. Every filter is served by an index or checked on the rows the window's
index yields (see ``tests/integration/test_query_plans.py``).
"""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, or_, select
from sqlalchemy.orm import Session

from core.domain.errors import NotFound, UserError
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.domain.timing import parse_instant, zone
from core.runtime.clock import Clock, DatabaseClock
from core.services.views import shown_in
from core.store import db
from core.store.models import Account, Channel, Delivery, Post
from core.store.texts import parts_text

#: A delivery in one of these needs a person: held (a hold to lift or a doubt to resolve)
#: or failed (to retry or give up on).
ATTENTION_DELIVERIES = frozenset({DeliveryStatus.HELD, DeliveryStatus.FAILED})
#: A post in one of these needs a person whatever its deliveries say: partly published
#: (a channel, or the rest of a thread, did not make it).
ATTENTION_POSTS = frozenset({PostStatus.PARTIALLY_PUBLISHED})

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: How much of the first part's text a row shows.
TEXT_WIDTH = 80

#: What ``--status`` takes besides a post status.
NEEDS_ATTENTION = "needs-attention"


@dataclass(frozen=True)
class PostQuery:
    """Which posts to list; every filter given must hold.

    Instants are aware; the window is ``[start, end)`` of the slot.
    """

    #: Only posts in this status.
    status: PostStatus | None = None
    #: Only posts with a delivery held or failed, or partly published.
    needs_attention: bool = False
    #: Only posts going to this channel (by name).
    channel: str | None = None
    #: Only posts of this account (by name).
    account: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    #: Text any part contains, ignoring case (on SQLite, the case of ASCII letters only).
    search: str | None = None
    limit: int = DEFAULT_LIMIT
    #: Where the previous page ended (its ``next_cursor``); None for the first page.
    cursor: str | None = None


@dataclass(frozen=True)
class ChannelState:
    """One delivery of a listed post: where it goes, how it stands, and why."""

    channel: str
    status: DeliveryStatus
    reason: Reason | None


@dataclass(frozen=True)
class PostRow:
    """A post as one line of `herald post list`; the slot in the post's zone."""

    id: int
    status: PostStatus
    scheduled_at: datetime
    zone: str
    account: str
    channels: tuple[ChannelState, ...]
    #: The first part's text on one line, trimmed to :data:`TEXT_WIDTH` characters.
    text: str
    #: How many parts (more than one: a thread).
    parts: int
    #: A delivery is held or failed, or the post is partly published: a person should look.
    needs_attention: bool


@dataclass(frozen=True)
class PostPage:
    """One page of posts in slot order, and the cursor of the next (None on the last)."""

    rows: tuple[PostRow, ...]
    next_cursor: str | None


def list_posts(query: PostQuery) -> PostPage:
    """One page of the posts ``query`` selects, in slot order (then id).

    Raises:
        UserError: a limit out of range, a window that ends before it starts, naive
            instants, a blank search, or a cursor herald did not give.
        NotFound: no channel or account of the given name.
    """
    _check(query)
    after = decode_cursor(query.cursor) if query.cursor is not None else None
    with db.reading() as s:
        channel_id = _channel_id(s, query.channel) if query.channel is not None else None
        account_id = _account_id(s, query.account) if query.account is not None else None
        found = s.execute(posts_statement(query, channel_id=channel_id, account_id=account_id, after=after)).all()
        page = found[: query.limit]
        states: dict[int, list[ChannelState]] = defaultdict(list)
        if page:
            for d in s.execute(deliveries_statement([row.id for row in page])):
                states[d.post_id].append(ChannelState(channel=d.channel, status=d.status, reason=d.reason))
    rows = tuple(post_row(row, tuple(states[row.id])) for row in page)
    more = len(found) > query.limit
    return PostPage(rows=rows, next_cursor=encode_cursor(page[-1].scheduled_at, page[-1].id) if more else None)


def posts_statement(
    query: PostQuery,
    *,
    channel_id: int | None = None,
    account_id: int | None = None,
    after: tuple[datetime, int] | None = None,
) -> Select[int, PostStatus, datetime, str, list[dict[str, Any]], str]:
    """The page's posts, one more than the limit (to tell whether another page follows).

    Args:
        query: the filters; its channel and account are given here by id, its cursor as
            ``after``.
        channel_id: only posts with a delivery on this channel (uq_deliveries_post_channel).
        account_id: only this account's posts (ix_posts_account_id_scheduled_at_id).
        after: the (slot, id) the previous page ended at.
    """
    statement = (
        select(Post.id, Post.status, Post.scheduled_at, Post.zone, Post.parts, Account.name.label("account"))
        .join(Account, Account.id == Post.account_id)
        .order_by(Post.scheduled_at, Post.id)
        .limit(query.limit + 1)
    )
    conditions: list[ColumnElement[bool]] = []
    if query.start is not None:
        conditions.append(Post.scheduled_at >= query.start)
    if query.end is not None:
        conditions.append(Post.scheduled_at < query.end)
    if after is not None:
        slot, post_id = after
        # (slot, id) > (after): spelled out, so every planner sees a range on the slot.
        conditions.append(Post.scheduled_at >= slot)
        conditions.append(or_(Post.scheduled_at > slot, Post.id > post_id))
    if query.status is not None:
        # One status, not a list: (status, slot) then id is the index's own order, so the
        # page is read in order; a list would be merged and sorted.
        conditions.append(Post.status == query.status)
    if account_id is not None:
        conditions.append(Post.account_id == account_id)
    if channel_id is not None:
        conditions.append(exists().where(Delivery.post_id == Post.id, Delivery.channel_id == channel_id))
    if query.needs_attention:
        conditions.append(needs_attention())
    if query.search is not None:
        conditions.append(parts_text(Post.parts).icontains(query.search.strip(), autoescape=True))
    return statement.where(and_(*conditions)) if conditions else statement


def needs_attention() -> ColumnElement[bool]:
    """A post needs a person: a delivery held or failed (ix_deliveries_post_id_status), or
    the post partly published."""
    # A scalar subquery rather than EXISTS: under an OR, PostgreSQL may answer EXISTS by
    # hashing every held and failed delivery in the table once per query, a cost that
    # grows with the table (failed deliveries stay); a scalar subquery is asked of each
    # row the window's index yields, one index probe each.
    held_or_failed = (
        select(Delivery.post_id)
        .where(Delivery.post_id == Post.id, Delivery.status.in_(ATTENTION_DELIVERIES))
        .limit(1)
        .scalar_subquery()
    )
    return or_(Post.status.in_(ATTENTION_POSTS), held_or_failed.is_not(None))


def deliveries_statement(post_ids: Sequence[int]) -> Select[int, str, DeliveryStatus, Reason | None]:
    """The deliveries of a page's posts, with their channel's name (uq_deliveries_post_channel)."""
    return (
        select(Delivery.post_id, Channel.name.label("channel"), Delivery.status, Delivery.reason)
        .join(Channel, Channel.id == Delivery.channel_id)
        .where(Delivery.post_id.in_(list(post_ids)))
        .order_by(Delivery.post_id, Delivery.id)
    )


def encode_cursor(slot: datetime, post_id: int) -> str:
    """The cursor of the row at (``slot``, ``post_id``): the next page starts after it."""
    raw = f"1|{slot.astimezone(UTC).isoformat(timespec='microseconds')}|{post_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The (slot, id) a cursor from :func:`encode_cursor` stands for.

    Raises:
        UserError: not such a cursor.
    """
    refused = UserError(
        f"{cursor!r} is not a cursor herald gave: pass the --cursor a page printed, "
        "or leave it out to start at the first page"
    )
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
        version, slot_text, id_text = raw.split("|")
        slot, post_id = datetime.fromisoformat(slot_text), int(id_text)
        if version != "1" or slot.tzinfo is None or post_id < 1:
            raise refused
        return slot.astimezone(UTC), post_id
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):
        raise refused from None


def parse_query(
    *,
    status: str | None = None,
    needs_attention: bool = False,
    channel: str | None = None,
    account: str | None = None,
    start: str | None = None,
    end: str | None = None,
    tz: str | None = None,
    week: bool = False,
    search: str | None = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    clock: Clock | None = None,
) -> PostQuery:
    """The query `herald post list`'s options name, as people write them.

    Args:
        status: a post status, or ``needs-attention`` (the same as ``needs_attention``).
        start: ``--from``, read with ``end``, ``tz`` and ``week`` by :func:`parse_window`.
        clock: where now comes from for ``week``; the database's by default.

    Raises:
        UserError: a status, instant or zone herald does not know.
    """
    post_status, attention = parse_status(status) if status is not None else (None, False)
    first, after = parse_window(start, end, tz=tz, week=week, clock=clock)
    return PostQuery(
        status=post_status,
        needs_attention=needs_attention or attention,
        channel=channel,
        account=account,
        start=first,
        end=after,
        search=search,
        limit=limit,
        cursor=cursor,
    )


def parse_status(text: str) -> tuple[PostStatus | None, bool]:
    """What ``--status`` names: a post status, or ``needs-attention`` (a filter of its
    own rather than a status: then ``(None, True)``).

    Raises:
        UserError: neither.
    """
    name = text.strip().lower().replace("-", "_")
    if name == NEEDS_ATTENTION.replace("-", "_"):
        return None, True
    try:
        return PostStatus(name), False
    except ValueError:
        known = ", ".join(s.value for s in PostStatus)
        raise UserError(f"{text!r} is not a post status: use one of {known}, or {NEEDS_ATTENTION}") from None


def parse_window(
    start: str | None = None,
    end: str | None = None,
    *,
    tz: str | None = None,
    week: bool = False,
    clock: Clock | None = None,
) -> tuple[datetime | None, datetime | None]:
    """The ``[start, end)`` instants ``--from``/``--to`` (or ``--week``) name.

    Each is read like a slot's ``--at`` (§11): ISO 8601 with an offset, or a local time in
    ``tz``; a local time that occurs twice (the clocks fall back) is read as the first.

    Args:
        start: the first slot to list.
        end: the slot after the last to list.
        tz: the IANA zone of local times, and of the week (UTC if none).
        week: this week, Monday 00:00 to the next Monday 00:00 in ``tz``, by the one clock.
        clock: where now comes from; the database's by default.

    Raises:
        UserError: unparseable, a local time that does not exist, or ``week`` with either.
    """
    where = zone(tz or "UTC")  # refused at once when unknown, even if no local time needs it
    if week:
        if start is not None or end is not None:
            raise UserError("give --week or --from/--to, not both")
        today = (clock or DatabaseClock(db.engine())).now().astimezone(where).date()
        monday = today - timedelta(days=today.weekday())
        first, after = (datetime.combine(day, time(0), tzinfo=where) for day in (monday, monday + timedelta(7)))
        return first.astimezone(UTC), after.astimezone(UTC)
    return (
        parse_instant(start, tz, 0)[0] if start is not None else None,
        parse_instant(end, tz, 0)[0] if end is not None else None,
    )


def _check(query: PostQuery) -> None:
    if not 1 <= query.limit <= MAX_LIMIT:
        raise UserError(f"--limit must be between 1 and {MAX_LIMIT}; page on with --cursor")
    for name, instant in (("--from", query.start), ("--to", query.end)):
        if instant is not None and instant.tzinfo is None:
            raise UserError(f"{name} {instant.isoformat()} has no offset: add one, or give the zone with --zone")
    if query.start is not None and query.end is not None and query.end <= query.start:
        raise UserError(
            f"--to ({query.end.isoformat()}) must be after --from ({query.start.isoformat()}): the window is [from, to)"
        )
    if query.search is not None and not query.search.strip():
        raise UserError("--search needs some text to look for")


def _channel_id(s: Session, name: str) -> int:
    found = s.execute(select(Channel.id).where(Channel.name == name)).scalar()
    if found is None:
        raise NotFound(f"no channel named {name}; `herald channel list` shows them")
    return int(found)


def _account_id(s: Session, name: str) -> int:
    found = s.execute(select(Account.id).where(Account.name == name)).scalar()
    if found is None:
        raise NotFound(f"no account named {name}; `herald channel list` shows each channel's account")
    return int(found)


def post_row(post: Any, channels: tuple[ChannelState, ...]) -> PostRow:
    """A row of :func:`posts_statement` with its deliveries' states, as a :class:`PostRow`."""
    parts: list[dict[str, Any]] = post.parts or []
    return PostRow(
        id=post.id,
        status=post.status,
        scheduled_at=shown_in(post.scheduled_at, post.zone),
        zone=post.zone,
        account=post.account,
        channels=channels,
        text=_trimmed(str(parts[0].get("text", ""))) if parts else "",
        parts=len(parts),
        needs_attention=post.status in ATTENTION_POSTS or any(c.status in ATTENTION_DELIVERIES for c in channels),
    )


def _trimmed(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TEXT_WIDTH else line[: TEXT_WIDTH - 1] + "…"

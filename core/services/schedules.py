"""Recurring release schedules as people handle them (§12): add, list, show, queue a post,
release now, remove.

A schedule is an RRULE in an IANA zone on one channel (a channel may have several), fed
by a queue of ready posts. Queued posts are drafts, made with every check of
`post create` (``core.services.posts.submit_post``), and never armed until a release
schedules one for its slot (``reconciler.releases``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select

from core.domain.errors import NotFound, UserError
from core.domain.recurrence import DEFAULT_CATCH_UP, Rule, SlotOutcome, parse_rule
from core.domain.states import PostStatus
from core.ledger import live_channel
from core.ledger import schedules as ledger
from core.runtime.arming import arm_release
from core.runtime.clock import Clock, DatabaseClock
from core.services.media import AttachmentSpec
from core.services.posts import Created, submit_post
from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Channel, Delivery, Post, QueuedPost, ReleaseSchedule, ReleaseSlot
from reconciler.releases import ReleaseResult, release

#: The longest catch-up window: a slot older than a year is history, not a release.
LONGEST_CATCH_UP = timedelta(days=366)
#: How many upcoming slots and past outcomes `schedule show` gives.
SHOWN = 5
HISTORY = 20


@dataclass(frozen=True)
class ScheduleView:
    """A schedule; instants in its zone."""

    id: int
    channel: str
    rrule: str
    zone: str
    #: Missed slots older than this many seconds are skipped, not released.
    catch_up_seconds: float
    #: The latest slot a release took; the schedule's start until the first.
    last_release_slot: datetime
    #: The next slot to release; None once the rule has ended.
    next_slot: datetime | None
    #: Posts waiting in its queue (a queued post cancelled or scheduled by hand has left it).
    queued: int


@dataclass(frozen=True)
class QueuedView:
    """A post waiting in a schedule's queue."""

    post_id: int
    #: Its first part's text.
    text: str
    queued_at: datetime


@dataclass(frozen=True)
class SlotView:
    """What became of one slot (or a run of skipped ones)."""

    slot: datetime
    outcome: SlotOutcome
    post_id: int | None
    #: When the released post was scheduled to go out: the slot, or the release's moment
    #: if the slot had passed.
    released_at: datetime | None
    #: When the platform confirmed the released post; None until it has.
    published_at: datetime | None
    #: A skipped run's last slot, and how many slots it holds.
    through: datetime | None
    slots: int


@dataclass(frozen=True)
class ScheduleDetail:
    """`herald schedule show`: the schedule, its next slots, its queue, its recent history."""

    schedule: ScheduleView
    upcoming: tuple[datetime, ...]
    queue: tuple[QueuedView, ...]
    #: Newest first.
    history: tuple[SlotView, ...]


@dataclass(frozen=True)
class ReleaseView:
    """What `herald schedule release` did; instants in the schedule's zone."""

    schedule: int
    result: ReleaseResult
    slot: datetime | None
    post_id: int | None
    #: When the released post goes out.
    at: datetime | None
    skipped: int
    next_slot: datetime | None


@dataclass(frozen=True)
class RemovedSchedule:
    """What `herald schedule remove` did."""

    id: int
    #: The posts that were queued: they stay drafts (`herald post schedule ID` sends one).
    drafts: tuple[int, ...]


def _now(clock: Clock | None) -> datetime:
    return (clock or DatabaseClock(db.engine())).now()


def add_schedule(
    channel: str, rrule: str, zone: str, catch_up: timedelta | None = None, *, clock: Clock | None = None
) -> ScheduleView:
    """Add a recurring release schedule to a channel, and arm the timer of its first slot.

    Args:
        channel: the channel's name.
        rrule: one RFC 5545 RRULE line; it starts now, computed in ``zone``.
        zone: an IANA zone.
        catch_up: missed slots older than this are skipped; 24 h by default.

    Raises:
        NotFound: no such channel.
        UserError: a bad RRULE, an unknown zone, a rule more frequent than once a minute or
            with no slot to come, or a catch-up window out of range.
    """
    window = DEFAULT_CATCH_UP if catch_up is None else catch_up
    if not timedelta(0) < window <= LONGEST_CATCH_UP:
        raise UserError(f"--catch-up must be more than 0 and at most {LONGEST_CATCH_UP.days} days (e.g. 24h)")
    now = _now(clock)
    rule = parse_rule(rrule, zone, now)
    first = rule.next_slot(now)
    assert first is not None  # parse_rule refuses a rule with none
    with db.transaction() as s:
        found = live_channel(s, channel)
        if found is None:
            raise NotFound(f"no channel named {channel!r}; `herald channel list` shows them")
        schedule_id = ledger.insert_schedule(
            s, channel_id=found.id, rule=rule, catch_up=window, next_slot=first, now=now
        ).id
    arm_release(schedule_id, clock)
    return _views([schedule_id])[0]


def list_schedules() -> list[ScheduleView]:
    """Every schedule not removed, oldest first."""
    with db.reading() as s:
        ids = list(
            s.execute(
                select(ReleaseSchedule.id).where(ReleaseSchedule.removed_at.is_(None)).order_by(ReleaseSchedule.id)
            ).scalars()
        )
    return _views(ids)


def show_schedule(schedule_id: int) -> ScheduleDetail:
    """The schedule, its next slots, its queue and its recent outcomes.

    Raises:
        NotFound: no such schedule.
    """
    views = _views([schedule_id])
    if not views:
        raise NotFound(f"no schedule {schedule_id}; `herald schedule list` shows them")
    view, tz = views[0], views[0].zone
    with db.reading() as s:
        row = s.get_one(ReleaseSchedule, schedule_id)
        upcoming = (
            Rule(row.rrule, row.zone, row.starts_at).upcoming(row.last_release_slot, SHOWN)
            if row.next_slot_at is not None
            else []
        )
        queue = s.execute(
            select(QueuedPost.post_id, QueuedPost.queued_at, Post.parts)
            .join(Post, Post.id == QueuedPost.post_id)
            .where(QueuedPost.schedule_id == schedule_id, Post.status == PostStatus.DRAFT)
            .order_by(QueuedPost.id)
        ).all()
        history = s.execute(
            select(ReleaseSlot, Delivery.confirmed_at)
            .outerjoin(Delivery, (Delivery.post_id == ReleaseSlot.post_id) & (Delivery.channel_id == row.channel_id))
            .where(ReleaseSlot.schedule_id == schedule_id)
            .order_by(ReleaseSlot.slot.desc())
            .limit(HISTORY)
        ).all()
    return ScheduleDetail(
        schedule=view,
        upcoming=tuple(shown_in(u, tz) for u in upcoming),
        queue=tuple(
            QueuedView(q.post_id, str(q.parts[0].get("text", "")) if q.parts else "", shown_in(q.queued_at, tz))
            for q in queue
        ),
        history=tuple(
            SlotView(
                slot=shown_in(h.slot, tz),
                outcome=h.outcome,
                post_id=h.post_id,
                released_at=maybe_shown_in(h.released_at, tz),
                published_at=maybe_shown_in(confirmed, tz),
                through=maybe_shown_in(h.through, tz),
                slots=h.slots,
            )
            for h, confirmed in history
        ),
    )


def queue_post(
    schedule_id: int, parts: list[str], *, media: Sequence[AttachmentSpec] = (), clock: Clock | None = None
) -> Created:
    """Queue a post on a schedule: a draft on its channel, with every check of `post create`.

    Raises:
        NotFound: no such schedule.
        UserError: what `post create` refuses (an empty part, content the platform refuses...).
    """
    with db.reading() as s:
        schedule = ledger.live_schedule(s, schedule_id)
        channel = s.get_one(Channel, schedule.channel_id).name
        zone = schedule.zone
    return submit_post(
        channels=[channel], parts=parts, zone=zone, media=media, release_schedule=schedule_id, clock=clock
    )


def release_schedule(schedule_id: int, *, clock: Clock | None = None) -> ReleaseView:
    """Release the schedule's due slot now, as its timer and the reconciler would: the most
    recent slot inside the catch-up window since the last release, once.

    Raises:
        NotFound: no such schedule.
    """
    with db.reading() as s:
        tz = ledger.live_schedule(s, schedule_id).zone
    done = release(schedule_id, clock or DatabaseClock(db.engine()))
    if done is None:
        raise NotFound(f"no schedule {schedule_id}; `herald schedule list` shows them")
    return ReleaseView(
        schedule=schedule_id,
        result=done.result,
        slot=maybe_shown_in(done.slot, tz),
        post_id=done.post_id,
        at=maybe_shown_in(done.at, tz),
        skipped=done.skipped,
        next_slot=maybe_shown_in(done.next_slot, tz),
    )


def remove_schedule(schedule_id: int, *, clock: Clock | None = None) -> RemovedSchedule:
    """Remove a schedule: no slot of it is released again, its history stays, and its queued
    posts stay drafts.

    Raises:
        NotFound: no such schedule, or it was removed already.
    """
    now = _now(clock)
    with db.transaction() as s:
        drafts = ledger.end_schedule(s, schedule_id, now)
    arm_release(schedule_id, clock)  # the row has no next slot: its timer goes
    return RemovedSchedule(schedule_id, tuple(drafts))


def _views(ids: list[int]) -> list[ScheduleView]:
    if not ids:
        return []
    with db.reading() as s:
        queued = dict(
            s.execute(
                select(QueuedPost.schedule_id, func.count())
                .join(Post, Post.id == QueuedPost.post_id)
                .where(QueuedPost.schedule_id.in_(ids), Post.status == PostStatus.DRAFT)
                .group_by(QueuedPost.schedule_id)
            ).all()
        )
        rows = s.execute(
            select(ReleaseSchedule, Channel.name)
            .join(Channel, Channel.id == ReleaseSchedule.channel_id)
            .where(ReleaseSchedule.id.in_(ids), ReleaseSchedule.removed_at.is_(None))
            .order_by(ReleaseSchedule.id)
        ).all()
    return [
        ScheduleView(
            id=r.id,
            channel=name,
            rrule=r.rrule,
            zone=r.zone,
            catch_up_seconds=r.catch_up_seconds,
            last_release_slot=shown_in(r.last_release_slot, r.zone),
            next_slot=maybe_shown_in(r.next_slot_at, r.zone),
            queued=int(queued.get(r.id, 0)),
        )
        for r, name in rows
    ]

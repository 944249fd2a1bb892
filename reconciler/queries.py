"""Every query the reconciler runs, each served by an index (§7).

Each returns a statement, so a test can read the database's own plan for it and prove
that a tick's cost grows with the due or stuck set, not with the size of the tables.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, func, select

from core.domain.states import ACTIVE_DELIVERY, DeliveryStatus, PostStatus
from core.store.models import Alarm, Attempt, Delivery, Post, ReleaseSchedule

#: Posts the queue should be carrying: their slot is due, or comes before the next tick.
UPCOMING = (PostStatus.SCHEDULED,)

#: Not a post ``herald import`` recorded: another system published it, and its slot (the
#: time it published there) is history, never a time to send. Arming refuses such a post
#: too; the queries leave it out so that nothing is even tried.
NOT_IMPORTED = Post.imported_at.is_(None)


def due_posts(horizon: datetime) -> Select[int]:
    """Scheduled posts whose slot is before ``horizon`` (ix_posts_status_scheduled_at)."""
    return select(Post.id).where(Post.status.in_(UPCOMING), Post.scheduled_at <= horizon, NOT_IMPORTED)


def entering_posts(after: datetime, until: datetime) -> Select[int]:
    """Scheduled posts whose slot entered the arming horizon since the last pass: after
    ``after`` and at or before ``until`` (ix_posts_status_scheduled_at)."""
    return select(Post.id).where(
        Post.status.in_(UPCOMING), Post.scheduled_at > after, Post.scheduled_at <= until, NOT_IMPORTED
    )


def stale_leases(before: datetime) -> Select[int]:
    """Posts whose lease expired before ``before`` (now − grace) (ix_posts_lease_expires_at)."""
    return select(Post.id).where(Post.lease_expires_at < before, NOT_IMPORTED)


def parked_deliveries(horizon: datetime) -> Select[int]:
    """Posts with a retry, or an embargoed first send, due before ``horizon``
    (ix_deliveries_status_next_attempt_at)."""
    return (
        select(Delivery.post_id)
        .where(
            Delivery.status.in_([DeliveryStatus.RETRY_WAIT, DeliveryStatus.PENDING]),
            Delivery.next_attempt_at <= horizon,
        )
        .distinct()
    )


def overdue_posts(before: datetime) -> Select[int]:
    """Posts still waiting to go out whose slot was before ``before`` and that no embargo
    explains: the missed-slot candidates (ix_posts_status_scheduled_at).

    Asked on its own, not joined to deliveries: status and slot are correlated, and
    PostgreSQL's planner misjudges the join on a large table and scans it.
    """
    return select(Post.id).where(
        Post.status.in_([PostStatus.SCHEDULED, PostStatus.PUBLISHING]),
        Post.scheduled_at < before,
        (Post.not_before.is_(None)) | (Post.not_before < before),
        NOT_IMPORTED,
    )


def active_deliveries(post_ids: list[int]) -> Select[int, int, datetime, DeliveryStatus, str | None]:
    """The deliveries of ``post_ids`` that still have work to do (uq_deliveries_post_channel)."""
    return (
        select(Delivery.post_id, Delivery.channel_id, Post.scheduled_at, Delivery.status, Delivery.detail)
        .join(Post, Post.id == Delivery.post_id)
        .where(Delivery.post_id.in_(post_ids), Delivery.status.in_(ACTIVE_DELIVERY))
    )


def recent_confirmations(since: datetime, channel_ids: list[int]) -> Select[int]:
    """Deliveries on ``channel_ids`` confirmed since ``since`` and not yet seen by a
    read-back (ix_deliveries_confirmed_at)."""
    return select(Delivery.id).where(
        Delivery.confirmed_at >= since, Delivery.first_seen_at.is_(None), Delivery.channel_id.in_(channel_ids)
    )


def settling_deliveries(since: datetime, channel_ids: list[int]) -> Select[int]:
    """Deliveries on ``channel_ids`` with an attempt started since ``since``, whatever
    their state: the settle window in which a copy an attempt made may still appear in a
    lagging search (ix_attempts_started_at)."""
    return (
        select(Attempt.delivery_id)
        .join(Delivery, Delivery.id == Attempt.delivery_id)
        .where(Attempt.started_at >= since, Delivery.channel_id.in_(channel_ids))
        .distinct()
    )


def open_alarms() -> Select[Alarm]:
    """Alarms not resolved (the unique index on open_key holds exactly these)."""
    # Every open key is a non-empty string; SQLite serves ``> ''`` from the index, where
    # it would scan the table for ``IS NOT NULL``.
    return select(Alarm).where(Alarm.open_key > "")


def oldest_unclaimed_due(now: datetime) -> Select[datetime]:
    """The earliest slot that is due and that no worker has claimed yet."""
    return select(func.min(Post.scheduled_at)).where(Post.status == PostStatus.SCHEDULED, Post.scheduled_at <= now)


def due_schedules(horizon: datetime) -> Select[int]:
    """Recurring schedules whose next slot comes before ``horizon``; a removed or ended
    one holds none (ix_release_schedules_next_slot_at)."""
    return select(ReleaseSchedule.id).where(ReleaseSchedule.next_slot_at <= horizon)

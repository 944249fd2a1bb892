"""Channels as the ledger changes them: whether herald may post with a channel's
credentials (the one writer of ``channels.connected``), and a channel's removal with
the deliveries it cancels first.

The publish path marks a channel disconnected when the platform refuses its
credentials; a person's reconnect marks it connected again. Admission reads the flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, delete, exists, select, update
from sqlalchemy.orm import Session, selectinload

from core.domain.states import DeliveryStatus, summarize
from core.ledger.moves import delivery_states, move
from core.ledger.schedules import end_channel_schedules
from core.store.models import NAME_LENGTH, Alarm, Channel, Delivery, Post, PostingSlot, Publication, ReleaseSchedule

channels = cast(Table, Channel.__table__)

#: Deliveries that still have work to do or wait for a person: a channel is not removed under them.
UNFINISHED = (DeliveryStatus.PENDING, DeliveryStatus.SENDING, DeliveryStatus.RETRY_WAIT, DeliveryStatus.HELD)


def set_connected(conn: Connection | Session, channel_id: int, *, connected: bool) -> None:
    """Mark channel ``channel_id`` connected or disconnected, in the caller's transaction."""
    conn.execute(update(channels).where(channels.c.id == channel_id).values(connected=connected))


def live_channel(s: Session, name: str, *, for_update: bool = False) -> Channel | None:
    """The channel called ``name`` that has not been removed (locked with ``for_update``)."""
    query = select(Channel).where(Channel.name == name, Channel.removed_at.is_(None))
    if for_update:
        query = query.with_for_update()
    return s.execute(query).scalar_one_or_none()


def unfinished_deliveries(s: Session, channel_id: int) -> list[Delivery]:
    """The channel's deliveries that are not finished, read after their posts are locked.

    Each post's row is locked first (in id order), as a worker's claim takes it, so what
    is read here cannot be claimed until the caller commits: a delivery read ``pending``
    is not being sent.
    """
    post_ids = s.execute(
        select(Delivery.post_id).where(Delivery.channel_id == channel_id, Delivery.status.in_(UNFINISHED)).distinct()
    ).scalars()
    for post_id in sorted(post_ids):
        s.get(Post, post_id, with_for_update=True)
    query = (
        select(Delivery)
        .where(Delivery.channel_id == channel_id, Delivery.status.in_(UNFINISHED))
        .options(selectinload(Delivery.parts))
        .order_by(Delivery.post_id)
        .execution_options(populate_existing=True)
    )
    return list(s.execute(query).scalars())


def cancel_deliveries(s: Session, deliveries: Sequence[Delivery], now: datetime, detail: str) -> list[int]:
    """Cancel ``deliveries`` (none of them sending; see :func:`unfinished_deliveries`) and
    store each post's new summary. Returns the posts' ids."""
    for d in deliveries:
        move(d, DeliveryStatus.CANCELLED)
        d.reason = None
        d.detail = detail
        d.next_attempt_at = None
    post_ids = sorted({d.post_id for d in deliveries})
    s.flush()
    for post_id in post_ids:
        post = s.get_one(Post, post_id)
        post.status = summarize(delivery_states(s, post_id), claimed=post.fence > 0)
        post.updated_at = now
    return post_ids


def remove_channel(s: Session, channel: Channel, now: datetime) -> str | None:
    """Remove a channel none of whose deliveries is unfinished.

    A channel nothing refers to is deleted. One whose posts keep its history (their
    deliveries, publications and attempts name it) keeps its row: marked removed,
    disconnected so nothing is ever sent to it again, and renamed ``NAME (removed #ID)``
    so its name is free for a new channel while the history still reads which one it was.
    Its recurring schedules are removed with it (their history kept).

    Either way its posting slots go: nothing is queued to it again.

    Returns:
        The name the history now shows, or None when the channel was deleted.
    """
    end_channel_schedules(s, channel.id, now)
    s.execute(delete(PostingSlot).where(PostingSlot.channel_id == channel.id))
    referred = s.execute(
        select(
            exists().where(Delivery.channel_id == channel.id)
            | exists().where(Publication.channel_id == channel.id)
            | exists().where(Alarm.channel_id == channel.id)
            | exists().where(ReleaseSchedule.channel_id == channel.id)
        )
    ).scalar_one()
    if not referred:
        s.execute(delete(Channel).where(Channel.id == channel.id))
        return None
    suffix = f" (removed #{channel.id})"
    channel.name = channel.name[: NAME_LENGTH - len(suffix)] + suffix
    channel.removed_at = now
    s.flush()
    set_connected(s, channel.id, connected=False)
    return channel.name

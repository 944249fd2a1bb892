"""Needs attention (§15, §18): every delivery of an account that waits for a person – held,
failed, or in doubt (held ``ambiguous_outcome``) – across posts, newest slot first, each
with its reason's explanation and the action that fixes it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.services.finding import ATTENTION_DELIVERIES
from core.services.views import shown_in
from core.store import db
from core.store.models import Channel, Delivery, Post

#: The most deliveries the view lists.
ATTENTION_LIMIT = 200


@dataclass(frozen=True)
class AttentionRow:
    """A delivery waiting for a person; its slot in the post's zone."""

    post_id: int
    post_status: PostStatus
    scheduled_at: datetime
    channel: str
    #: Whether the channel is connected (False: reconnect it first).
    connected: bool
    status: DeliveryStatus
    reason: Reason | None
    explanation: str | None
    action: str | None
    detail: str | None


def needing_attention(account_id: int, *, limit: int = ATTENTION_LIMIT) -> list[AttentionRow]:
    """The account's held and failed deliveries, newest slot first (then newest post)."""
    query = (
        select(
            Post.id,
            Post.status.label("post_status"),
            Post.scheduled_at,
            Post.zone,
            Channel.name.label("channel"),
            Channel.connected,
            Delivery.status,
            Delivery.reason,
            Delivery.detail,
        )
        .join(Delivery, Delivery.post_id == Post.id)
        .join(Channel, Channel.id == Delivery.channel_id)
        .where(Post.account_id == account_id, Delivery.status.in_(ATTENTION_DELIVERIES))
        .order_by(Post.scheduled_at.desc(), Post.id.desc(), Delivery.id)
        .limit(limit)
    )
    with db.reading() as s:
        rows = s.execute(query).all()
    return [
        AttentionRow(
            post_id=row.id,
            post_status=row.post_status,
            scheduled_at=shown_in(row.scheduled_at, row.zone),
            channel=row.channel,
            connected=row.connected,
            status=row.status,
            reason=row.reason,
            explanation=row.reason.explanation if row.reason is not None else None,
            action=row.reason.action if row.reason is not None else None,
            detail=row.detail,
        )
        for row in rows
    ]

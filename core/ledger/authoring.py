"""Rows people create and change (API, CLI): posts with their deliveries and parts,
rescheduling, cancelling, approval, lifting holds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason, summarize
from core.ledger.moves import delivery_state, delivery_states, move
from core.store.models import Approval, Delivery, DeliveryPart, Post


def insert_post(
    s: Session,
    *,
    account_id: int,
    channel_ids: list[int],
    parts: list[dict[str, Any]],
    scheduled_at: datetime,
    zone: str,
    not_before: datetime | None,
    approval: Approval,
    now: datetime,
) -> Post:
    """A new scheduled post with one pending delivery per channel and its parts."""
    post = Post(
        account_id=account_id,
        status=PostStatus.SCHEDULED,
        scheduled_at=scheduled_at,
        zone=zone,
        parts=parts,
        not_before=not_before,
        approval=approval,
        created_at=now,
        updated_at=now,
    )
    s.add(post)
    for channel_id in channel_ids:
        delivery = Delivery(channel_id=channel_id, status=DeliveryStatus.PENDING)
        delivery.parts = [
            DeliveryPart(idx=i, text=p["text"], media=list(p.get("media", [])), state=PartState.UNSENT)
            for i, p in enumerate(parts)
        ]
        post.deliveries.append(delivery)
    s.flush()
    return post


def _post_for_change(s: Session, post_id: int) -> Post:
    post = s.get(Post, post_id, with_for_update=True)  # SQLite: its write lock, taken at BEGIN
    if post is None:
        raise NotFound(f"no post {post_id}; `herald post list` shows the posts")
    return post


def reschedule_post(s: Session, post_id: int, at: datetime, zone: str, now: datetime) -> Post:
    """Move a post that has not started publishing to a new slot."""
    post = _post_for_change(s, post_id)
    if post.status not in (PostStatus.SCHEDULED, PostStatus.HELD, PostStatus.DRAFT) or post.fence > 0:
        raise Conflict(f"post {post_id} is {post.status}: only a post that has not started publishing can be moved")
    post.scheduled_at = at
    post.zone = zone
    post.updated_at = now
    return post


def cancel_post(s: Session, post_id: int, now: datetime) -> Post:
    """Cancel every delivery that has not published; refused while an attempt is in doubt."""
    post = _post_for_change(s, post_id)
    deliveries = list(post.deliveries)
    if any(p.state is PartState.SENDING for d in deliveries for p in d.parts):
        raise Conflict(f"post {post_id} has an attempt in doubt (a part is 'sending'); resolve it before cancelling")
    for d in deliveries:
        if d.status in (DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT, DeliveryStatus.HELD):
            move(d, DeliveryStatus.CANCELLED)
    post.status = summarize((delivery_state(d) for d in deliveries), claimed=post.fence > 0)
    post.updated_at = now
    return post


def set_approval(s: Session, post_id: int, approval: Approval, now: datetime) -> Post:
    post = _post_for_change(s, post_id)
    post.approval = approval
    post.updated_at = now
    return post


def lift_holds(
    s: Session,
    reasons: frozenset[Reason],
    now: datetime,
    post_id: int | None = None,
    channel_id: int | None = None,
) -> list[int]:
    """Put deliveries held for ``reasons`` back to pending; admission asks again at the claim.

    A part left ``sending`` by the attempt that was held stays so: the next claim settles
    it by the adapter's strategy, as any attempt in doubt.

    Returns:
        The ids of the posts to arm again.
    """
    query = select(Delivery).where(Delivery.status == DeliveryStatus.HELD, Delivery.reason.in_(reasons))
    if post_id is not None:
        query = query.where(Delivery.post_id == post_id)
    if channel_id is not None:
        query = query.where(Delivery.channel_id == channel_id)
    touched: set[int] = set()
    for d in s.execute(query).scalars():
        move(d, DeliveryStatus.PENDING)
        d.reason = None
        d.detail = None
        touched.add(d.post_id)
    for pid in touched:
        post = s.get_one(Post, pid)
        post.status = summarize(delivery_states(s, pid), claimed=post.fence > 0)
        post.updated_at = now
    return sorted(touched)

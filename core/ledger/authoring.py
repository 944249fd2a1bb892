"""Rows people create and change (API, CLI): posts with their deliveries and parts,
rescheduling, cancelling, approval, lifting holds."""

from __future__ import annotations

from dataclasses import dataclass
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


#: The delivery statuses a cancel stops: nothing of them is on its way to the platform.
CANCELLABLE = frozenset({DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT, DeliveryStatus.HELD})


@dataclass(frozen=True)
class Cancelled:
    """What a cancel did: the post, and the deliveries it stopped."""

    post: Post
    deliveries: list[Delivery]


def cancel_post(s: Session, post_id: int, now: datetime) -> Cancelled:
    """Cancel every delivery that has not published, and the rest of a thread that has
    published some parts; what published stays.

    Raises:
        Conflict: an attempt is in doubt, or no delivery is waiting to be sent (the post
            published, failed, was cancelled already, or is being sent right now).
    """
    post = _post_for_change(s, post_id)
    deliveries = list(post.deliveries)
    if any(p.state is PartState.SENDING for d in deliveries for p in d.parts):
        raise Conflict(f"post {post_id} has an attempt in doubt (a part is 'sending'); resolve it before cancelling")
    stopped = [d for d in deliveries if d.status in CANCELLABLE]
    if not stopped:
        raise Conflict(_nothing_to_cancel(post))
    for d in stopped:
        move(d, DeliveryStatus.CANCELLED)
    post.status = summarize((delivery_state(d) for d in deliveries), claimed=post.fence > 0)
    post.updated_at = now
    return Cancelled(post, stopped)


def _nothing_to_cancel(post: Post) -> str:
    show = f"`herald post show {post.id}`"
    if post.status is PostStatus.CANCELLED:
        return f"post {post.id} is already cancelled: there is nothing left to cancel"
    if post.status is PostStatus.PUBLISHED:
        return (
            f"post {post.id} is already published on every channel: there is nothing left to cancel "
            "(herald does not delete published posts; remove it on the platform)"
        )
    if post.status is PostStatus.PUBLISHING:
        return f"post {post.id} is being sent right now, so nothing waits to be cancelled; {show} shows how it ends"
    return f"post {post.id} is {post.status}: no channel is waiting to be sent, so there is nothing to cancel ({show})"


def set_approval(s: Session, post_id: int, approval: Approval, now: datetime) -> Post:
    """Record a reviewer's decision on a post that waits for one.

    Raises:
        Conflict: the post needs no approval, already has this one, or was cancelled.
    """
    post = _post_for_change(s, post_id)
    if post.approval is Approval.NOT_REQUIRED:
        raise Conflict(
            f"post {post_id} needs no approval (it was created without --needs-approval): "
            f"nothing to approve; it goes out at its slot (`herald post show {post_id}`)"
        )
    if post.approval is approval:
        raise Conflict(f"post {post_id} is already {approval}: nothing to do (`herald post show {post_id}`)")
    if post.status is PostStatus.CANCELLED:
        raise Conflict(
            f"post {post_id} is cancelled: approving it would send nothing; create it again with `herald post create`"
        )
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

"""What support staff do to a delivery (§18), written: a retry, a reconnect's lift, an
attempt in doubt resolved as landed or sent again, a copy found before the first send
adopted or published beside, each recorded for the timeline.

The service (``core.services.support``) decides which deliveries an action applies to,
inside the transaction these functions write in; every move goes through the checked
:func:`~core.ledger.moves.move`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason, summarize
from core.ledger.imports import refuse_imported
from core.ledger.moves import delivery_states, move
from core.ledger.results import record_publication
from core.runtime.lease import stale_at, stale_before
from core.store.models import Delivery, DeliveryPart, Post, SupportAction

#: ``support_actions.action`` values.
RETRY, RECONNECT, LANDED, SEND_AGAIN, ADOPT = "retry", "reconnect", "landed", "send_again", "adopt"


def post_for_support(s: Session, post_id: int) -> Post:
    """The post, its row locked for the transaction (SQLite: its write lock, taken at BEGIN).

    Raises:
        NotFound: no such post.
        Conflict: the post was imported (another system published it).
    """
    post = s.get(Post, post_id, with_for_update=True)
    if post is None:
        raise NotFound(f"no post {post_id}; `herald post show ID` shows a post, `herald timeline ID` its history")
    refuse_imported(post)
    return post


def fence_post(s: Session, post_id: int, now: datetime, grace: float) -> Post:
    """Take the post's fence as a claim does (§5): the fence goes up only while no live
    worker holds the lease, so an attempt of a worker that died is fenced out of writing
    after a person's decision, and a live one is never cut short.

    A stale lease is left in place (the reconciler re-drives a post by its stale lease);
    :func:`summarise` gives the lease back when no delivery is left ``sending``.

    Raises:
        NotFound: no such post.
        Conflict: a worker holds a live lease on the post.
    """
    fenced = s.execute(
        update(Post)
        .where(
            Post.id == post_id,
            or_(Post.lease_owner.is_(None), Post.lease_expires_at < stale_before(now, grace)),
        )
        .values(fence=Post.fence + 1, updated_at=now)
        .returning(Post.id)
        .execution_options(synchronize_session=False)
    ).scalar()
    post = post_for_support(s, post_id)
    if fenced is None:
        until = stale_at(post.lease_expires_at, grace) if post.lease_expires_at else now
        raise Conflict(
            f"post {post_id} is being published by a worker right now (its lease runs until "
            f"{until.isoformat(timespec='seconds')} at the latest); try again once it ends"
        )
    s.refresh(post)  # the fence the update wrote
    return post


def redrive(
    s: Session, delivery: Delivery, action: str, detail: str, now: datetime, part_idx: int | None = None
) -> None:
    """Put a failed or held delivery back to ``pending`` with a fresh attempt budget, and
    record why; the next claim asks admission again (§8) and sends it.

    A part left ``sending`` stays so: the next claim settles it by the adapter's strategy,
    as any attempt in doubt.
    """
    move(delivery, DeliveryStatus.PENDING)
    delivery.reason = None
    delivery.detail = None
    delivery.next_attempt_at = None
    delivery.budget_start = delivery.attempts
    record(s, delivery, action, detail, now, part_idx)


def send_again(s: Session, delivery: Delivery, part: DeliveryPart, now: datetime, detail: str) -> None:
    """A delivery held ``ambiguous_outcome`` put back so that the next attempt sends the
    part in doubt once more: the person accepted that a second copy may appear. Held
    ``duplicate_suspected``, the next attempt sends without the pre-publish check.

    The acceptance is the number of the next attempt (``resend_attempt``): exactly that
    one sends despite the doubt (or the copy found); any later one settles the doubt by
    the strategy again.
    """
    redrive(s, delivery, SEND_AGAIN, detail, now, part.idx)
    delivery.resend_attempt = delivery.attempts + 1


def landed(
    s: Session,
    post: Post,
    delivery: Delivery,
    part: DeliveryPart,
    platform_id: str,
    url: str,
    now: datetime,
    *,
    action: str = LANDED,
    detail: str,
) -> None:
    """The part in doubt (or the copy found before its first send, ``action`` ``adopt``)
    recorded as published where a person saw it; ``detail`` says so in the timeline.

    The last part marks the delivery published and inserts its publication row (§4),
    which names the thread's first part; an earlier one puts the delivery back to
    ``pending`` so the rest of the thread goes out. The caller holds the post's fence
    (:func:`fence_post`).
    """
    part.state = PartState.PUBLISHED
    part.platform_id = platform_id
    part.url = url
    part.published_at = now
    if part is not delivery.parts[-1]:
        redrive(s, delivery, action, detail, now, part.idx)
        return
    move(delivery, DeliveryStatus.PUBLISHED)
    delivery.reason = None
    delivery.detail = None
    delivery.confirmed_at = now
    record(s, delivery, action, detail, now, part.idx)
    first = delivery.parts[0]
    s.flush()
    record_publication(
        s.connection(),
        post.id,
        delivery.channel_id,
        post.scheduled_at,
        post.revision,
        first.platform_id or platform_id,
        first.url or url,
        now,
    )


def lift_channel_holds(s: Session, channel_id: int, reasons: frozenset[Reason], now: datetime) -> list[int]:
    """A reconnect: re-drive the channel's deliveries held for ``reasons``, each recorded.

    The posts' rows are locked before their deliveries change, in the order a claim takes
    them (post, then deliveries), so a reconnect and a claim never wait for each other.

    Returns:
        The ids of the posts to arm again.
    """
    held = (Delivery.channel_id == channel_id, Delivery.status == DeliveryStatus.HELD, Delivery.reason.in_(reasons))
    post_ids = sorted(s.execute(select(Delivery.post_id).where(*held).distinct()).scalars())
    posts = [post_for_support(s, post_id) for post_id in post_ids]
    for delivery in s.execute(select(Delivery).where(*held, Delivery.post_id.in_(post_ids))).scalars():
        redrive(s, delivery, RECONNECT, f"the channel was reconnected, lifting {delivery.reason}", now)
    for post in posts:
        summarise(s, post, now)
    return post_ids


def record(
    s: Session, delivery: Delivery, action: str, detail: str, now: datetime, part_idx: int | None = None
) -> None:
    """A person's action on ``delivery`` (on one of its parts), for the timeline."""
    s.add(
        SupportAction(
            post_id=delivery.post_id, delivery_id=delivery.id, action=action, part_idx=part_idx, detail=detail, at=now
        )
    )


def summarise(s: Session, post: Post, now: datetime, *, fenced: bool = False) -> PostStatus:
    """The post's status from its deliveries, in the same transaction that changed them.

    Args:
        fenced: the caller took the post's fence (:func:`fence_post`): the lease, free or
            stale, is given back once no delivery is ``sending``, as a claim's last write
            does. A live lease (a retry beside a running job) is never touched.
    """
    s.flush()
    states = delivery_states(s, post.id)
    post.status = summarize(states, claimed=post.fence > 0)
    post.updated_at = now
    if fenced and all(state.status is not DeliveryStatus.SENDING for state in states):
        post.lease_owner = None
        post.lease_expires_at = None
    return post.status

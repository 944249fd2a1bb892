"""The publish path's writes: the claim, and every fenced write of an attempt.

The fencing rule, in one place: a write of an attempt opens its transaction with
``UPDATE posts ... WHERE fence = :fence`` (which also renews the lease). If that touches
no row, a newer claim superseded the attempt, and the whole transaction is rolled back
and reported as :class:`FencedOut` – nothing of the stale attempt is recorded.

On PostgreSQL that first UPDATE also locks the post's row until commit, so a competing
claim waits for it; on SQLite ``BEGIN IMMEDIATE`` serialises writers outright.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from core import db
from core.adapter import Published
from core.admission import Admit, Hold, Wait, admit
from core.errors import FencedOut
from core.keys import delivery_key
from core.models import Account, Attempt, Delivery, DeliveryPart, Post, Publication, Switch
from core.states import DeliveryState, DeliveryStatus, PartState, PostStatus, Reason, check_transition, summarize

log = logging.getLogger(__name__)

GLOBAL_STOP = "emergency_stop"


@dataclass(frozen=True)
class PartPlan:
    """One part as the job needs it, detached from the session."""

    idx: int
    text: str
    media: tuple[str, ...]
    state: PartState
    key: str
    attempt_started_at: datetime | None
    platform_id: str | None


@dataclass(frozen=True)
class DeliveryPlan:
    """A delivery the claim admitted, with its first unpublished part already ``sending``."""

    delivery_id: int
    channel_id: int
    platform: str
    settings: dict[str, Any]
    parts: tuple[PartPlan, ...]
    #: Index of the first part that is not published.
    start: int
    #: Whether that part was already ``sending`` before this claim: an attempt in doubt.
    in_doubt: bool
    attempts: int


@dataclass(frozen=True)
class Claim:
    post_id: int
    fence: int
    worker: str
    slot: datetime
    revision: int
    plans: tuple[DeliveryPlan, ...] = field(default_factory=tuple)


# -- the claim -----------------------------------------------------------------------


def claim_post(post_id: int, worker: str, now: datetime, lease: float, grace: float) -> Claim | None:
    """Claim ``post_id`` and prepare every due delivery, in one committed transaction.

    The compare-and-set takes the lease only when it is free or expired for longer than
    the grace window, and increments the fence. In the same transaction admission is
    asked for each due delivery, holds are recorded, and each admitted delivery's first
    unpublished part gets its key and ``sending`` – committed before any platform call.

    Returns:
        The claim with its plans, or None when another worker holds a live lease or the
        post is not in a publishable state.
    """
    with db.transaction() as s:
        fence = s.execute(
            update(Post)
            .where(
                Post.id == post_id,
                Post.status.in_([PostStatus.SCHEDULED, PostStatus.PUBLISHING]),
                (Post.lease_owner.is_(None)) | (Post.lease_expires_at < now - timedelta(seconds=grace)),
            )
            .values(
                fence=Post.fence + 1,
                lease_owner=worker,
                lease_expires_at=now + timedelta(seconds=lease),
                updated_at=now,
            )
            .returning(Post.fence)
            .execution_options(synchronize_session=False)
        ).scalar_one_or_none()
        if fence is None:
            return None
        post = _load_post(s, post_id)
        global_stop = _global_stop(s)
        plans = []
        for delivery in post.deliveries:
            if not _due(post, delivery, now):
                continue
            decision = admit(post, delivery.channel, _account(s, post), global_stop=global_stop, now=now)
            if isinstance(decision, Hold):
                move(delivery, DeliveryStatus.HELD, decision.reason)
            elif isinstance(decision, Wait):
                delivery.status = DeliveryStatus.PENDING
                delivery.next_attempt_at = decision.until
            else:
                assert isinstance(decision, Admit)
                plans.append(_prepare(s, post, delivery, fence, worker, now))
        post.status = summarize((delivery_state(d) for d in post.deliveries), claimed=True)
        return Claim(post_id, fence, worker, post.scheduled_at, post.revision, tuple(plans))


def _due(post: Post, delivery: Delivery, now: datetime) -> bool:
    if delivery.status is DeliveryStatus.SENDING:
        return True  # the attempt that set it died: re-drive
    if delivery.status not in (DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT):
        return False
    if post.scheduled_at > now:
        return False
    return delivery.next_attempt_at is None or delivery.next_attempt_at <= now


def _prepare(s: Session, post: Post, delivery: Delivery, fence: int, worker: str, now: datetime) -> DeliveryPlan:
    parts = delivery.parts
    start = next(p.idx for p in parts if p.state is not PartState.PUBLISHED)
    first = parts[start]
    in_doubt = first.state is PartState.SENDING
    if not in_doubt:
        # §4: the key and 'sending' are committed before the first platform call.
        first.key = delivery_key(post.id, delivery.channel_id, post.scheduled_at, post.revision, first.idx)
        first.state = PartState.SENDING
        first.attempt_started_at = now
    move(delivery, DeliveryStatus.SENDING)
    delivery.attempts += 1
    delivery.claimed_at = delivery.claimed_at or now
    s.add(
        Attempt(
            post_id=post.id,
            delivery_id=delivery.id,
            part_idx=first.idx,
            fence=fence,
            worker=worker,
            action="recover" if in_doubt else "send",
            started_at=now,
        )
    )
    return DeliveryPlan(
        delivery_id=delivery.id,
        channel_id=delivery.channel_id,
        platform=delivery.channel.platform,
        settings=dict(delivery.channel.settings),
        parts=tuple(
            PartPlan(
                idx=p.idx,
                text=p.text,
                media=tuple(str(m.get("url", "")) for m in p.media),
                state=p.state,
                key=p.key or delivery_key(post.id, delivery.channel_id, post.scheduled_at, post.revision, p.idx),
                attempt_started_at=p.attempt_started_at,
                platform_id=p.platform_id,
            )
            for p in parts
        ),
        start=start,
        in_doubt=in_doubt,
        attempts=delivery.attempts,
    )


# -- fenced writes of an attempt -------------------------------------------------------


@contextmanager
def fenced(post_id: int, fence: int, now: datetime, lease: float) -> Iterator[Session]:
    """A transaction that first proves ``fence`` is still current (and renews the lease).

    Raises:
        FencedOut: a newer claim holds the post; nothing is written.
    """
    with db.transaction() as s:
        result: CursorResult[Any] = s.execute(  # type: ignore[assignment]
            update(Post)
            .where(Post.id == post_id, Post.fence == fence)
            .values(lease_expires_at=now + timedelta(seconds=lease))
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 0:
            log.warning("post %s: attempt with fence %s was fenced out; recording nothing", post_id, fence)
            raise FencedOut(f"post {post_id}: fence {fence} superseded")
        yield s


def renew_lease(post_id: int, fence: int, now: datetime, lease: float) -> bool:
    """Heartbeat: extend the lease; False when the attempt was fenced out or has released it."""
    with db.transaction() as s:
        result: CursorResult[Any] = s.execute(  # type: ignore[assignment]
            update(Post)
            .where(Post.id == post_id, Post.fence == fence, Post.lease_owner.is_not(None))
            .values(lease_expires_at=now + timedelta(seconds=lease))
            .execution_options(synchronize_session=False)
        )
        return bool(result.rowcount)


def part_published(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    result: Published,
    now: datetime,
    lease: float,
    *,
    adopted: bool = False,
) -> bool:
    """Record a part the platform confirmed (or that read-back found and adopted).

    The next part, if any, gets its key and ``sending`` in the same commit – before its
    call. The last part marks the delivery published and inserts its publication row.

    Returns:
        True when another part of the delivery is now ``sending`` and should be sent.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as s:
        delivery = s.get_one(Delivery, delivery_id)
        parts = delivery.parts
        part = parts[part_idx]
        part.state = PartState.PUBLISHED
        part.platform_id = result.platform_id
        part.url = result.url
        part.published_at = now
        _end_attempt(s, claim, delivery_id, now, "adopted" if adopted else "published")
        if adopted:
            delivery.first_seen_at = delivery.first_seen_at or now
        more = part_idx + 1 < len(parts)
        if more:
            nxt = parts[part_idx + 1]
            nxt.key = delivery_key(claim.post_id, delivery.channel_id, claim.slot, claim.revision, nxt.idx)
            nxt.state = PartState.SENDING
            nxt.attempt_started_at = now
            s.add(_attempt(claim, delivery_id, nxt.idx, "send", now))
        else:
            move(delivery, DeliveryStatus.PUBLISHED)
            delivery.reason = None
            delivery.detail = None
            delivery.confirmed_at = now
            record_publication(s, claim.post_id, delivery.channel_id, claim.slot, claim.revision, parts[0], now)
        _finish(s, claim, now)
        return more


def delivery_parked(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    *,
    in_doubt: bool,
    next_attempt_at: datetime | None,
    reason: Reason | None,
    detail: str,
    now: datetime,
    lease: float,
) -> None:
    """Record a transient failure: park the delivery until ``next_attempt_at``.

    A part that may have landed stays ``sending``; one that provably did not goes back
    to ``unsent``. With no ``next_attempt_at`` (retries exhausted) the delivery fails
    with ``platform_unavailable``, or is held ``ambiguous_outcome`` when a copy may exist.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as s:
        delivery = s.get_one(Delivery, delivery_id)
        part = delivery.parts[part_idx]
        part.state = PartState.SENDING if in_doubt else PartState.UNSENT
        _end_attempt(s, claim, delivery_id, now, "ambiguous" if in_doubt else "not_sent", detail)
        delivery.detail = detail
        if next_attempt_at is not None:
            move(delivery, DeliveryStatus.RETRY_WAIT)
            delivery.reason = reason
            delivery.next_attempt_at = next_attempt_at
        elif in_doubt:
            move(delivery, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME)
        else:
            move(delivery, DeliveryStatus.FAILED, Reason.PLATFORM_UNAVAILABLE)
        _finish(s, claim, now)


def delivery_stopped(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    *,
    status: DeliveryStatus,
    reason: Reason,
    detail: str,
    in_doubt: bool,
    now: datetime,
    lease: float,
    disconnect: bool = False,
) -> None:
    """Record a delivery that ends (``failed``) or waits for a person (``held``).

    Args:
        in_doubt: keep the part ``sending`` (a copy may exist) rather than ``unsent``.
        disconnect: also mark the channel disconnected (credentials refused).
    """
    with fenced(claim.post_id, claim.fence, now, lease) as s:
        delivery = s.get_one(Delivery, delivery_id)
        part = delivery.parts[part_idx]
        part.state = PartState.SENDING if in_doubt else PartState.UNSENT
        _end_attempt(s, claim, delivery_id, now, str(reason), detail)
        move(delivery, status, reason)
        delivery.detail = detail
        if disconnect:
            delivery.channel.connected = False
        _finish(s, claim, now)


def release(claim: Claim, now: datetime, lease: float) -> None:
    """Store the post's summary status and give the lease back (a claim with nothing to send)."""
    try:
        with fenced(claim.post_id, claim.fence, now, lease) as s:
            _finish(s, claim, now)
    except FencedOut:
        pass


def record_publication(
    s: Session,
    post_id: int,
    channel_id: int,
    slot: datetime,
    revision: int,
    part: DeliveryPart,
    now: datetime,
) -> Publication:
    """Insert the publication row, or return the one already there (§4).

    ``ON CONFLICT DO NOTHING RETURNING`` makes a second publish of the same
    (post, channel, slot, revision) a no-op that answers with the first outcome.
    """
    insert = postgresql.insert if s.get_bind().dialect.name == "postgresql" else sqlite.insert
    values = {
        "post_id": post_id,
        "channel_id": channel_id,
        "slot": slot,
        "revision": revision,
        "platform_id": part.platform_id,
        "url": part.url,
        "created_at": now,
    }
    new_id = s.execute(insert(Publication).values(**values).on_conflict_do_nothing().returning(Publication.id)).scalar()
    if new_id is not None:
        return Publication(id=new_id, **values)
    log.warning("post %s channel %s: publication already recorded; keeping the first", post_id, channel_id)
    return s.execute(
        select(Publication).where(
            Publication.post_id == post_id,
            Publication.channel_id == channel_id,
            Publication.slot == slot,
            Publication.revision == revision,
        )
    ).scalar_one()


# -- shared pieces ----------------------------------------------------------------------------


def _finish(s: Session, claim: Claim, now: datetime) -> None:
    """Store the post's summary status, and give the lease back once nothing is sending.

    The release is decided here, inside the write that may be the claim's last, from the
    rows themselves: a delivery whose result is still waiting for its own commit is
    ``sending``, so no other delivery's commit can release the lease from under it.
    """
    states = delivery_states(s, claim.post_id)  # flushes this transaction's changes first
    values: dict[str, Any] = {"status": summarize(states, claimed=True), "updated_at": now}
    if all(state.status is not DeliveryStatus.SENDING for state in states):
        values.update(lease_owner=None, lease_expires_at=None)
    s.execute(
        update(Post).where(Post.id == claim.post_id).values(**values).execution_options(synchronize_session=False)
    )


def delivery_states(s: Session, post_id: int) -> list[DeliveryState]:
    """Every delivery's status and published parts, for :func:`summarize`, in one query."""
    published = (DeliveryPart.delivery_id == Delivery.id) & (DeliveryPart.state == PartState.PUBLISHED)
    rows = s.execute(
        select(Delivery.status, func.count(DeliveryPart.id))
        .outerjoin(DeliveryPart, published)
        .where(Delivery.post_id == post_id)
        .group_by(Delivery.id, Delivery.status)
    )
    return [DeliveryState(status, count) for status, count in rows]


def delivery_state(delivery: Delivery) -> DeliveryState:
    """One loaded delivery's status and published parts, for :func:`summarize`."""
    return DeliveryState(delivery.status, sum(p.state is PartState.PUBLISHED for p in delivery.parts))


def move(delivery: Delivery, new: DeliveryStatus, reason: Reason | None = None) -> None:
    check_transition(delivery.status, new, reason)
    delivery.status = new
    if reason is not None:
        delivery.reason = reason


def _attempt(claim: Claim, delivery_id: int, part_idx: int, action: str, now: datetime) -> Attempt:
    return Attempt(
        post_id=claim.post_id,
        delivery_id=delivery_id,
        part_idx=part_idx,
        fence=claim.fence,
        worker=claim.worker,
        action=action,
        started_at=now,
    )


def _end_attempt(s: Session, claim: Claim, delivery_id: int, now: datetime, outcome: str, error: str = "") -> None:
    # A claim keeps at most one attempt of a delivery open: the next part's row is only
    # added after this one is closed.
    s.execute(
        update(Attempt)
        .where(Attempt.delivery_id == delivery_id, Attempt.fence == claim.fence, Attempt.ended_at.is_(None))
        .values(ended_at=now, outcome=outcome, error=error or None)
        .execution_options(synchronize_session=False)
    )


def _load_post(s: Session, post_id: int) -> Post:
    return s.execute(
        select(Post)
        .where(Post.id == post_id)
        .options(selectinload(Post.deliveries).selectinload(Delivery.parts))
        .options(selectinload(Post.deliveries).selectinload(Delivery.channel))
    ).scalar_one()


def _account(s: Session, post: Post) -> Account:
    return s.get_one(Account, post.account_id)


def _global_stop(s: Session) -> bool:
    return bool(s.execute(select(Switch.on).where(Switch.name == GLOBAL_STOP)).scalar())

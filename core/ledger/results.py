"""The fenced writes of an attempt (§5, §6 steps 5–8): a part confirmed, a delivery parked
or stopped, the lease renewed or given back, the publication row.

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
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func

from core.domain.errors import FencedOut
from core.domain.states import DeliveryStatus, PostStatus, Reason
from core.ledger import dialect as dialects
from core.ledger import statements as sql
from core.ledger.channels import set_connected
from core.ledger.claim import Claim, DeliveryPlan
from core.ledger.moves import end_attempt, fenced_out, finish, part_state, set_status
from core.plugins.adapter import Published
from core.store import db
from core.store.models import Delivery, Publication

log = logging.getLogger(__name__)


@contextmanager
def fenced(post_id: int, fence: int, now: datetime, lease: float) -> Iterator[Connection]:
    """A transaction that first proves ``fence`` is still current (and renews the lease).

    Raises:
        FencedOut: a newer claim holds the post; nothing is written.
    """
    with db.writing() as conn:
        result = conn.execute(
            sql.FENCE, {"b_post": post_id, "b_fence": fence, "b_expires": now + timedelta(seconds=lease)}
        )
        if result.rowcount == 0:
            raise fenced_out(post_id, fence)
        yield conn


@db.once_more_if_disconnected
def renew_lease(post_id: int, fence: int, now: datetime, lease: float) -> bool:
    """Heartbeat: extend the lease; False when the attempt was fenced out or has released it."""
    with db.writing() as conn:
        result = conn.execute(
            sql.RENEW, {"b_post": post_id, "b_fence": fence, "b_expires": now + timedelta(seconds=lease)}
        )
        return bool(result.rowcount)


@db.once_more_if_disconnected
def part_published(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    result: Published,
    now: datetime,
    lease: float,
    *,
    adopted: bool = False,
    first: Published | None = None,
) -> PostStatus | None:
    """Record a part the platform confirmed (or that read-back found and adopted).

    The next part, if any, gets its key and ``sending`` in the same commit – before its
    call. The last part marks the delivery published and inserts its publication row,
    which names the thread's ``first`` part (what people open; ``result`` by default).

    Returns:
        None when another part of the delivery is now ``sending`` and should be sent;
        else the post's status once this delivery is published.
    """
    plan = claim.plan(delivery_id)
    values = {
        "b_post": claim.post_id,
        "b_fence": claim.fence,
        "b_expires": now + timedelta(seconds=lease),
        "b_delivery": delivery_id,
        "b_idx": part_idx,
        "b_platform_id": result.platform_id,
        "b_url": result.url,
        "b_now": now,
        "b_outcome": "adopted" if adopted else "published",
        "b_error": None,
        "b_seen": now if adopted else None,
    }
    if part_idx + 1 < len(plan.parts):
        _next_part_sending(claim, plan, part_idx, values)
        return None
    values |= {
        "b_channel": plan.channel_id,
        "b_slot": claim.slot,
        "b_revision": claim.revision,
        "b_first_platform_id": (first or result).platform_id,
        "b_first_url": (first or result).url,
    }
    with db.writing() as conn:
        landed = dialects.of(conn).last_part_landed(conn, values)
    if not landed.fenced:
        raise fenced_out(claim.post_id, claim.fence)
    if not landed.moved:
        return _published_checked(claim, plan, values, lease)
    if not landed.recorded:
        _kept_first_publication(claim.post_id, plan.channel_id)
    assert landed.status is not None, "a dialect stores the summary with the moved delivery"
    return landed.status


def _next_part_sending(claim: Claim, plan: DeliveryPlan, part_idx: int, values: dict[str, Any]) -> None:
    """A part of a thread confirmed, and the next one's key and ``sending`` (§4)."""
    nxt = plan.parts[part_idx + 1]
    with db.writing() as conn:
        if not conn.execute(sql.FENCE, values).rowcount:  # and the lease, renewed for the next call
            raise fenced_out(claim.post_id, claim.fence)
        conn.execute(sql.PART_PUBLISHED, values)
        conn.execute(sql.END_ATTEMPT, values)
        conn.execute(sql.PART_SENDING, {**values, "b_idx": nxt.idx, "b_key": nxt.key})
        conn.execute(sql.ATTEMPT, {**values, "b_idx": nxt.idx, "b_worker": claim.worker, "b_action": "send"})


def _published_checked(claim: Claim, plan: DeliveryPlan, values: dict[str, Any], lease: float) -> PostStatus:
    """A last part confirmed for a delivery that was no longer ``sending``: the same writes,
    with the delivery's move checked (§3), which refuses an illegal one (and then nothing
    is recorded)."""
    now = values["b_now"]
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        conn.execute(sql.PART_PUBLISHED, values)
        conn.execute(sql.END_ATTEMPT, values)
        set_status(
            conn,
            plan.delivery_id,
            DeliveryStatus.SENDING,
            DeliveryStatus.PUBLISHED,
            None,
            detail=None,
            confirmed_at=now,
            first_seen_at=func.coalesce(Delivery.first_seen_at, values["b_seen"]),
        )
        if dialects.of(conn).insert_publication(conn, values) is None:
            _kept_first_publication(claim.post_id, plan.channel_id)
        return finish(conn, claim.post_id, now)


@db.once_more_if_disconnected
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
    exhausted: Reason = Reason.PLATFORM_UNAVAILABLE,
    untried: bool = False,
) -> tuple[DeliveryStatus, Reason | None]:
    """Record a transient failure: park the delivery until ``next_attempt_at``.

    A part that may have landed stays ``sending``; one that provably did not goes back
    to ``unsent``. With no ``next_attempt_at`` (retries exhausted) the delivery fails
    with ``exhausted`` (``platform_unavailable`` unless the caller knows better), or is
    held ``ambiguous_outcome`` when a copy may exist. ``untried``: only the pre-publish
    check ran (``moves.part_state``).

    Returns:
        The delivery's new status and reason.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        part_state(conn, delivery_id, part_idx, in_doubt=in_doubt, untried=untried)
        end_attempt(conn, delivery_id, claim.fence, now, "ambiguous" if in_doubt else "not_sent", detail)
        if next_attempt_at is not None:
            new, why = DeliveryStatus.RETRY_WAIT, reason
        elif in_doubt:
            new, why = DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME
        else:
            new, why = DeliveryStatus.FAILED, exhausted
        set_status(conn, delivery_id, DeliveryStatus.SENDING, new, why, next_attempt_at=next_attempt_at, detail=detail)
        finish(conn, claim.post_id, now)
    return new, why


@db.once_more_if_disconnected
def delivery_paced(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    *,
    in_doubt: bool,
    until: datetime,
    detail: str,
    now: datetime,
    lease: float,
) -> None:
    """Park a delivery whose part waits for its turn under the channel's rate
    (``core.runtime.pacing``) until ``until``: ``retry_wait``, ``rate_limited``.

    No call was made, so nothing of the attempt stays: its attempt row is taken back, the
    claim's count of it too (when the part is the claim's first: a thread's later part was
    not counted), and the part is as before the claim (``unsent``, or still ``sending``
    when an earlier attempt is in doubt). The backoff therefore does not grow.
    """
    plan = claim.plan(delivery_id)
    values: dict[str, Any] = {"next_attempt_at": until, "detail": detail}
    if part_idx == plan.parts[plan.start].idx:
        values["attempts"] = plan.attempts - 1
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        part_state(conn, delivery_id, part_idx, in_doubt=in_doubt)
        conn.execute(sql.DROP_ATTEMPT, {"b_delivery": delivery_id, "b_fence": claim.fence})
        set_status(conn, delivery_id, DeliveryStatus.SENDING, DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED, **values)
        finish(conn, claim.post_id, now)


@db.once_more_if_disconnected
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
    untried: bool = False,
) -> None:
    """Record a delivery that ends (``failed``) or waits for a person (``held``).

    Args:
        in_doubt: keep the part ``sending`` (a copy may exist) rather than ``unsent``.
        disconnect: also mark the channel disconnected (credentials refused).
        untried: only the pre-publish check ran (``moves.part_state``).
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        part_state(conn, delivery_id, part_idx, in_doubt=in_doubt, untried=untried)
        end_attempt(conn, delivery_id, claim.fence, now, str(reason), detail)
        set_status(conn, delivery_id, DeliveryStatus.SENDING, status, reason, detail=detail)
        if disconnect:
            set_connected(conn, claim.plan(delivery_id).channel_id, connected=False)
        finish(conn, claim.post_id, now)


@db.once_more_if_disconnected
def release(claim: Claim, now: datetime, lease: float) -> PostStatus | None:
    """Store the post's summary status and give the lease back (a claim with nothing to send).

    Returns:
        The post's status, or None when a newer claim had already superseded this one.
    """
    try:
        with fenced(claim.post_id, claim.fence, now, lease) as conn:
            return finish(conn, claim.post_id, now)
    except FencedOut:
        return None


def record_publication(
    conn: Connection,
    post_id: int,
    channel_id: int,
    slot: datetime,
    revision: int,
    platform_id: str,
    url: str,
    now: datetime,
) -> Publication:
    """Insert the publication row, or return the one already there (§4).

    ``ON CONFLICT DO NOTHING RETURNING`` makes a second publish of the same
    (post, channel, slot, revision) a no-op that answers with the first outcome.
    """
    key = {"b_post": post_id, "b_channel": channel_id, "b_slot": slot, "b_revision": revision}
    values = {**key, "b_first_platform_id": platform_id, "b_first_url": url, "b_now": now}
    new_id = dialects.of(conn).insert_publication(conn, values)
    if new_id is not None:
        return Publication(
            id=new_id,
            post_id=post_id,
            channel_id=channel_id,
            slot=slot,
            revision=revision,
            platform_id=platform_id,
            url=url,
            created_at=now,
        )
    _kept_first_publication(post_id, channel_id)
    first = conn.execute(sql.FIRST_PUBLICATION, key).one()
    return Publication(**first._asdict())


def _kept_first_publication(post_id: int, channel_id: int) -> None:
    log.warning("post %s channel %s: publication already recorded; keeping the first", post_id, channel_id)

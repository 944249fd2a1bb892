"""The pieces every write of the ledger shares: a delivery's checked move (§3), a part's
state, an attempt closed, and the post's summary stored with the lease given back."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.orm import Session

from core.domain.errors import FencedOut
from core.domain.states import DeliveryState, DeliveryStatus, PartState, PostStatus, Reason, check_transition
from core.ledger import statements as sql
from core.store.models import Delivery

log = logging.getLogger(__name__)


def fenced_out(post_id: int, fence: int) -> FencedOut:
    log.warning("post %s: attempt with fence %s was fenced out; recording nothing", post_id, fence)
    return FencedOut(f"post {post_id}: fence {fence} superseded")


def finish(conn: Connection, post_id: int, now: datetime) -> PostStatus:
    """Store the post's summary status, and give the lease back once nothing is sending.

    One statement decides both from the rows themselves (``statements.STORE_SUMMARY``),
    read after the fence's row lock: a delivery whose result is still waiting for its own
    commit is ``sending``, so no other delivery's commit can release the lease from under it.
    """
    status: PostStatus = conn.execute(sql.STORE_SUMMARY, {"b_post": post_id, "b_now": now}).scalar_one()
    return status


def delivery_states(s: Session | Connection, post_id: int) -> list[DeliveryState]:
    """Every delivery's status and published parts, for :func:`summarize`, in one query."""
    return [DeliveryState(row.status, row.published) for row in s.execute(sql.DELIVERY_STATES, {"b_post": post_id})]


def delivery_state(delivery: Delivery) -> DeliveryState:
    """One loaded delivery's status and published parts, for :func:`summarize`."""
    return DeliveryState(delivery.status, sum(p.state is PartState.PUBLISHED for p in delivery.parts))


def move(delivery: Delivery, new: DeliveryStatus, reason: Reason | None = None) -> None:
    """Move a loaded delivery (the ORM's rows people change), checked (§3)."""
    check_transition(delivery.status, new, reason)
    delivery.status = new
    if reason is not None:
        delivery.reason = reason


def set_status(
    conn: Connection,
    delivery_id: int,
    expected: DeliveryStatus,
    new: DeliveryStatus,
    reason: Reason | None,
    **values: Any,
) -> None:
    """Move a delivery the caller believes is ``expected`` to ``new`` (checked, §3).

    The reason is always written (None clears it). One guarded UPDATE in the usual
    case; only when the row had moved on is its status read, so an illegal move is
    refused exactly as :func:`move` would.
    """
    check_transition(expected, new, reason)
    values["reason"] = reason
    changed = conn.execute(
        update(Delivery).where(Delivery.id == delivery_id, Delivery.status == expected).values(status=new, **values)
    ).rowcount
    if changed:
        return
    current = conn.execute(select(Delivery.status).where(Delivery.id == delivery_id)).scalar_one()
    check_transition(current, new, reason)
    conn.execute(update(Delivery).where(Delivery.id == delivery_id).values(status=new, **values))


def part_state(conn: Connection, delivery_id: int, part_idx: int, *, in_doubt: bool, untried: bool = False) -> None:
    """A part kept ``sending`` (a copy may exist) or put back to ``unsent``.

    Args:
        untried: the attempt sent nothing, and no attempt had before it (the pre-publish
            check stopped it): the part is left as if never tried, so the next attempt
            checks again (``core.domain.precheck``).
    """
    if untried and not in_doubt:
        conn.execute(sql.PART_UNTRIED, {"b_delivery": delivery_id, "b_idx": part_idx})
        return
    state = PartState.SENDING if in_doubt else PartState.UNSENT
    conn.execute(sql.PART_STATE, {"b_delivery": delivery_id, "b_idx": part_idx, "b_state": state})


def end_attempt(conn: Connection, delivery_id: int, fence: int, now: datetime, outcome: str, error: str = "") -> None:
    """Close the claim's open attempt of a delivery.

    A claim keeps at most one attempt of a delivery open: the next part's row is only
    added after this one is closed.
    """
    conn.execute(
        sql.END_ATTEMPT,
        {"b_delivery": delivery_id, "b_fence": fence, "b_now": now, "b_outcome": outcome, "b_error": error or None},
    )

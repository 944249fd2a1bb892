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
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from core.domain.admission import Admit, Hold, Wait, admit
from core.domain.errors import FencedOut
from core.domain.keys import delivery_key
from core.domain.states import DeliveryState, DeliveryStatus, PartState, PostStatus, Reason, check_transition, summarize
from core.ledger import statements as sql
from core.ledger.pipeline import Direct, Pipeline, pipelined
from core.plugins.adapter import Published
from core.store import db
from core.store.models import (
    AccountStatus,
    Approval,
    Channel,
    Delivery,
    Publication,
)

log = logging.getLogger(__name__)

GLOBAL_STOP = sql.GLOBAL_STOP


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
    #: Set once a write of this claim has committed the post as ``published``: every
    #: delivery confirmed, a state no person's action leads out of, so nothing is left
    #: to arm.
    published: threading.Event = field(default_factory=threading.Event, compare=False)

    def plan(self, delivery_id: int) -> DeliveryPlan:
        return next(p for p in self.plans if p.delivery_id == delivery_id)


# -- the claim -----------------------------------------------------------------------


@dataclass(frozen=True)
class _PostRow:
    """What the claim's compare-and-set returns of the post (admission reads it too)."""

    fence: int
    status: PostStatus
    scheduled_at: datetime
    revision: int
    account_id: int
    approval: Approval
    parts: list[dict[str, Any]]
    not_before: datetime | None


@dataclass(frozen=True)
class _AccountRow:
    status: AccountStatus
    emergency_stop: bool


@dataclass
class _DeliveryRow:
    """A delivery as the claim reads it: one joined query with its channel and parts."""

    id: int
    channel_id: int
    status: DeliveryStatus
    next_attempt_at: datetime | None
    attempts: int
    platform: str
    settings: dict[str, Any]
    connected: bool
    #: One row of the claim's joined read per part, in order.
    parts: list[Any] = field(default_factory=list)

    def state(self) -> DeliveryState:
        return DeliveryState(self.status, sum(p.state is PartState.PUBLISHED for p in self.parts))


@dataclass(frozen=True)
class Early:
    """The post's slot has not come: nothing was claimed (:func:`claim_due_post`)."""

    slot: datetime


class _NotYet(Exception):
    def __init__(self, slot: datetime) -> None:
        self.slot = slot


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
    claim = _claim(post_id, worker, now, lease, grace, due_only=False)
    assert not isinstance(claim, Early)
    return claim


def claim_due_post(post_id: int, worker: str, now: datetime, lease: float, grace: float) -> Claim | Early | None:
    """As :func:`claim_post`, for the job: a post whose slot is still ahead is not claimed.

    On PostgreSQL the job learns its post's slot from the claim itself rather than from a
    read before it: a job on time costs no more than the claim, and one that started
    early (rq's scheduler keeps whole seconds) has its claim rolled back and gets the slot
    to wait for. On SQLite it reads the slot first, outside the write lock.
    """
    return _claim(post_id, worker, now, lease, grace, due_only=True)


@db.once_more_if_disconnected
def _claim(
    post_id: int, worker: str, now: datetime, lease: float, grace: float, *, due_only: bool
) -> Claim | Early | None:
    if due_only and db.engine().dialect.name == "sqlite":
        # SQLite serialises writers: a job must not take the write lock only to learn that
        # it is early, while other jobs wait for it. A read there is a local call.
        with db.peeking() as conn:
            slot = conn.execute(sql.POST_SLOT, {"b_post": post_id}).scalar()
        if slot is not None and slot > now:
            return Early(slot)
    try:
        return _claim_once(post_id, worker, now, lease, grace, due_only)
    except _NotYet as early:  # rolled back: nothing was claimed
        return Early(early.slot)


def _claim_once(post_id: int, worker: str, now: datetime, lease: float, grace: float, due_only: bool) -> Claim | None:
    cas = {
        "b_post": post_id,
        "b_stale_before": now - timedelta(seconds=grace),
        "b_worker": worker,
        "b_expires": now + timedelta(seconds=lease),
        "b_now": now,
    }
    with db.writing() as conn, pipelined(conn) as pipe:
        if _pg(conn):
            rows = pipe.rows(sql.CLAIM_ROWS_PG, cas)  # with BEGIN: one round trip
            if not rows:
                return None  # every post has a delivery: the compare-and-set failed
            post = _PostRow(*rows[0][:8])
            deliveries, account, global_stop = _deliveries(rows, offset=8)
        else:
            row = conn.execute(sql.CLAIM, cas).one_or_none()
            if row is None:
                return None
            post = _PostRow(*row)
            rows = list(conn.execute(sql.DELIVERY_ROWS, {"b_post": post_id}))
            deliveries, account, global_stop = _deliveries(rows, offset=0)
        if due_only and post.scheduled_at > now:
            raise _NotYet(post.scheduled_at)
        decisions = [
            (d, admit(post, d, account, global_stop=global_stop, now=now)) for d in deliveries if _due(post, d, now)
        ]
        if any(not isinstance(decision, Admit) for _, decision in decisions):
            pipe.leave()  # holds and waits are rare: they run as ordinary statements
        plans: list[DeliveryPlan] = []
        for delivery, decision in decisions:
            if isinstance(decision, Hold):
                _set_status(conn, delivery.id, delivery.status, DeliveryStatus.HELD, decision.reason)
                delivery.status = DeliveryStatus.HELD
            elif isinstance(decision, Wait):
                conn.execute(
                    update(Delivery)
                    .where(Delivery.id == delivery.id)
                    .values(status=DeliveryStatus.PENDING, next_attempt_at=decision.until)
                )
                delivery.status = DeliveryStatus.PENDING
            else:
                assert isinstance(decision, Admit)
                check_transition(delivery.status, DeliveryStatus.SENDING)
                plans.append(_plan(post_id, post, delivery, now))
                delivery.status = DeliveryStatus.SENDING
        _prepare(conn, pipe, post_id, post, plans, worker, now)
        status = summarize((d.state() for d in deliveries), claimed=True)
        if status is not post.status:
            pipe.send(sql.POST_STATUS, {"b_post": post_id, "b_status": status, "b_now": now})
        pipe.commit()  # on PostgreSQL with the writes above: one round trip
        return Claim(post_id, post.fence, worker, post.scheduled_at, post.revision, tuple(plans))


def _deliveries(rows: Sequence[Any], offset: int) -> tuple[list[_DeliveryRow], _AccountRow, bool]:
    """The post's deliveries with their parts, its account, and the global stop, from
    rows whose columns from ``offset`` on are :data:`sql.DELIVERY_ROWS`'s."""
    deliveries: dict[int, _DeliveryRow] = {}
    account, global_stop = _AccountRow(AccountStatus.ACTIVE, False), False
    for r in rows:
        d = deliveries.get(r.id)
        if d is None:
            d = deliveries[r.id] = _DeliveryRow(*r[offset : offset + 8])
            account, global_stop = _AccountRow(r.account_status, r.emergency_stop), bool(r.global_stop)
        d.parts.append(r)
    return list(deliveries.values()), account, global_stop


def _pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _due(post: _PostRow, delivery: _DeliveryRow, now: datetime) -> bool:
    if delivery.status is DeliveryStatus.SENDING:
        return True  # the attempt that set it died: re-drive
    if delivery.status not in (DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT):
        return False
    if post.scheduled_at > now:
        return False
    return delivery.next_attempt_at is None or delivery.next_attempt_at <= now


def _plan(post_id: int, post: _PostRow, delivery: _DeliveryRow, now: datetime) -> DeliveryPlan:
    """The job's view of an admitted delivery, its first unpublished part as ``sending``."""
    rows = delivery.parts
    start = next(i for i, p in enumerate(rows) if p.state is not PartState.PUBLISHED)
    in_doubt = rows[start].state is PartState.SENDING
    parts = []
    for i, p in enumerate(rows):
        key = delivery_key(post_id, delivery.channel_id, post.scheduled_at, post.revision, p.idx)
        fresh = i == start and not in_doubt
        parts.append(
            PartPlan(
                idx=p.idx,
                text=p.text,
                media=tuple(str(m.get("url", "")) for m in p.media),
                state=PartState.SENDING if fresh else p.state,
                key=key if fresh else p.key or key,
                attempt_started_at=now if fresh else p.attempt_started_at,
                platform_id=p.platform_id,
            )
        )
    return DeliveryPlan(
        delivery_id=delivery.id,
        channel_id=delivery.channel_id,
        platform=delivery.platform,
        settings=dict(delivery.settings),
        parts=tuple(parts),
        start=start,
        in_doubt=in_doubt,
        attempts=delivery.attempts + 1,
    )


def _prepare(
    conn: Connection,
    pipe: Pipeline | Direct,
    post_id: int,
    post: _PostRow,
    plans: list[DeliveryPlan],
    worker: str,
    now: datetime,
) -> None:
    """§4: each admitted delivery's key and ``sending``, and its attempt row."""
    if not plans:
        return
    rows: list[dict[str, Any]] = [
        {
            "b_delivery": p.delivery_id,
            "b_idx": p.parts[p.start].idx,
            "b_key": p.parts[p.start].key,
            "b_fresh": not p.in_doubt,
            "b_attempts": p.attempts,
            "b_now": now,
            "b_post": post_id,
            "b_fence": post.fence,
            "b_worker": worker,
            "b_action": "recover" if p.in_doubt else "send",
        }
        for p in plans
    ]
    if _pg(conn):
        pipe.send(sql.PREPARE_PG, rows)
        return
    # One statement per table, each over every admitted delivery.
    if fresh := [r for r in rows if r["b_fresh"]]:
        conn.execute(sql.PART_SENDING, fresh)
    conn.execute(sql.DELIVERY_SENDING, rows)
    actions = ("recover" if p.in_doubt else "send" for p in plans)
    conn.execute(
        sql.ATTEMPT,
        [
            _attempt(post_id, post.fence, worker, p.delivery_id, p.parts[p.start].idx, action, now)
            for p, action in zip(plans, actions, strict=True)
        ],
    )


# -- fenced writes of an attempt -------------------------------------------------------


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
            raise _fenced_out(post_id, fence)
        yield conn


def _fenced_out(post_id: int, fence: int) -> FencedOut:
    log.warning("post %s: attempt with fence %s was fenced out; recording nothing", post_id, fence)
    return FencedOut(f"post {post_id}: fence {fence} superseded")


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
) -> bool:
    """Record a part the platform confirmed (or that read-back found and adopted).

    The next part, if any, gets its key and ``sending`` in the same commit – before its
    call. The last part marks the delivery published and inserts its publication row.

    Returns:
        True when another part of the delivery is now ``sending`` and should be sent.
    """
    plan = claim.plan(delivery_id)
    more = part_idx + 1 < len(plan.parts)
    seen = now if adopted else None
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
        "b_seen": seen,
    }
    with db.writing() as conn, pipelined(conn) as pipe:
        if _pg(conn) and len(plan.parts) == 1:
            status = _published_pipelined(conn, pipe, claim, plan, values)
        else:
            status = _published(conn, claim, plan, part_idx, more, values)
    if status is PostStatus.PUBLISHED:  # committed
        claim.published.set()
    return more


def _published_pipelined(
    conn: Connection, pipe: Pipeline | Direct, claim: Claim, plan: DeliveryPlan, values: dict[str, Any]
) -> PostStatus:
    """A one-part delivery's result on PostgreSQL: two round trips.

    The fenced writes and the publication row go with BEGIN, and the summary is read in
    the same round trip – as its own statement, so it sees every delivery as committed
    once the fence's row lock was taken; the post's summary goes with COMMIT.
    """
    values = {**values, "b_channel": plan.channel_id, "b_slot": claim.slot, "b_revision": claim.revision}
    head = pipe.send(sql.PUBLISHED_PG, values)
    states = _states(pipe.rows(sql.DELIVERY_STATES, {"b_post": claim.post_id}))
    fence_matched, moved, recorded = head.one()
    if not fence_matched:
        raise _fenced_out(claim.post_id, claim.fence)
    if moved and recorded:
        status = _store_summary(pipe, claim, states, values["b_now"])
        pipe.commit()
        return status
    pipe.leave()  # the row had moved on, or a publication was there: the checked paths
    if not moved:
        _moved_to_published(conn, plan.delivery_id, values["b_now"], values["b_seen"])
    if not recorded:
        _kept_first_publication(claim.post_id, plan.channel_id)
    return _finish(conn, claim, values["b_now"])


def _published(
    conn: Connection, claim: Claim, plan: DeliveryPlan, part_idx: int, more: bool, values: dict[str, Any]
) -> PostStatus:
    """A part's result, statement by statement (SQLite; a thread's parts)."""
    delivery_id, now = plan.delivery_id, values["b_now"]
    if not conn.execute(sql.FENCE, values).rowcount:
        raise _fenced_out(claim.post_id, claim.fence)
    conn.execute(sql.PART_PUBLISHED, values)
    conn.execute(sql.END_ATTEMPT, values)
    if more:
        nxt = plan.parts[part_idx + 1]
        conn.execute(sql.PART_SENDING, {"b_delivery": delivery_id, "b_idx": nxt.idx, "b_key": nxt.key, "b_now": now})
        conn.execute(sql.ATTEMPT, _attempt(claim.post_id, claim.fence, claim.worker, delivery_id, nxt.idx, "send", now))
        return _finish(conn, claim, now)
    if not conn.execute(sql.DELIVERY_PUBLISHED, values).rowcount:
        _moved_to_published(conn, delivery_id, now, values["b_seen"])
    first = (
        (values["b_platform_id"], values["b_url"])
        if part_idx == plan.parts[0].idx
        else conn.execute(sql.PART_PLATFORM_ID, {"b_delivery": delivery_id, "b_idx": plan.parts[0].idx}).one()
    )
    record_publication(
        conn, claim.post_id, plan.channel_id, claim.slot, claim.revision, first[0] or "", first[1] or "", now
    )
    return _finish(conn, claim, now)


def _moved_to_published(conn: Connection, delivery_id: int, now: datetime, seen: datetime | None) -> None:
    """The delivery was not ``sending`` any more: the checked path refuses an illegal move."""
    _set_status(
        conn,
        delivery_id,
        DeliveryStatus.SENDING,
        DeliveryStatus.PUBLISHED,
        None,
        detail=None,
        confirmed_at=now,
        first_seen_at=func.coalesce(Delivery.first_seen_at, seen),
    )


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
) -> None:
    """Record a transient failure: park the delivery until ``next_attempt_at``.

    A part that may have landed stays ``sending``; one that provably did not goes back
    to ``unsent``. With no ``next_attempt_at`` (retries exhausted) the delivery fails
    with ``platform_unavailable``, or is held ``ambiguous_outcome`` when a copy may exist.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        _part_state(conn, delivery_id, part_idx, in_doubt)
        _end_attempt(conn, claim, delivery_id, now, "ambiguous" if in_doubt else "not_sent", detail)
        if next_attempt_at is not None:
            _set_status(
                conn,
                delivery_id,
                DeliveryStatus.SENDING,
                DeliveryStatus.RETRY_WAIT,
                reason,
                next_attempt_at=next_attempt_at,
                detail=detail,
            )
        elif in_doubt:
            _set_status(
                conn, delivery_id, DeliveryStatus.SENDING, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, detail=detail
            )
        else:
            _set_status(
                conn,
                delivery_id,
                DeliveryStatus.SENDING,
                DeliveryStatus.FAILED,
                Reason.PLATFORM_UNAVAILABLE,
                detail=detail,
            )
        _finish(conn, claim, now)


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
) -> None:
    """Record a delivery that ends (``failed``) or waits for a person (``held``).

    Args:
        in_doubt: keep the part ``sending`` (a copy may exist) rather than ``unsent``.
        disconnect: also mark the channel disconnected (credentials refused).
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        _part_state(conn, delivery_id, part_idx, in_doubt)
        _end_attempt(conn, claim, delivery_id, now, str(reason), detail)
        _set_status(conn, delivery_id, DeliveryStatus.SENDING, status, reason, detail=detail)
        if disconnect:
            conn.execute(
                update(Channel).where(Channel.id == claim.plan(delivery_id).channel_id).values(connected=False)
            )
        _finish(conn, claim, now)


@db.once_more_if_disconnected
def release(claim: Claim, now: datetime, lease: float) -> None:
    """Store the post's summary status and give the lease back (a claim with nothing to send)."""
    try:
        with fenced(claim.post_id, claim.fence, now, lease) as conn:
            _finish(conn, claim, now)
    except FencedOut:
        pass


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
    values = {
        "post_id": post_id,
        "channel_id": channel_id,
        "slot": slot,
        "revision": revision,
        "platform_id": platform_id,
        "url": url,
        "created_at": now,
    }
    new_id = conn.execute(sql.PUBLICATION[conn.dialect.name], values).scalar()
    if new_id is not None:
        return Publication(id=new_id, **values)
    _kept_first_publication(post_id, channel_id)
    first = conn.execute(
        sql.FIRST_PUBLICATION, {"b_post": post_id, "b_channel": channel_id, "b_slot": slot, "b_revision": revision}
    ).one()
    return Publication(**first._asdict())


def _kept_first_publication(post_id: int, channel_id: int) -> None:
    log.warning("post %s channel %s: publication already recorded; keeping the first", post_id, channel_id)


# -- shared pieces ----------------------------------------------------------------------------


def _finish(conn: Connection, claim: Claim, now: datetime) -> PostStatus:
    """Store the post's summary status, and give the lease back once nothing is sending."""
    return _store_summary(Direct(conn), claim, delivery_states(conn, claim.post_id), now)


def _store_summary(writer: Pipeline | Direct, claim: Claim, states: list[DeliveryState], now: datetime) -> PostStatus:
    """The post's summary from ``states``, and the lease given back when none is sending.

    The release is decided inside the write that may be the claim's last, from the rows
    themselves, read after the fence's row lock: a delivery whose result is still waiting
    for its own commit is ``sending``, so no other delivery's commit can release the lease
    from under it.
    """
    release = all(state.status is not DeliveryStatus.SENDING for state in states)
    status = summarize(states, claimed=True)
    values = {"b_post": claim.post_id, "b_status": status, "b_now": now}
    writer.send(sql.POST_STATUS_RELEASED if release else sql.POST_STATUS, values)
    return status


def delivery_states(s: Session | Connection, post_id: int) -> list[DeliveryState]:
    """Every delivery's status and published parts, for :func:`summarize`, in one query."""
    return _states(s.execute(sql.DELIVERY_STATES, {"b_post": post_id}))


def _states(rows: Iterable[Any]) -> list[DeliveryState]:
    return [DeliveryState(status, count) for status, count in rows]


def delivery_state(delivery: Delivery) -> DeliveryState:
    """One loaded delivery's status and published parts, for :func:`summarize`."""
    return DeliveryState(delivery.status, sum(p.state is PartState.PUBLISHED for p in delivery.parts))


def move(delivery: Delivery, new: DeliveryStatus, reason: Reason | None = None) -> None:
    check_transition(delivery.status, new, reason)
    delivery.status = new
    if reason is not None:
        delivery.reason = reason


def _set_status(
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


def _part_state(conn: Connection, delivery_id: int, part_idx: int, in_doubt: bool) -> None:
    state = PartState.SENDING if in_doubt else PartState.UNSENT
    conn.execute(sql.PART_STATE, {"b_delivery": delivery_id, "b_idx": part_idx, "b_state": state})


def _attempt(
    post_id: int, fence: int, worker: str, delivery_id: int, part_idx: int, action: str, now: datetime
) -> dict[str, Any]:
    """An attempt row's values, for :data:`sql.ATTEMPT`."""
    return {
        "post_id": post_id,
        "delivery_id": delivery_id,
        "part_idx": part_idx,
        "fence": fence,
        "worker": worker,
        "action": action,
        "started_at": now,
    }


def _end_attempt(
    conn: Connection, claim: Claim, delivery_id: int, now: datetime, outcome: str, error: str = ""
) -> None:
    # A claim keeps at most one attempt of a delivery open: the next part's row is only
    # added after this one is closed.
    conn.execute(
        sql.END_ATTEMPT,
        {
            "b_delivery": delivery_id,
            "b_fence": claim.fence,
            "b_now": now,
            "b_outcome": outcome,
            "b_error": error or None,
        },
    )

"""The claim (§5, §6 steps 1–4): the compare-and-set, admission, and every admitted
delivery's key and ``sending``, in one committed transaction before any platform call.

Written once for both databases; what differs is the dialect's (``core.ledger.dialect``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from core.domain.admission import Admit, Hold, Wait, admit
from core.domain.keys import delivery_key
from core.domain.media import MediaRef, refs_in
from core.domain.states import DeliveryState, DeliveryStatus, PartState, PostStatus, Reason, check_transition, summarize
from core.ledger import dialect as dialects
from core.ledger import statements as sql
from core.ledger.moves import end_attempt, set_status
from core.runtime.lease import stale_before
from core.store import db
from core.store.models import AccountStatus, Approval

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartPlan:
    """One part as the job needs it, detached from the session."""

    idx: int
    text: str
    #: The part's attachments, in order.
    media: tuple[MediaRef, ...]
    state: PartState
    key: str
    attempt_started_at: datetime | None
    platform_id: str | None
    url: str | None = None
    #: Whether an attempt before this claim got as far as sending the part (its
    #: ``attempt_started_at`` was set): a part none did gets the pre-publish check.
    tried: bool = False


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
    #: The attempts made before the current budget began (a person's retry): backoff and
    #: ``max_attempts`` count ``attempts - budget_start``.
    budget_start: int = 0
    #: Whether this attempt sends despite the doubt (or despite the copy the pre-publish
    #: check found), a person having accepted a second copy (``post resolve ... send-again``):
    #: true for exactly one attempt.
    resend_accepted: bool = False


@dataclass(frozen=True)
class Claim:
    post_id: int
    fence: int
    worker: str
    slot: datetime
    revision: int
    plans: tuple[DeliveryPlan, ...] = field(default_factory=tuple)

    def plan(self, delivery_id: int) -> DeliveryPlan:
        return next(p for p in self.plans if p.delivery_id == delivery_id)


@dataclass(frozen=True)
class Early:
    """The post's slot has not come: nothing was claimed (:func:`claim_due_post`)."""

    slot: datetime


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
    budget_start: int
    resend_attempt: int | None
    platform: str
    settings: dict[str, Any]
    connected: bool
    #: One row of the claim's joined read per part, in order.
    parts: list[Any] = field(default_factory=list)

    def state(self) -> DeliveryState:
        return DeliveryState(self.status, sum(p.state is PartState.PUBLISHED for p in self.parts))


_POST_FIELDS = tuple(_PostRow.__dataclass_fields__)
_DELIVERY_FIELDS = tuple(f for f in _DeliveryRow.__dataclass_fields__ if f != "parts")


def claim_post(post_id: int, worker: str, now: datetime, lease: float, grace: float) -> Claim | None:
    """Claim ``post_id`` and prepare every due delivery, in one committed transaction.

    The compare-and-set takes the lease only when it is free or stale (``core.runtime.lease``)
    and increments the fence. In the same transaction admission is asked for each due
    delivery, holds are recorded, and each admitted delivery's first unpublished part gets
    its key and ``sending`` – committed before any platform call.

    Returns:
        The claim with its plans, or None when another claim holds a live lease or the
        post is not in a publishable state.
    """
    claim = _claim(post_id, worker, now, lease, grace, due_only=False)
    assert not isinstance(claim, Early)
    return claim


def claim_due_post(post_id: int, worker: str, now: datetime, lease: float, grace: float) -> Claim | Early | None:
    """As :func:`claim_post`, for the job: a post whose slot is still ahead is not claimed.

    The job learns its post's slot from the claim itself rather than from a read before
    it: a job on time costs no more than the claim, and one that started early (rq's
    scheduler keeps whole seconds) has its claim rolled back and gets the slot to wait
    for. Where the claim takes the database's one write lock (SQLite), the slot is read
    first instead, so an early job never holds that lock only to learn it is early.
    """
    return _claim(post_id, worker, now, lease, grace, due_only=True)


def _claim(
    post_id: int, worker: str, now: datetime, lease: float, grace: float, *, due_only: bool
) -> Claim | Early | None:
    if due_only and dialects.of(db.engine()).peeks_slot_first:
        with db.peeking() as conn:
            slot = conn.execute(sql.POST_SLOT, {"b_post": post_id}).scalar()
        if slot is not None and slot > now:
            return Early(slot)
    try:
        return _claim_once(post_id, worker, now, lease, grace, due_only, recovering=False)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
    # The connection died mid-claim: the claim may have committed with its answer lost.
    # Asking blindly would find the lease taken – by this very claim – and strand the post
    # until the lease goes stale. ``worker`` names only this claim, so the compare-and-set
    # takes its own lease again, and the parts it set ``sending`` are known unsent.
    log.warning("post %s: the database connection was lost during the claim; claiming once more", post_id)
    return _claim_once(post_id, worker, now, lease, grace, due_only, recovering=True)


def _claim_once(
    post_id: int, worker: str, now: datetime, lease: float, grace: float, due_only: bool, *, recovering: bool
) -> Claim | Early | None:
    cas = {
        "b_post": post_id,
        "b_stale_before": stale_before(now, grace),
        "b_worker": worker,
        "b_expires": now + timedelta(seconds=lease),
        "b_now": now,
    }
    with db.writing() as conn:
        dialect = dialects.of(conn)
        with dialect.writer(conn) as writer:
            claimed = dialect.claim(writer, cas)
            if claimed is None:
                return None
            post = _PostRow(**{name: claimed.post[name] for name in _POST_FIELDS})
            if due_only and post.scheduled_at > now:
                writer.rollback()  # nothing was claimed
                return Early(post.scheduled_at)
            deliveries, account, global_stop = _deliveries(claimed.rows)
            unmade: dict[tuple[int, int], str] = {}
            if recovering:
                writer.leave()
                unmade = _unmade_attempts(conn, post_id, worker, post.fence - 1, now)
            decisions = [
                (d, admit(post, d, account, global_stop=global_stop, now=now)) for d in deliveries if _due(post, d, now)
            ]
            if any(not isinstance(decision, Admit) for _, decision in decisions):
                writer.leave()  # holds and waits are rare: they run as ordinary statements
            plans: list[DeliveryPlan] = []
            for delivery, decision in decisions:
                if isinstance(decision, Hold):
                    set_status(conn, delivery.id, delivery.status, DeliveryStatus.HELD, decision.reason)
                    delivery.status = DeliveryStatus.HELD
                elif isinstance(decision, Wait):
                    _wait(conn, delivery, decision.until)
                else:
                    check_transition(delivery.status, DeliveryStatus.SENDING)
                    plans.append(_plan(post_id, post, delivery, now, unmade))
                    delivery.status = DeliveryStatus.SENDING
            if plans:
                dialect.prepare(writer, [_prepared(post_id, post.fence, worker, p, now) for p in plans])
            status = summarize((d.state() for d in deliveries), claimed=True)
            if status is not post.status:
                writer.send(sql.POST_STATUS, {"b_post": post_id, "b_status": status, "b_now": now})
            writer.commit()  # on PostgreSQL with the writes above: one round trip
            return Claim(post_id, post.fence, worker, post.scheduled_at, post.revision, tuple(plans))


def _deliveries(rows: list[Any]) -> tuple[list[_DeliveryRow], _AccountRow, bool]:
    """The post's deliveries with their parts, its account, and the global stop, from
    the claim's joined rows (columns of :data:`sql.DELIVERY_COLUMNS`, by name)."""
    deliveries: dict[int, _DeliveryRow] = {}
    account, global_stop = _AccountRow(AccountStatus.ACTIVE, False), False
    for r in rows:
        d = deliveries.get(r.id)
        if d is None:
            d = deliveries[r.id] = _DeliveryRow(**{name: getattr(r, name) for name in _DELIVERY_FIELDS})
            account, global_stop = _AccountRow(r.account_status, r.emergency_stop), bool(r.global_stop)
        d.parts.append(r)
    return list(deliveries.values()), account, global_stop


def _unmade_attempts(
    conn: Connection, post_id: int, worker: str, fence: int, now: datetime
) -> dict[tuple[int, int], str]:
    """The attempts this claim opened in a commit whose answer was lost, by (delivery,
    part): their action (``send``, ``recover``, ``resend``).

    No platform call follows a claim before its answer, so none of them was made: they are
    closed as ``not_sent`` and do not count. A part this claim set ``sending`` (a ``send``)
    is sent afresh; a part that was already in doubt before it stays in doubt.
    """
    unmade = {
        (r.delivery_id, r.part_idx): r.action
        for r in conn.execute(sql.UNMADE_ATTEMPTS, {"b_post": post_id, "b_worker": worker})
    }
    for delivery_id, _ in unmade:
        end_attempt(conn, delivery_id, fence, now, "not_sent", "the claim's answer was lost; no call was made")
    return unmade


def _due(post: _PostRow, delivery: _DeliveryRow, now: datetime) -> bool:
    if delivery.status is DeliveryStatus.SENDING:
        return True  # the attempt that set it died: re-drive
    if delivery.status not in (DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT):
        return False
    if post.scheduled_at > now:
        return False
    return delivery.next_attempt_at is None or delivery.next_attempt_at <= now


def _wait(conn: Connection, delivery: _DeliveryRow, until: datetime) -> None:
    """An embargo not yet lifted: the delivery waits for it, through the checked move.

    A pending delivery stays pending until then; one that had already been tried (parked,
    or ``sending`` with an attempt in doubt) is parked until the embargo lifts.
    """
    if delivery.status is DeliveryStatus.PENDING:
        target, reason = DeliveryStatus.PENDING, None
    else:
        target, reason = DeliveryStatus.RETRY_WAIT, Reason.EMBARGOED
    set_status(conn, delivery.id, delivery.status, target, reason, next_attempt_at=until)
    delivery.status = target


def _plan(
    post_id: int, post: _PostRow, delivery: _DeliveryRow, now: datetime, unmade: dict[tuple[int, int], str]
) -> DeliveryPlan:
    """The job's view of an admitted delivery, its first unpublished part as ``sending``."""
    rows = delivery.parts
    start = next(i for i, p in enumerate(rows) if p.state is not PartState.PUBLISHED)
    lost = unmade.get((delivery.id, rows[start].idx))
    recovered = lost is not None
    # Only a part the lost claim itself set ``sending`` is known unsent; one that was in
    # doubt before it is still in doubt.
    in_doubt = rows[start].state is PartState.SENDING and lost != "send"
    parts = []
    for i, p in enumerate(rows):
        key = delivery_key(post_id, delivery.channel_id, post.scheduled_at, post.revision, p.idx)
        fresh = i == start and not in_doubt
        parts.append(
            PartPlan(
                idx=p.idx,
                text=p.text,
                media=refs_in(p.media),
                state=PartState.SENDING if fresh else p.state,
                key=key if fresh else p.key or key,
                attempt_started_at=now if fresh else p.attempt_started_at,
                platform_id=p.platform_id,
                url=p.url,
                # A lost claim's own ``send`` made no call: it leaves the part untried.
                tried=p.attempt_started_at is not None and not (i == start and lost == "send"),
            )
        )
    # An attempt whose answer was lost made no call: it does not count.
    attempts = delivery.attempts + (0 if recovered else 1)
    return DeliveryPlan(
        delivery_id=delivery.id,
        channel_id=delivery.channel_id,
        platform=delivery.platform,
        settings=dict(delivery.settings),
        parts=tuple(parts),
        start=start,
        in_doubt=in_doubt,
        attempts=attempts,
        budget_start=delivery.budget_start,
        # The accepted resend is one numbered attempt: a later one (this one fenced out,
        # or in doubt in its turn) settles the doubt by the strategy again.
        resend_accepted=attempts == delivery.resend_attempt,
    )


def _prepared(post_id: int, fence: int, worker: str, plan: DeliveryPlan, now: datetime) -> dict[str, Any]:
    """§4: the values of an admitted delivery's key, ``sending`` and attempt row."""
    part = plan.parts[plan.start]
    return {
        "b_delivery": plan.delivery_id,
        "b_idx": part.idx,
        "b_key": part.key,
        "b_fresh": not plan.in_doubt,
        "b_attempts": plan.attempts,
        "b_now": now,
        "b_post": post_id,
        "b_fence": fence,
        "b_worker": worker,
        # A resend is of a part in doubt: publishing anyway past the pre-publish check is a send.
        "b_action": ("resend" if plan.resend_accepted else "recover") if plan.in_doubt else "send",
    }

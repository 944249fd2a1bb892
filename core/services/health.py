"""The health panel (§14): last reconciler tick, queue depth, age of the oldest unclaimed
due slot, open alarms, the deliveries that need a person and the emergency stops – and
whether that adds up to healthy. "Healthy" never hides held or failed work.

Its state, and the exit code `herald health` gives it (stable, for monitoring):

* ``healthy`` (0): herald is moving and nothing waits for a person;
* ``unhealthy`` (1): herald itself is not moving as it should (the reconciler or the
  read-back sweep stopped, a due post unclaimed, the queue unreachable, an open alarm);
* ``needs_person`` (3): herald is moving, but deliveries wait for a person (held,
  failed, an attempt in doubt) or an emergency stop is on.

(2 is every command's "error:" exit, e.g. an unreachable database.)

`herald health` (an operator's tool) counts every account. The API and the dashboard read
the panel for the key's account (``account_id``): herald's own state stays whole (the
reconciler, the read-back sweep, the queue, the workers' oldest unclaimed due slot, the
global stop), and what is an account's – its held, failed and in-doubt deliveries, its open
alarms and its own stop – is that account's alone; no other account is named or counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from redis.exceptions import RedisError
from sqlalchemy import Select, func, or_, select
from sqlalchemy.orm import Session

from core.config import Settings, settings
from core.domain.errors import NotFound
from core.domain.states import DeliveryStatus, Reason
from core.ledger.statements import GLOBAL_STOP
from core.runtime.clock import Clock, DatabaseClock
from core.runtime.queue import post_queue
from core.store import db
from core.store.models import Account, Alarm, Delivery, Post, Switch, Tick
from reconciler import queries
from reconciler.tick import NAME, READBACK


@dataclass(frozen=True)
class Health:
    """`herald health`: what is moving, what waits, and every problem by name (instants UTC)."""

    now: datetime
    #: The account whose deliveries, alarms and stop the panel counts; None: every account.
    account: str | None
    last_tick_at: datetime | None
    #: Seconds since the reconciler's last tick; None if it never ran.
    last_tick_age: float | None
    #: Seconds since the read-back sweep last ran (its own loop, §7); None if it never ran.
    last_sweep_age: float | None
    #: Jobs waiting in the queue, and waiting for their time (only posts due within the
    #: arming horizon hold one, §7); None when Redis is unreachable.
    queued: int | None
    scheduled: int | None
    #: Seconds the oldest due slot no worker claimed has waited.
    oldest_unclaimed_due_age: float | None
    open_alarms: int
    #: Deliveries held (any reason: a person approves, resumes, reconnects, resolves...).
    held: int
    #: Held deliveries by reason.
    held_reasons: Mapping[str, int]
    #: Deliveries failed for good, until a person retries them.
    failed: int
    #: Attempts in doubt that nothing is settling: held ``ambiguous_outcome`` (a person
    #: resolves it), or a part still ``sending`` whose worker's lease has run out (it died
    #: mid-call; the reconciler re-drives it after the grace window).
    in_doubt: int
    #: Deliveries that need a person: held, failed, or in doubt, each counted once.
    needs_person: int
    #: Whether the global emergency stop is on, and the accounts stopped on their own (for
    #: one account's panel: that account, if it is).
    emergency_stop: bool
    stopped_accounts: tuple[str, ...]
    #: One line per problem of herald itself, each naming the fix.
    problems: tuple[str, ...]
    #: One line per kind of work waiting for a person, each naming the command for it.
    attention: tuple[str, ...]
    #: ``unhealthy`` when there is a problem, else ``needs_person`` when something waits
    #: for a person, else ``healthy``.
    state: Literal["healthy", "unhealthy", "needs_person"]
    #: Only when there is neither a problem nor work waiting for a person.
    healthy: bool


@dataclass(frozen=True)
class _Attention:
    held: dict[str, int]
    failed: int
    in_doubt: int
    stuck: int
    emergency_stop: bool
    stopped_accounts: tuple[str, ...]


def waiting_deliveries(account_id: int | None = None) -> Select[DeliveryStatus, Reason | None, int]:
    """Held and failed deliveries (of ``account_id``'s posts, when given), counted by status
    and reason (ix_deliveries_status_next_attempt_at, then the post by its key)."""
    query = select(Delivery.status, Delivery.reason, func.count()).where(
        Delivery.status.in_([DeliveryStatus.HELD, DeliveryStatus.FAILED])
    )
    if account_id is not None:
        query = query.join(Post, Post.id == Delivery.post_id).where(Post.account_id == account_id)
    return query.group_by(Delivery.status, Delivery.reason)


def stuck_sending(now: datetime, account_id: int | None = None) -> Select[int]:
    """Deliveries ``sending`` with no live lease on their post: a worker died mid-call
    (ix_deliveries_status_next_attempt_at, then the post by its key); of ``account_id``'s
    posts, when given."""
    query = (
        select(func.count())
        .select_from(Delivery)
        .join(Post, Post.id == Delivery.post_id)
        .where(
            Delivery.status == DeliveryStatus.SENDING,
            or_(Post.lease_owner.is_(None), Post.lease_expires_at <= now),
        )
    )
    return query if account_id is None else query.where(Post.account_id == account_id)


def open_alarms_count(account_id: int | None = None) -> Select[int]:
    """Open alarms (on ``account_id``'s posts, when given)."""
    alarms = queries.open_alarms()
    if account_id is not None:
        alarms = alarms.join(Post, Post.id == Alarm.post_id).where(Post.account_id == account_id)
    return select(func.count()).select_from(alarms.subquery())


def _attention(s: Session, now: datetime, account_id: int | None) -> _Attention:
    held: dict[str, int] = {}
    failed = 0
    for status, reason, count in s.execute(waiting_deliveries(account_id)):
        if status is DeliveryStatus.HELD:
            held[str(reason)] = held.get(str(reason), 0) + count
        else:
            failed += count
    stuck = s.execute(stuck_sending(now, account_id)).scalar_one()
    stop = bool(s.execute(select(Switch.on).where(Switch.name == GLOBAL_STOP)).scalar())
    stopped = select(Account.name).where(Account.emergency_stop).order_by(Account.name)
    if account_id is not None:
        stopped = stopped.where(Account.id == account_id)
    accounts = tuple(s.execute(stopped).scalars())
    return _Attention(
        held=dict(sorted(held.items())),
        failed=failed,
        in_doubt=held.get(Reason.AMBIGUOUS_OUTCOME, 0) + stuck,
        stuck=stuck,
        emergency_stop=stop,
        stopped_accounts=accounts,
    )


def _attention_lines(work: _Attention) -> list[str]:
    lines: list[str] = []
    if work.emergency_stop:
        lines.append("the emergency stop is ON: nothing is sent; `herald resume` lifts it")
    if work.stopped_accounts:
        names = ", ".join(work.stopped_accounts)
        lines.append(f"the emergency stop is ON for account(s) {names}: `herald resume --account NAME` lifts it")
    if work.held:
        reasons = ", ".join(f"{count} {reason}" for reason, count in work.held.items())
        lines.append(
            f"{sum(work.held.values())} delivery(ies) held ({reasons}): `herald post show ID` names each fix "
            "(`herald post retry`, `herald post resolve`, `herald post approve`, `herald channel reconnect`...)"
        )
    if work.failed:
        lines.append(f"{work.failed} delivery(ies) failed: `herald post retry ID` once the cause is fixed")
    if work.stuck:
        lines.append(
            f"{work.stuck} delivery(ies) in doubt with no live worker (a worker died mid-call): "
            "the reconciler re-drives them after the grace window; is `herald reconcile` running?"
        )
    return lines


def health(clock: Clock | None = None, cfg: Settings | None = None, *, account_id: int | None = None) -> Health:
    """Read the health panel now (by the one clock).

    Args:
        account_id: count only this account's deliveries, alarms and stop (the API's and
            the dashboard's panel); None: every account's (`herald health`).

    Raises:
        NotFound: no account ``account_id``.
    """
    cfg = cfg or settings()
    now = (clock or DatabaseClock(db.engine())).now()
    problems: list[str] = []
    with db.reading() as s:
        account = None
        if account_id is not None:
            found = s.get(Account, account_id)
            if found is None:
                raise NotFound(f"no account {account_id}")
            account = found.name
        tick = s.get(Tick, NAME)
        swept = s.get(Tick, READBACK)
        oldest = s.execute(queries.oldest_unclaimed_due(now)).scalar()
        alarms = s.execute(open_alarms_count(account_id)).scalar_one()
        work = _attention(s, now, account_id)
    tick_age = (now - tick.at).total_seconds() if tick else None
    if tick_age is None:
        problems.append("the reconciler has never run: start `herald reconcile` (herald run starts it)")
    elif tick_age > 3 * cfg.tick_seconds:
        problems.append(f"the reconciler last ran {tick_age:.0f}s ago (every {cfg.tick_seconds:g}s expected)")
    sweep_age = (now - swept.at).total_seconds() if swept else None
    if sweep_age is not None and sweep_age > 3 * cfg.tick_seconds:
        problems.append(
            f"the read-back sweep last ran {sweep_age:.0f}s ago (every {cfg.tick_seconds:g}s expected): "
            "a platform it reads may not be answering; see the reconciler's log"
        )
    due_age = (now - oldest).total_seconds() if oldest else None
    if due_age is not None and due_age > cfg.missed_after:
        problems.append(f"a due post has waited {due_age:.0f}s without a worker claiming it: are workers running?")
    if alarms:
        problems.append(f"{alarms} open alarm(s): `herald alarms`")
    try:
        queue = post_queue()
        queued: int | None = queue.count
        scheduled: int | None = queue.scheduled_job_registry.count
    except RedisError as exc:
        queued = scheduled = None
        problems.append(f"the queue is unreachable: {exc}")
    attention = _attention_lines(work)
    return Health(
        now=now,
        account=account,
        last_tick_at=tick.at if tick else None,
        last_tick_age=tick_age,
        last_sweep_age=sweep_age,
        queued=queued,
        scheduled=scheduled,
        oldest_unclaimed_due_age=due_age,
        open_alarms=alarms,
        held=sum(work.held.values()),
        held_reasons=MappingProxyType(work.held),
        failed=work.failed,
        in_doubt=work.in_doubt,
        needs_person=sum(work.held.values()) + work.failed + work.stuck,
        emergency_stop=work.emergency_stop,
        stopped_accounts=work.stopped_accounts,
        problems=tuple(problems),
        attention=tuple(attention),
        state="unhealthy" if problems else "needs_person" if attention else "healthy",
        healthy=not problems and not attention,
    )

"""The health panel (§14): last reconciler tick, queue depth, age of the oldest unclaimed
due slot, open alarms – and whether that adds up to healthy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from redis.exceptions import RedisError
from sqlalchemy import func, select

from core.config import Settings, settings
from core.runtime.clock import Clock, DatabaseClock
from core.runtime.queue import post_queue
from core.store import db
from core.store.models import Tick
from reconciler import queries
from reconciler.tick import NAME, READBACK


@dataclass(frozen=True)
class Health:
    """`herald health`: what is moving, what waits, and every problem by name (instants UTC)."""

    now: datetime
    last_tick_at: datetime | None
    #: Seconds since the reconciler's last tick; None if it never ran.
    last_tick_age: float | None
    #: Seconds since the read-back sweep last ran (its own loop, §7); None if it never ran.
    last_sweep_age: float | None
    #: Jobs waiting in the queue, and waiting for their time; None when Redis is unreachable.
    queued: int | None
    scheduled: int | None
    #: Seconds the oldest due slot no worker claimed has waited.
    oldest_unclaimed_due_age: float | None
    open_alarms: int
    #: One line per problem, each naming the fix; none means healthy.
    problems: tuple[str, ...]
    healthy: bool


def health(clock: Clock | None = None, cfg: Settings | None = None) -> Health:
    """Read the health panel now (by the one clock)."""
    cfg = cfg or settings()
    now = (clock or DatabaseClock(db.engine())).now()
    problems: list[str] = []
    with db.reading() as s:
        tick = s.get(Tick, NAME)
        swept = s.get(Tick, READBACK)
        oldest = s.execute(queries.oldest_unclaimed_due(now)).scalar()
        alarms = s.execute(select(func.count()).select_from(queries.open_alarms().subquery())).scalar_one()
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
    return Health(
        now=now,
        last_tick_at=tick.at if tick else None,
        last_tick_age=tick_age,
        last_sweep_age=sweep_age,
        queued=queued,
        scheduled=scheduled,
        oldest_unclaimed_due_age=due_age,
        open_alarms=alarms,
        problems=tuple(problems),
        healthy=not problems,
    )

"""The reconciler's tick (§7): find what should be moving and is not, and arm it.

It never edits a post: it arms the post's one job, and the ordinary claim re-drives it
with a fresh fence, asking admission like every other path. Held posts are not
candidates, so nothing held is revived. Two reconcilers at once are safe: arming is
idempotent under a per-post lock, and only one claim can win.

rq's scheduler lives inside one worker and another takes over only after about ten
minutes, so herald does not depend on it: a due post whose job still waits in the
scheduled registry is enqueued directly by ``arm``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite

from core.config import Settings, settings
from core.runtime.arming import arm
from core.runtime.clock import Clock, DatabaseClock
from core.store import db
from core.store.models import Tick
from reconciler import alarms, queries, readback

log = logging.getLogger(__name__)

NAME = "reconciler"


@dataclass(frozen=True)
class TickReport:
    at: datetime
    armed: int
    missed_raised: int
    resolved: int
    seen: int
    duplicates: int
    duration_ms: float


def candidates(now: datetime, cfg: Settings) -> set[int]:
    """Posts that need a live job: due (or due before the next tick), stale, or parked."""
    horizon = now + timedelta(seconds=cfg.tick_seconds)
    with db.reading() as s:
        found = set(s.execute(queries.due_posts(horizon)).scalars())
        found |= set(s.execute(queries.stale_leases(now - timedelta(seconds=cfg.grace_seconds))).scalars())
        found |= set(s.execute(queries.parked_deliveries(horizon)).scalars())
    return found


def tick(clock: Clock | None = None, cfg: Settings | None = None) -> TickReport:
    """One pass: arm every candidate, sweep read-backs, evaluate alarms, record the run."""
    cfg = cfg or settings()
    clock = clock or DatabaseClock(db.engine())
    started = time.perf_counter()
    now = clock.now()
    previous = _last_tick()
    armed = sum(arm(post_id, clock) is not None for post_id in sorted(candidates(now, cfg)))
    seen, duplicates = readback.sweep(now, cfg.call_timeout, cfg.readback_settle_seconds, previous)
    raised, resolved = alarms.check_missed_slots(now, cfg.missed_after)
    report = TickReport(now, armed, raised, resolved, seen, duplicates, (time.perf_counter() - started) * 1000)
    _record(report)
    log.info("tick: armed %s, alarms +%s -%s, read back %s", armed, raised, resolved, seen)
    return report


def _last_tick() -> datetime | None:
    """When the previous tick (this reconciler's or another's) started."""
    with db.reading() as s:
        return s.execute(select(Tick.at).where(Tick.name == NAME)).scalar_one_or_none()


def _record(report: TickReport) -> None:
    with db.transaction() as s:
        insert = postgresql.insert if s.get_bind().dialect.name == "postgresql" else sqlite.insert
        values = {"name": NAME, "at": report.at, "duration_ms": report.duration_ms, "armed": report.armed}
        s.execute(insert(Tick).values(**values).on_conflict_do_nothing())
        s.execute(update(Tick).where(Tick.name == NAME).values(**values))


def run_forever(interval: float | None = None) -> None:
    """Tick every ``interval`` seconds (``HERALD_TICK_SECONDS``) until stopped."""
    every = interval or settings().tick_seconds
    while True:
        started = time.monotonic()
        try:
            tick()
        except Exception:  # a failed tick is retried at the next one
            log.exception("reconciler tick failed")
        time.sleep(max(0.0, every - (time.monotonic() - started)))

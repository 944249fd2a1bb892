"""Calendar: the dashboard's month (``core.services.calendar.calendar``, this month's whole
weeks, in UTC) on a 1,000,000-post table vs a 10,000-post table.

The tables are loaded as ``bench/post_list.py`` loads them (posts spread evenly over two
years centred on now, a mix of statuses, one or two deliveries each). A month of the large
table holds about 41,000 posts, of the small one about 410: the calendar shows at most
``CALENDAR_LIMIT`` (500) of a window, read in slot order from the account's index, so the
month costs about the same on both. Runs alternate between the two databases; the ratio is
of the medians.

    python -m bench.calendar [--backend sqlite|postgresql|both] [--large N] [--small N] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.post_list import load
from bench.stack import BACKENDS, database, stack, versions
from core import config
from core.services.calendar import CalendarWindow, calendar
from core.store import db, schema

GOAL = 2.0


def _account() -> int:
    with db.engine().connect() as conn:
        return int(conn.execute(text("SELECT min(id) FROM accounts")).scalar_one())


def _timed(settings: config.Settings, account_id: int) -> tuple[float, CalendarWindow]:
    config.use(settings)
    started = time.perf_counter()
    shown = calendar(account_id, "month", datetime.now(UTC).date(), "UTC")
    return (time.perf_counter() - started) * 1000, shown


def run(backend: str, small: int, large: int, runs: int) -> dict[str, Any]:
    with stack(backend, "calendar") as running, ExitStack() as extra:
        small_settings = running.settings
        large_dir = Path(running.home).parent / "large"
        large_dir.mkdir()
        large_settings = small_settings.with_(database_url=extra.enter_context(database(backend, large_dir)))
        loaded: dict[str, float] = {}
        accounts: dict[str, int] = {}
        for name, settings, n in (("small", small_settings, small), ("large", large_settings, large)):
            config.use(settings)
            schema.upgrade(db.engine())
            loaded[name] = load(n, running.channels(3))
            accounts[name] = _account()
        both = {"small": small_settings, "large": large_settings}
        for _ in range(3):
            for name, settings in both.items():
                _timed(settings, accounts[name])
        ms: dict[str, list[float]] = {"small": [], "large": []}
        rows: dict[str, tuple[int, bool]] = {}
        for _ in range(runs):
            for name, settings in both.items():
                took, shown = _timed(settings, accounts[name])
                ms[name].append(took)
                rows[name] = (len(shown.posts), shown.more)
        config.use(small_settings)
        result: dict[str, Any] = {
            "backend": backend,
            "small_posts": small,
            "large_posts": large,
            "load_seconds": loaded,
            "runs": runs,
            "small_ms": statistics.median(ms["small"]),
            "large_ms": statistics.median(ms["large"]),
            "small_rows": rows["small"][0],
            "large_rows": rows["large"][0],
            "large_more": rows["large"][1],
            "versions": versions(backend),
        }
    result["ratio"] = result["large_ms"] / result["small_ms"]
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
        print(
            f"{r['backend']}: this month {r['large_ms']:.1f} ms ({r['large_rows']} posts shown"
            f"{', more left out' if r['large_more'] else ''}) on {r['large_posts']:,} posts vs {r['small_ms']:.1f} ms "
            f"({r['small_rows']} posts) on {r['small_posts']:,} (loaded in {r['load_seconds']['large']:.0f} s)",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        f"calendar (this month, ms, {args.large:,} posts ÷ {args.small:,} posts, goal ≤ 2): "
        + ", ".join(f"{r['backend']} {r['ratio']:.2f} {'PASS' if r['pass'] else 'FAIL'}" for r in results)
    )


if __name__ == "__main__":
    main()

"""Lateness: a burst of 100 posts/s, all due within the same 10 s, through 2 worker
processes (rq's scheduler in one) and a reconciler.

Figures: slot→claimed and slot→confirmed p50/p95/p99, from ``deliveries.claimed_at`` /
``confirmed_at`` − ``posts.scheduled_at``. Baseline: the same load through a 1-minute
polling loop (what cron-driven schedulers do), implemented here – every ``period``
seconds it selects the due posts and enqueues them – with the same 2 workers (without
rq's scheduler: the loop is the scheduler). The loop really runs a full minute, with the
burst in the middle of it (the expected phase); the phase-averaged figures are computed
from that run's measured processing delays, for every phase of the burst in the minute.

    python -m bench.lateness [--backend sqlite|postgresql|both] [--baseline-backend B|none]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from rq import Worker
from sqlalchemy import select

from bench.stack import BACKENDS, Stack, confirmed, enqueue_now, insert_posts, now, percentile, stack, versions
from core.domain.states import PostStatus
from core.runtime.arming import arm
from core.runtime.queue import connection, post_queue
from core.store import db
from core.store.models import Delivery, Post

GOAL_P50, GOAL_P99 = 1.0, 2.0
RATE, WINDOW = 100, 10.0
QUANTILES = (50, 95, 99)


def _wait_for_workers(n: int, scheduler: bool, timeout: float = 30.0) -> None:
    queue = post_queue()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = len(Worker.all(queue=queue)) >= n
        if ready and (not scheduler or connection().exists(f"rq:scheduler-lock:{queue.name}")):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{n} workers did not start within {timeout:g}s")


def _burst_slots(first: datetime, rate: int = RATE) -> list[datetime]:
    count = int(rate * WINDOW)
    return [first + timedelta(seconds=i / rate) for i in range(count)]


def _wait_confirmed(ids: Sequence[int], until: float) -> int:
    done = 0
    while time.monotonic() < until:
        done = confirmed(ids)
        if done == len(ids):
            break
        time.sleep(0.5)
    return done


def _instants(ids: Sequence[int]) -> list[tuple[datetime, datetime | None, datetime | None]]:
    with db.reading() as s:
        rows = s.execute(
            select(Post.scheduled_at, Delivery.claimed_at, Delivery.confirmed_at)
            .join(Delivery, Delivery.post_id == Post.id)
            .where(Post.id.in_(list(ids)))
        ).all()
    return [(slot, claimed, done) for slot, claimed, done in rows]


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    return {f"p{q}": percentile(values, q) for q in QUANTILES}


def herald_run(running: Stack, channel_id: int, rate: int = RATE) -> dict[str, Any]:
    """The burst through herald: rq's per-item timers, 2 workers and a reconciler."""
    running.spawn("worker-0", "worker")
    running.spawn("worker-1", "worker", "--no-scheduler")
    running.spawn("reconciler", "reconcile")
    _wait_for_workers(2, scheduler=True)
    first = now() + timedelta(seconds=12)
    slots = _burst_slots(first, rate)
    ids = insert_posts([channel_id], slots)
    started = time.monotonic()
    for post_id in ids:
        arm(post_id)
    armed_in = time.monotonic() - started
    if now() > first - timedelta(seconds=1):
        raise RuntimeError(f"arming {len(ids)} posts took {armed_in:.1f}s: the burst started before it was armed")
    until = time.monotonic() + (first - now()).total_seconds() + WINDOW + 90
    done = _wait_confirmed(ids, until)
    running.stop_all_but_sandbox()
    rows = _instants(ids)
    claimed = [(c - s).total_seconds() for s, c, _ in rows if c is not None]
    confirmed_ = [(d - s).total_seconds() for s, _, d in rows if d is not None]
    last = max((d for _, _, d in rows if d is not None), default=first)
    by_second: dict[int, list[float]] = {}
    for slot, _, done_at in rows:
        if done_at is not None:
            by_second.setdefault(int((slot - first).total_seconds()), []).append((done_at - slot).total_seconds())
    return {
        "rate_per_s": rate,
        "posts": len(ids),
        "confirmed": done,
        "armed_in_s": armed_in,
        # Posts confirmed per second from the first slot to the last confirmation.
        "drain_rate_per_s": done / max((last - first).total_seconds(), 1e-9),
        "p50_by_second_of_burst": {k: round(percentile(v, 50), 2) for k, v in sorted(by_second.items())},
        "claimed_before_slot": sum(1 for x in claimed if x < 0),
        "slot_to_claimed": _quantiles(claimed),
        "slot_to_confirmed": _quantiles(confirmed_),
        "max_slot_to_confirmed": max(confirmed_, default=float("nan")),
    }


def polling_run(running: Stack, channel_id: int, period: float) -> dict[str, Any]:
    """The burst through a polling loop: every ``period`` s, enqueue what is due."""
    running.spawn("poll-worker-0", "worker", "--no-scheduler")
    running.spawn("poll-worker-1", "worker", "--no-scheduler")
    _wait_for_workers(2, scheduler=False)
    ticks: list[datetime] = []
    enqueued: set[int] = set()
    # The loop's first tick is now; the burst sits in the middle of the minute.
    loop_start = now()
    first = loop_start + timedelta(seconds=period / 2 - WINDOW / 2)
    ids = insert_posts([channel_id], _burst_slots(first))
    next_tick = time.monotonic()
    deadline = time.monotonic() + period + WINDOW + 90
    while time.monotonic() < deadline and len(enqueued) < len(ids):
        time.sleep(max(0.0, next_tick - time.monotonic()))
        next_tick += period
        tick_at = now()
        ticks.append(tick_at)
        with db.reading() as s:
            due = [
                i
                for i in s.execute(
                    select(Post.id).where(Post.status == PostStatus.SCHEDULED, Post.scheduled_at <= tick_at)
                ).scalars()
                if i not in enqueued
            ]
        enqueue_now(due)
        enqueued.update(due)
    done = _wait_confirmed(ids, time.monotonic() + 90)
    running.stop_all_but_sandbox()
    rows = _instants(ids)
    claimed = [(c - s).total_seconds() for s, c, _ in rows if c is not None]
    confirmed_ = [(d - s).total_seconds() for s, _, d in rows if d is not None]
    # Phase-averaged: the same processing delays (confirmed − the tick that enqueued
    # it), with the burst placed at every phase of the minute.
    pick = ticks[-1]
    measured = [((s - first).total_seconds(), (d - pick).total_seconds()) for s, _, d in rows if d is not None]
    averaged: list[float] = []
    for step in range(120):
        phase = step * period / 120  # how far past a tick the burst's first slot falls
        averaged += [(-(phase + offset)) % period + delay for offset, delay in measured]
    return {
        "period_s": period,
        "posts": len(ids),
        "confirmed": done,
        "slot_to_claimed": _quantiles(claimed),
        "slot_to_confirmed": _quantiles(confirmed_),
        "phase_averaged_slot_to_confirmed": _quantiles(averaged),
    }


def run(backend: str, baseline: bool, period: float, light: int) -> dict[str, Any]:
    result: dict[str, Any] = {"backend": backend, "rate_per_s": RATE, "window_s": WINDOW}
    with stack(backend, "lateness") as running:
        (channel_id,) = running.channels(1)
        result["versions"] = versions(backend)
        result["herald"] = herald_run(running, channel_id)
        if light:
            # The same path at a rate the 2 workers can keep up with: scheduling, not capacity.
            result["herald_light"] = herald_run(running, channel_id, light)
        if baseline:
            result["polling"] = polling_run(running, channel_id, period)
    h = result["herald"]["slot_to_confirmed"]
    result["goal"] = f"p50 ≤ {GOAL_P50:g} s, p99 ≤ {GOAL_P99:g} s"
    result["pass"] = (
        result["herald"]["confirmed"] == result["herald"]["posts"] and h["p50"] <= GOAL_P50 and h["p99"] <= GOAL_P99
    )
    if baseline:
        p = result["polling"]["slot_to_confirmed"]
        result["ratio_p50"] = h["p50"] / p["p50"]
        result["ratio_p99"] = h["p99"] / p["p99"]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument(
        "--baseline-backend", choices=[*BACKENDS, "all", "none"], default="sqlite", help="where to run the polling loop"
    )
    parser.add_argument("--period", type=float, default=60.0, help="the polling loop's period, s")
    parser.add_argument(
        "--light-rate", type=int, default=20, help="also run a burst at this rate (posts/s) that fits; 0: no"
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.baseline_backend in (b, "all"), args.period, args.light_rate) for b in backends]
    for r in results:
        h = r["herald"]
        print(
            f"{r['backend']}: herald slot→claimed "
            + " ".join(f"{k} {v:.2f}s" for k, v in h["slot_to_claimed"].items())
            + "; slot→confirmed "
            + " ".join(f"{k} {v:.2f}s" for k, v in h["slot_to_confirmed"].items())
            + f" ({h['confirmed']}/{h['posts']} confirmed, {h['drain_rate_per_s']:.0f}/s; p50 by second of the burst"
            + f" {list(h['p50_by_second_of_burst'].values())})",
            file=sys.stderr,
        )
        if "herald_light" in r:
            light = r["herald_light"]
            print(
                f"{r['backend']}: at {light['rate_per_s']} posts/s, slot→confirmed "
                + " ".join(f"{k} {v:.2f}s" for k, v in light["slot_to_confirmed"].items()),
                file=sys.stderr,
            )
        if "polling" in r:
            p = r["polling"]
            print(
                f"{r['backend']}: {p['period_s']:g}-s polling slot→confirmed "
                + " ".join(f"{k} {v:.1f}s" for k, v in p["slot_to_confirmed"].items())
                + "; phase-averaged "
                + " ".join(f"{k} {v:.1f}s" for k, v in p["phase_averaged_slot_to_confirmed"].items()),
                file=sys.stderr,
            )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    parts = []
    for r in results:
        h = r["herald"]["slot_to_confirmed"]
        text = f"{r['backend']} p50 {h['p50']:.2f}s p99 {h['p99']:.2f}s {'PASS' if r['pass'] else 'FAIL'}"
        if "ratio_p50" in r:
            text += f" (÷ 1-min polling: p50 {r['ratio_p50']:.3f}, p99 {r['ratio_p99']:.3f})"
        parts.append(text)
    print("lateness slot→confirmed (goal p50 ≤ 1 s, p99 ≤ 2 s): " + ", ".join(parts))


if __name__ == "__main__":
    main()

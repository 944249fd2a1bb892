"""Catch-up: a backlog of overdue posts after an outage, sent at the channels' declared rates.

``--posts`` overdue single-channel posts spread over ``--channels`` sandbox channels, each
channel keeping a declared rate (its ``rate`` setting) that the sandbox platform enforces
for real on the channel's token (``PUT /sandbox/rate``: 429 with ``Retry-After`` past it).
Every post is overdue and queued before the workers start (the outage ends); ``--workers``
worker processes (rq's scheduler in the first) then drain it.

Figures:

* **429s ÷ posts**: what the sandbox's limit refused, over the posts (goal ≤ 1 %);
* **drain ÷ minimum**: from the first claim to the last confirmation
  (``deliveries.claimed_at``, ``confirmed_at``), over what the rates allow at best, the posts
  ÷ the channels' aggregate rate (goal ≤ 1.2). The first window of every channel may go at
  once, so a perfect pacer drains a window sooner than that minimum.

Each post published once is checked on the sandbox's own record; the load average is
printed beside the figures, as they depend on the machine being otherwise quiet.

    python -m bench.catchup [--backend sqlite|postgresql|both] [--posts N] [--channels C]
                            [--rate COUNT/SECONDS] [--workers W]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

import httpx
from rq import Worker
from sqlalchemy import func, select

from bench.lateness import _wait_for_workers
from bench.stack import BACKENDS, Stack, confirmed, due_slots, enqueue_now, insert_posts, stack, versions
from core.plugins import Rate
from core.runtime.queue import post_queue
from core.services.channels import add_channel
from core.store import db
from core.store.models import Delivery

GOAL_429S, GOAL_DRAIN = 0.01, 1.2


def _channels(running: Stack, n: int, rate: Rate) -> list[int]:
    """``n`` sandbox channels keeping ``rate``, each with a token of its own: the sandbox
    counts its limit per token, as a platform counts it per account."""
    setting = f"{rate.count}/{rate.per_seconds:g}"
    return [
        add_channel(
            f"catchup-{i}", "sandbox-native", {"base_url": running.sandbox_url, "token": f"t-{i}", "rate": setting}
        )
        for i in range(n)
    ]


def _backlog(channel_ids: Sequence[int], posts: int) -> list[int]:
    """``posts`` overdue posts, one channel each, in the order an outage leaves them: the
    channels' posts interleaved."""
    share, extra = divmod(posts, len(channel_ids))
    each = [insert_posts([cid], due_slots(share + (i < extra))) for i, cid in enumerate(channel_ids)]
    return [post_id for row in zip_longest(*each) for post_id in row if post_id is not None]


def _wait_drained(ids: Sequence[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if confirmed(ids) == len(ids):
            return
        time.sleep(0.5)
    raise RuntimeError(f"only {confirmed(ids)} of {len(ids)} posts were confirmed within {timeout:g}s")


def run(backend: str, posts: int, channels: int, rate: Rate, workers: int) -> dict[str, Any]:
    aggregate = channels * rate.count / rate.per_seconds
    minimum = posts / aggregate
    with stack(backend, "catchup") as running:
        channel_ids = _channels(running, channels, rate)
        limit = {"count": rate.count, "per_seconds": rate.per_seconds}
        httpx.put(f"{running.sandbox_url}/sandbox/rate", json=limit, timeout=30).raise_for_status()
        ids = _backlog(channel_ids, posts)
        enqueue_now(ids)
        running.spawn("worker-0", "worker")
        for i in range(1, workers):
            running.spawn(f"worker-{i}", "worker", "--no-scheduler")
        _wait_for_workers(workers, scheduler=True)
        _wait_drained(ids, timeout=minimum * 5 + 120)
        load = os.getloadavg()
        # Every run of a post's job, the waits included (rq counts them per worker).
        runs = sum(w.successful_job_count + w.failed_job_count for w in Worker.all(queue=post_queue()))
        refused = httpx.get(f"{running.sandbox_url}/sandbox/rate", timeout=30).json()["refused"]
        accepted = running.sandbox_posts()
        if accepted != posts:
            raise RuntimeError(f"the sandbox accepted {accepted} posts, expected {posts} (each once)")
        with db.reading() as s:
            first, last = s.execute(
                select(func.min(Delivery.claimed_at), func.max(Delivery.confirmed_at)).where(Delivery.post_id.in_(ids))
            ).one()
            attempts = int(s.execute(select(func.sum(Delivery.attempts)).where(Delivery.post_id.in_(ids))).scalar_one())
        drain = (last - first).total_seconds()
        result: dict[str, Any] = {
            "backend": backend,
            "posts": posts,
            "channels": channels,
            "rate_per_channel": str(rate),
            "aggregate_per_s": aggregate,
            "workers": workers,
            "refused_429": refused,
            "attempts": attempts,
            "job_runs": runs,
            "drain_s": drain,
            "minimum_s": minimum,
            "ratio_429s": refused / posts,
            "ratio_drain": drain / minimum,
            "loadavg": load,
            "versions": versions(backend),
        }
    result["pass"] = result["ratio_429s"] <= GOAL_429S and result["ratio_drain"] <= GOAL_DRAIN
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--posts", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--rate", default="20/1", help="each channel's declared and enforced rate, COUNT/SECONDS")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    rate = Rate.parse(args.rate)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.posts, args.channels, rate, args.workers) for b in backends]
    for r in results:
        print(
            f"{r['backend']}: {r['posts']} posts on {r['channels']} channels at {r['rate_per_channel']} each "
            f"({r['aggregate_per_s']:g}/s), {r['workers']} workers: drained in {r['drain_s']:.1f}s "
            f"(minimum {r['minimum_s']:.1f}s), {r['refused_429']} 429s, {r['attempts']} attempts in "
            f"{r['job_runs']} job runs; "
            f"load average {' '.join(f'{x:.2f}' for x in r['loadavg'])}",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        f"catch-up (429s ÷ posts, goal ≤ {GOAL_429S:.0%}; drain ÷ minimum, goal ≤ {GOAL_DRAIN}): "
        + ", ".join(
            f"{r['backend']} {r['ratio_429s']:.2%} {r['ratio_drain']:.2f} {'PASS' if r['pass'] else 'FAIL'}"
            for r in results
        )
    )


if __name__ == "__main__":
    main()

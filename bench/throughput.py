"""Throughput: due single-channel posts → sandbox-confirmed, per second, with one worker.

Baseline: bare rq no-op jobs through the same worker class (``core.runtime.worker.HeraldWorker``,
in-process, SimpleWorker-based) on the same Redis, in the same run. Rounds alternate
baseline and publish, a few seconds each, so drift on a shared machine hits both; the
ratio is the median of the rounds' ratios (each publish round over the baseline round
just before it). Also counts the commits (and statements) one publish costs, with SQLAlchemy
event listeners on herald's engine.

    python -m bench.throughput [--backend sqlite|postgresql|both] [--posts N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from rq import Queue
from rq.job import Job

from bench.stack import BACKENDS, Counter, confirmed, due_slots, enqueue_now, insert_posts, stack, versions
from core.runtime.queue import connection, post_queue
from core.runtime.worker import HeraldWorker

GOAL = 0.5


class _Timed(HeraldWorker):
    """The worker, noting when its last job ended.

    A burst run's shutdown after that is not work: rq waits up to a second for its
    pub/sub thread to stop, and did so in about one run in eight here, which made a
    round's rate depend on that wait rather than on its jobs.
    """

    last_ended: float | None = None

    def perform_job(self, job: Job, queue: Queue) -> bool:
        try:
            return super().perform_job(job, queue)
        finally:
            self.last_ended = time.perf_counter()


def _work(queue: Queue) -> float:
    """Run one in-process worker until ``queue`` is empty; seconds from its start until
    its last job ended."""
    worker = _Timed([queue], connection=connection())
    started = time.perf_counter()
    worker.work(burst=True, with_scheduler=False, logging_level="WARNING")
    return (worker.last_ended or time.perf_counter()) - started


def noop_rate(n: int) -> float:
    queue = Queue(f"{post_queue().name}-noop", connection=connection())
    queue.enqueue_many([Queue.prepare_data("bench.jobs.noop", result_ttl=0) for _ in range(n)])
    return n / _work(queue)


def publish_rate(n: int, channel_id: int, counter: Counter | None = None) -> float:
    ids = insert_posts([channel_id], due_slots(n))
    enqueue_now(ids)
    if counter is not None:
        counter.reset()  # what the publishes cost, not the posts' insertion
    seconds = _work(post_queue())
    done = confirmed(ids)
    if done != n:
        raise RuntimeError(f"only {done} of {n} posts were confirmed")
    return n / seconds


def publish_cost(n: int, channel_id: int) -> dict[str, float]:
    """Commits, rollbacks and statements per publish, in a round of its own: counting them
    slows every statement, so the timed rounds do not."""
    counter = Counter()
    try:
        publish_rate(n, channel_id, counter)
    finally:
        counter.close()
    return {
        "commits": counter.commits / n,
        "rollbacks": counter.rollbacks / n,
        "statements": counter.statements / n,
    }


def run(backend: str, posts: int, rounds: int) -> dict[str, Any]:
    with stack(backend, "throughput") as running:
        (channel_id,) = running.channels(1)
        # Warm up: imports, the plugin manager, the adapter's kept-alive client, pools.
        publish_rate(20, channel_id)
        noop_rate(50)
        cost = publish_cost(posts, channel_id)
        noop_rates: list[float] = []
        publish_rates: list[float] = []
        for _ in range(rounds):
            noop_rates.append(noop_rate(posts * 2))
            publish_rates.append(publish_rate(posts, channel_id))
        accepted = running.sandbox_posts()
        expected = 20 + posts * (rounds + 1)
        if accepted != expected:
            raise RuntimeError(f"the sandbox accepted {accepted} posts, expected {expected}")
        result: dict[str, Any] = {
            "backend": backend,
            "posts_per_round": posts,
            "rounds": rounds,
            "noop_jobs_per_s": statistics.median(noop_rates),
            "publishes_per_s": statistics.median(publish_rates),
            "noop_rounds": noop_rates,
            "publish_rounds": publish_rates,
            "commits_per_publish": cost["commits"],
            "rollbacks_per_publish": cost["rollbacks"],
            "statements_per_publish": cost["statements"],
            "versions": versions(backend),
        }
    result["ratio"] = statistics.median(p / n for p, n in zip(publish_rates, noop_rates, strict=True))
    result["goal"] = f"≥ {GOAL}"
    result["pass"] = result["ratio"] >= GOAL
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--posts", type=int, default=150, help="posts per publish round (no-op jobs: twice that)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.posts, args.rounds) for b in backends]
    for r in results:
        print(
            f"{r['backend']}: {r['publishes_per_s']:.0f} publishes/s vs {r['noop_jobs_per_s']:.0f} no-op jobs/s; "
            f"{r['commits_per_publish']:.2f} commits, {r['statements_per_publish']:.1f} statements per publish",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        "throughput ratio (publishes/s ÷ rq no-op jobs/s, goal ≥ 0.5): "
        + ", ".join(f"{r['backend']} {r['ratio']:.2f} {'PASS' if r['pass'] else 'FAIL'}" for r in results)
    )


if __name__ == "__main__":
    main()

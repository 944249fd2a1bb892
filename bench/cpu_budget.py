"""Where the fan-out benchmark's time goes: the worker's CPU per post and per delivery.

``bench.fanout`` compares deliveries per second of 5-channel and of single-channel posts
through one worker process, which is busy most of every round on both sides. So its ratio
follows two costs: what a **delivery** costs (its platform call and its result's write),
paid 5 times by a 5-channel post, and what a **post** costs (rq's own work on the job, the
worker's dequeue of it, the claim), paid once by either. This runs the same rounds and
counts, with ``time.thread_time`` around each section of the publish path, the CPU every
thread spent in it; and the worker process's CPU (user + system, all threads) per
delivery, and that CPU over the wall time (how busy the process was). Last, one thread
makes the same platform call alone, with nothing beside it: the call's own cost.

    python -m bench.cpu_budget [--backend sqlite|postgresql] [--rounds R]

The sections are found by wrapping the functions the worker calls, so the figures cost a
little more than in ``bench.fanout``; they are for comparing the two sides, not for rates.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rq import Queue
from rq.worker.base import BaseWorker

import bench.fanout as fanout
from bench.stack import BACKENDS, stack
from core.plugins import manager as plugins
from core.plugins.adapter import PublishContext
from core.plugins.transport import http_client
from core.runtime import job as publish
from core.runtime.calls import call_adapter
from core.runtime.worker import HeraldWorker

#: (label, owner, attribute): every call of ``owner.attribute`` adds its thread CPU to label.
SECTIONS: tuple[tuple[str, Any, str], ...] = (
    ("call", publish, "call_adapter"),
    ("result", publish, "part_published"),
    ("claim", publish, "claim_due_post"),
    ("job", publish, "publish_post"),
    ("perform", BaseWorker, "perform_job"),
    ("dequeue", HeraldWorker, "dequeue_job_and_maintain_ttl"),
)


class Budget:
    """Thread CPU per section, and the process's CPU and wall time in the worker."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.process = 0.0
        self.wall = 0.0
        self._lock = threading.Lock()

    def section(self, label: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """What wraps a function so that its calls' thread CPU adds up under ``label``."""

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            def counted(*args: Any, **kwargs: Any) -> Any:
                started = time.thread_time()
                try:
                    return fn(*args, **kwargs)
                finally:
                    spent = time.thread_time() - started
                    with self._lock:
                        self.cpu[label] += spent

            return counted

        return wrap

    def work(self, work: Callable[[Queue], float]) -> Callable[[Queue], float]:
        def counted(queue: Queue) -> float:
            before = resource.getrusage(resource.RUSAGE_SELF)
            seconds = work(queue)
            after = resource.getrusage(resource.RUSAGE_SELF)
            self.process += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            self.wall += seconds
            return seconds

        return counted


@contextmanager
def counting(budget: Budget) -> Iterator[None]:
    """Count every section and the worker's runs into ``budget`` while the block runs."""
    wrappers: list[tuple[Any, str, Callable[[Any], Any]]] = [
        (owner, name, budget.section(label)) for label, owner, name in SECTIONS
    ]
    wrappers.append((fanout, "_work", budget.work))  # the worker's runs, as bench.fanout times them
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in wrappers]
    try:
        for owner, name, wrap in wrappers:
            setattr(owner, name, wrap(getattr(owner, name)))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def per_side(budgets: list[Budget], deliveries: int, posts: int) -> dict[str, float]:
    """Milliseconds per delivery (and per post for a post's own costs), median of the rounds."""

    def ms(values: list[float], per: int) -> float:
        return statistics.median(values) * 1000 / per

    return {
        "deliveries_per_s": statistics.median(deliveries / b.wall for b in budgets),
        "busy": statistics.median(b.process / b.wall for b in budgets),
        "process_cpu_per_delivery": ms([b.process for b in budgets], deliveries),
        "call_per_delivery": ms([b.cpu["call"] for b in budgets], deliveries),
        "result_per_delivery": ms([b.cpu["result"] for b in budgets], deliveries),
        "claim_per_post": ms([b.cpu["claim"] for b in budgets], posts),
        # rq's own work on a job: what its perform costs beyond the job function.
        "rq_job_per_post": ms([b.cpu["perform"] - b.cpu["job"] for b in budgets], posts),
        "dequeue_per_post": ms([b.cpu["dequeue"] for b in budgets], posts),
    }


def call_alone(sandbox_url: str, calls: int) -> float:
    """CPU milliseconds of one platform call made by one thread with nothing beside it."""
    adapter = plugins.adapter("sandbox-native")
    client = http_client(30.0)

    def one(i: int) -> None:
        ctx = PublishContext(
            settings={"base_url": sandbox_url, "token": "t-ok"},
            key=f"cpu-budget-{i}",
            text=f"alone {i}",
            part_index=0,
            reply_to=None,
            root=None,
            client=client,
            heartbeat=lambda: None,
        )
        call_adapter(adapter.publish, ctx, 30.0)

    for i in range(50):  # warm up: the connection, the adapter
        one(i)
    started = time.thread_time()
    for i in range(calls):
        one(50 + i)
    return (time.thread_time() - started) * 1000 / calls


def run(backend: str, posts: int, rounds: int) -> dict[str, Any]:
    with stack(backend, "cpu-budget") as running:
        wide, single = fanout.sides(running.channels(fanout.WIDTH), posts)
        fanout.delivery_rate(single)
        fanout.delivery_rate(wide)
        budgets: dict[str, list[Budget]] = {"single": [], "wide": []}
        for _ in range(rounds):
            for side, sets in (("single", single), ("wide", wide)):
                budget = Budget()
                with counting(budget):
                    fanout.delivery_rate(sets)
                budgets[side].append(budget)
        deliveries = posts * fanout.WIDTH
        return {
            "backend": backend,
            "single": per_side(budgets["single"], deliveries, deliveries),
            "wide": per_side(budgets["wide"], deliveries, posts),
            "call_alone_ms": call_alone(running.sandbox_url, 300),
        }


def report(r: dict[str, Any]) -> str:
    single, wide = r["single"], r["wide"]
    lines = [f"{r['backend']}: ms of CPU, median of the rounds; 'a post' is one job (1 or 5 deliveries)"]
    lines.append(f"{'':34s}{'single-channel':>16s}{'5-channel':>12s}")
    for key, label in (
        ("deliveries_per_s", "deliveries per second"),
        ("busy", "worker process busy (CPU ÷ wall)"),
        ("process_cpu_per_delivery", "process CPU per delivery"),
        ("call_per_delivery", "  the platform call"),
        ("result_per_delivery", "  its result's write"),
        ("claim_per_post", "per post: the claim"),
        ("rq_job_per_post", "per post: rq's own work on the job"),
        ("dequeue_per_post", "per post: the worker's dequeue"),
    ):
        digits = 0 if key == "deliveries_per_s" else 2
        lines.append(f"{label:34s}{single[key]:16.{digits}f}{wide[key]:12.{digits}f}")
    lines.append(f"the platform call from one thread alone: {r['call_alone_ms']:.2f} ms of CPU")
    lines.append(
        f"fan-out ratio, deliveries/s: {wide['deliveries_per_s'] / single['deliveries_per_s']:.2f}×; "
        f"process CPU per delivery, single ÷ 5-channel: "
        f"{single['process_cpu_per_delivery'] / wide['process_cpu_per_delivery']:.2f}×"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="postgresql")
    parser.add_argument("--posts", type=int, default=30, help="5-channel posts per round (×5 single ones)")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    print(report(run(args.backend, args.posts, args.rounds)))


if __name__ == "__main__":
    main()

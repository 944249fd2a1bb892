"""The faults a chaos run injects, each its own scenario, and the mixed run.

A scenario is sandbox fault settings (``PUT /sandbox/faults``, drawn per request by the
sandbox's seeded RNG) plus process-level injectors, each a thread that acts at random
instants drawn from the run's seeded RNG while posts are flowing.

The sandbox's faults apply to every API it answers unless a scenario's ``strategies``
narrows them (its default is all five: the sandbox's three and its Mastodon and Bluesky
personalities, each answering in its platform's own words, 429s included), so every
platform fault reaches the real adapters' channels too (tests/chaos/test_harness.py
holds every scenario to that).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rq.exceptions import NoSuchJobError
from rq.job import Job

from core.runtime.arming import JOB_TIMEOUT, job_id
from core.runtime.queue import post_queue
from tests.chaos.cluster import TIMINGS, Cluster
from tests.chaos.history import History

#: The native key TTL the forgotten-keys scenarios' workers declare (sandbox-native's and
#: Mastodon's, tests/chaos/entry.py), and when the sandbox forgets.
SHORT_KEY_TTL = 2.0
FORGET_AFTER = 2.5

#: The sandbox APIs of the native_key channels, which the forgotten-keys scenario faults.
NATIVE_KEY_APIS = ("native", "mastodon", "bluesky")


@dataclass(frozen=True)
class Scenario:
    name: str
    #: What it does, for the report.
    title: str
    sandbox: dict[str, Any] = field(default_factory=dict)
    #: Process-level injectors (names in INJECTORS).
    injectors: tuple[str, ...] = ()
    reconcilers: int = 1
    short_key_ttl: bool = False
    #: Workers run with their wall clocks shifted (SKEWS, drawn from the run's seed).
    clock_skew: bool = False
    #: Seconds before its slot each post is created (None: run.LEAD).
    lead: float | None = None
    #: At full scale it runs as many posts as the mixed run (a fault type of its own,
    #: measured on at least 3,000 posts).
    long: bool = False
    #: Posts carry images (run.MEDIA_SHARE of them, one or two on a part).
    media: bool = False


#: A worker's clock skew (seconds, signed) is drawn from each range in turn; workers take
#: them in the order they start, restarts included. The first is further ahead than a
#: lease and its grace window together: every lease it wrote by its own clock would look
#: stale to the others, and its rq scheduler would start jobs that long before their slot.
SKEW_RANGES = (
    (
        TIMINGS["lease_seconds"] + TIMINGS["grace_seconds"] + 3.0,
        TIMINGS["lease_seconds"] + TIMINGS["grace_seconds"] + 8.0,
    ),
    (-40.0, -20.0),
    (0.5, 2.0),
    (-2.0, -0.5),
)


def draw_skews(rng: random.Random) -> tuple[float, ...]:
    return tuple(round(rng.uniform(low, high), 3) for low, high in SKEW_RANGES)


def skip_reason(scenario: Scenario) -> str:
    """Why ``scenario`` cannot run on this setup; empty when it can."""
    if scenario.clock_skew and not os.environ.get("HERALD_DATABASE_URL", "").startswith("postgresql"):
        return (
            "skipped on SQLite: its clock is read in the calling process (core/runtime/clock.py; there is no "
            "server), so a worker with a skewed clock skews its 'database' clock too and nothing is "
            "tested; run it with HERALD_DATABASE_URL=postgresql://..."
        )
    return ""


HOLD = {"hold_after_accept": 0.3, "hold_seconds": 1.0}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("baseline", "no fault"),
    Scenario(
        "sigkill",
        "SIGKILL a random worker every 1–3 s (30% of posts held 1 s after the platform accepted them)",
        HOLD,
        ("sigkill",),
    ),
    Scenario(
        "sigstop",
        "SIGSTOP a random worker for lease+grace+1–3 s, then SIGCONT (30% of posts held 1 s after accept)",
        HOLD,
        ("sigstop",),
    ),
    Scenario("flushdb", "FLUSHDB of herald's Redis database every 3–6 s", {}, ("flushdb",)),
    Scenario(
        "redis_restart", "Redis stopped for 1–3 s, started on the same port, every 6–10 s", {}, ("redis_restart",)
    ),
    Scenario(
        "db_outage",
        "database write-locked for 2–4 s every 5–8 s (50% of posts held 0.5 s after accept: results land in it)",
        {"hold_after_accept": 0.5, "hold_seconds": 0.5},
        ("db_outage",),
    ),
    Scenario(
        "drop_after_accept",
        "20% of posts stored, then the connection closed unanswered",
        {"drop_after_accept": 0.2},
    ),
    Scenario("error_after_accept", "the platform stores 20% of posts, then answers 500", {"error_after_accept": 0.2}),
    Scenario("error_before_accept", "30% of requests answered 503, nothing stored", {"error_before_accept": 0.3}),
    Scenario(
        "rate_limit_storm",
        "429 storms: 90% refused, Retry-After 1, for 2–4 s every 5–8 s",
        {},
        ("storm",),
    ),
    Scenario(
        "forgotten_keys",
        f"sandbox-native and Mastodon key windows {SHORT_KEY_TTL:g} s, the platform forgets their keys after "
        f"{FORGET_AFTER:g} s (Bluesky's record keys are never forgotten); 30% of native_key posts answered 500 "
        "after accept, 10% dropped",
        {
            "forget_keys_after": FORGET_AFTER,
            "error_after_accept": 0.3,
            "drop_after_accept": 0.1,
            "strategies": list(NATIVE_KEY_APIS),
        },
        short_key_ttl=True,
        # The mixed run cannot shorten its workers' key TTL: measured on as many posts.
        long=True,
    ),
    Scenario(
        "two_reconcilers", "two reconcilers at once (Redis flushed every 3–6 s: both re-arm)", {}, ("flushdb",), 2
    ),
    Scenario(
        "duplicate_enqueue",
        "post jobs enqueued twice more at their slot, behind arming's back",
        {},
        ("dup_enqueue",),
    ),
    Scenario(
        "search_lag",
        "the platform's search shows a post 3 s after storing it; 15% of posts stored then dropped, "
        "15% stored then answered 500 (a read-back before the resend sees nothing)",
        {"search_lag": 3.0, "drop_after_accept": 0.15, "error_after_accept": 0.15},
        long=True,
    ),
    Scenario(
        "clock_skew",
        "each worker's wall clock shifted (one lease+grace+3–8 s ahead, one 20–40 s behind, two within "
        "±2 s); rq's scheduler handed to the next worker every 8–15 s; posts created 20 s ahead, so a "
        "scheduler running ahead starts jobs well before their slot",
        {},
        ("scheduler_handover",),
        clock_skew=True,
        lead=20.0,
        long=True,
    ),
    Scenario(
        "media",
        "posts with images; uploads faulted (20% stored then dropped, 15% stored then 500, 10% 503, "
        "5% 429), each processed 1 s by the platform; SIGKILL a random worker every 1–3 s",
        {
            "drop_after_accept": 0.2,
            "error_after_accept": 0.15,
            "error_before_accept": 0.1,
            "rate_limit": 0.05,
            "targets": ["media"],
            "media_processing_seconds": 1.0,
        },
        ("sigkill",),
        media=True,
    ),
    Scenario(
        "mixed",
        "all of the above at once, at lower rates, two reconcilers",
        {
            "drop_after_accept": 0.05,
            "error_after_accept": 0.05,
            "error_before_accept": 0.05,
            "rate_limit": 0.05,
            "hold_after_accept": 0.1,
            "hold_seconds": 1.0,
        },
        ("sigkill", "sigstop", "flushdb", "redis_restart", "db_outage", "dup_enqueue"),
        2,
    ),
)

BY_NAME = {s.name: s for s in SCENARIOS}


class Injectors:
    """Runs a scenario's process-level injectors until told to stop; counts what they did."""

    def __init__(self, cluster: Cluster, history: History, rng: random.Random, recent: Callable[[], list[int]]) -> None:
        self.cluster = cluster
        self.history = history
        self.rng = rng
        self.recent = recent
        self.counts: Counter[str] = Counter()
        self.skipped: dict[str, str] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, names: tuple[str, ...], mixed: bool = False) -> None:
        slow = 3.0 if mixed else 1.0  # the mixed run spaces each injector out
        for name in names:
            if name == "redis_restart" and not self.cluster.redis.can_restart:
                self.skipped[name] = "HERALD_REDIS_URL points at a shared Redis: not restarted"
                self.history.write("fault_skipped", fault=name, why=self.skipped[name])
                continue
            # Each injector draws from its own RNG seeded from the run's, so one's timing
            # does not shift another's schedule.
            rng = random.Random(self.rng.random())
            thread = threading.Thread(target=self._loop, args=(name, rng, slow), name=f"chaos-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _record(self, fault: str, **fields: Any) -> None:
        with self._lock:
            self.counts[fault] += 1
        self.history.write("fault", fault=fault, **fields)

    def _loop(self, name: str, rng: random.Random, slow: float) -> None:
        interval, act = {
            "sigkill": ((1.0, 3.0), self._sigkill),
            "sigstop": ((2.0, 4.0), self._sigstop),
            "flushdb": ((3.0, 6.0), self._flushdb),
            "redis_restart": ((6.0, 10.0), self._redis_restart),
            "db_outage": ((5.0, 8.0), self._db_outage),
            "storm": ((5.0, 8.0), self._storm),
            "dup_enqueue": ((0.3, 0.3), self._dup_enqueue),
            "scheduler_handover": ((8.0, 15.0), self._scheduler_handover),
        }[name]
        while not self._stop.wait(rng.uniform(*interval) * (slow if name != "dup_enqueue" else 1.0)):
            try:
                act(rng)
            except Exception as exc:  # an injector that failed once tries again later
                self.history.write("injector_error", fault=name, error=repr(exc))

    def _pick_worker(self, rng: random.Random) -> Any:
        live = [p for p in self.cluster.live("worker") if not p.stopped]
        return rng.choice(sorted(live, key=lambda p: p.name)) if live else None

    def _sigkill(self, rng: random.Random) -> None:
        proc = self._pick_worker(rng)
        if proc is not None:
            self.cluster.kill(proc)
            self._record("sigkill", worker=proc.name, pid=proc.popen.pid)

    def _sigstop(self, rng: random.Random) -> None:
        proc = self._pick_worker(rng)
        if proc is None or len(self.cluster.live("worker")) < 2:
            return
        frozen = TIMINGS["lease_seconds"] + TIMINGS["grace_seconds"] + rng.uniform(1.0, 3.0)
        proc.stopped = True
        self.cluster.signal(proc, signal.SIGSTOP)
        self._record("sigstop", worker=proc.name, pid=proc.popen.pid, seconds=round(frozen, 2))
        time.sleep(frozen)  # not interruptible: a frozen worker is always thawed
        self.cluster.signal(proc, signal.SIGCONT)
        proc.stopped = False
        self.history.write("fault_end", fault="sigstop", worker=proc.name, pid=proc.popen.pid)

    def _flushdb(self, rng: random.Random) -> None:
        self.cluster.redis.flush()
        self._record("flushdb")

    def _redis_restart(self, rng: random.Random) -> None:
        down = rng.uniform(1.0, 3.0)
        self.cluster.redis.down()
        self._record("redis_restart", seconds=round(down, 2))
        time.sleep(down)
        self.cluster.redis.up()
        self.history.write("fault_end", fault="redis_restart")

    def _db_outage(self, rng: random.Random) -> None:
        seconds = rng.uniform(2.0, 4.0)
        with self.cluster.database.unreachable():
            self._record("db_outage", seconds=round(seconds, 2), backend=self.cluster.database.backend)
            time.sleep(seconds)
        self.history.write("fault_end", fault="db_outage")

    def _storm(self, rng: random.Random) -> None:
        seconds = rng.uniform(2.0, 4.0)
        self.cluster.sandbox_faults(rate_limit=0.9, retry_after=1, seed=rng.randrange(2**31))
        self._record("rate_limit_storm", seconds=round(seconds, 2))
        time.sleep(seconds)
        self.cluster.sandbox_faults()
        self.history.write("fault_end", fault="rate_limit_storm")

    def _scheduler_handover(self, rng: random.Random) -> None:
        """Stop the worker running rq's scheduler (SIGTERM: it finishes its job and gives the
        lock back); its replacement starts with the next clock skew and takes the lock."""
        holder = self.cluster.scheduler_holder()
        if holder is None:
            self.history.write("scheduler_holder", worker=None)
            return
        holder.expected_exit = True
        self.cluster.signal(holder, signal.SIGTERM)
        self._record("scheduler_handover", worker=holder.name, pid=holder.popen.pid, clock_skew=holder.clock_skew)

    def _dup_enqueue(self, rng: random.Random) -> None:
        queue = post_queue()
        for post_id in self.recent():
            try:
                job = Job.fetch(job_id(post_id), connection=queue.connection)
            except NoSuchJobError:
                job = queue.create_job(
                    "core.runtime.job.publish_post",
                    args=(post_id,),
                    job_id=job_id(post_id),
                    timeout=JOB_TIMEOUT,
                    result_ttl=0,
                )
            queue.enqueue_job(job)
            queue.enqueue_job(job)
            self._record("dup_enqueue", post_id=post_id, copies=2)

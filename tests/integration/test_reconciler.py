"""The reconciler: nothing stuck, nothing silent (§7, §14). Real processes where it matters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from redis import Redis
from sqlalchemy import select

from core import ledger
from core.config import Settings
from core.plugins.events import AlarmEvent
from core.plugins.hookspecs import hookimpl
from core.plugins.manager import plugin_manager
from core.runtime.queue import post_queue
from core.services.controls import set_emergency_stop
from core.services.posts import create_post, describe_post
from core.store import db
from core.store.models import Attempt, Post
from reconciler.tick import tick
from tests.integration.conftest import ROOT, Sandbox, Workers, drain, wait_until

pytestmark = pytest.mark.integration


def now() -> datetime:
    return datetime.now(UTC)


def published(post_ids: list[int]) -> bool:
    return all(describe_post(p)["status"] == "published" for p in post_ids)


def fences(post_id: int) -> list[int]:
    with db.reading() as s:
        return list(s.execute(select(Attempt.fence).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars())


class Captured:
    """A plugin that records every alarm routed through ``herald_alarm``."""

    def __init__(self) -> None:
        self.events: list[AlarmEvent] = []

    @hookimpl
    def herald_alarm(self, alarm: AlarmEvent) -> None:
        self.events.append(alarm)


@pytest.fixture
def captured() -> Iterator[Captured]:
    plugin = Captured()
    plugin_manager().register(plugin)
    yield plugin
    plugin_manager().unregister(plugin)


def test_fifty_posts_survive_redis_losing_every_key(
    channels: dict[str, str], platform: Sandbox, workers: Workers, herald: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = list(channels.values())
    slot = now() + timedelta(seconds=3)
    post_ids = [create_post(channels=[names[i % 3]], parts=[f"post {i}"], at=slot) for i in range(50)]
    Redis.from_url(herald.redis_url).flushdb()  # every job and timer is gone

    monkeypatch.setenv("HERALD_TICK_SECONDS", "1")
    workers.start()
    workers.start()
    workers.spawn("reconcile")
    wait_until(lambda: published(post_ids), timeout=60, interval=0.5)

    copies = Counter(p["text"] for p in platform.posts())
    assert len(copies) == 50
    assert set(copies.values()) == {1}


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "frozen"])
def test_a_worker_dead_mid_call_is_redriven_only_after_lease_and_grace_and_its_late_write_changes_nothing(
    stop: signal.Signals,
    channels: dict[str, str],
    platform: Sandbox,
    workers: Workers,
    herald: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform.faults(hold_after_accept=1.0, hold_seconds=8, times=1, strategies=["native"])
    post_id = create_post(channels=[channels["native"]], parts=["mid-call"])
    stuck = workers.start()
    wait_until(lambda: platform.posts("native"))
    os.kill(stuck.pid, stop)

    monkeypatch.setenv("HERALD_TICK_SECONDS", "0.5")
    workers.start()
    workers.spawn("reconcile")
    wait_until(lambda: describe_post(post_id)["status"] == "published", timeout=30)

    with db.reading() as s:
        attempts = s.execute(
            select(Attempt.fence, Attempt.started_at).where(Attempt.post_id == post_id).order_by(Attempt.id)
        ).all()
    assert [fence for fence, _ in attempts] == [1, 2]
    waited = (attempts[1].started_at - attempts[0].started_at).total_seconds()
    assert waited >= herald.lease_seconds + herald.grace_seconds

    if stop is signal.SIGSTOP:
        os.kill(stuck.pid, signal.SIGCONT)  # its held answer arrives; its writes are fenced out
        wait_until(lambda: "fenced out" in workers.output(), timeout=15)
    time.sleep(0.5)
    info = describe_post(post_id)
    copies = platform.posts("native")
    assert len(copies) == 1
    assert info["deliveries"][0]["platform_id"] == copies[0]["id"]
    assert [a["outcome"] for a in info["attempts"]] == [None, "published"]  # the dead attempt recorded nothing


def test_due_posts_go_out_within_a_tick_with_no_scheduler_running(
    channels: dict[str, str], platform: Sandbox, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["no timers"], at=now() + timedelta(seconds=1))
    monkeypatch.setenv("HERALD_TICK_SECONDS", "1")
    workers.start("--no-scheduler")
    workers.spawn("reconcile")

    wait_until(lambda: describe_post(post_id)["status"] == "published", timeout=6)
    assert len(platform.posts()) == 1


def test_two_reconcilers_over_the_same_stuck_set_redrive_each_post_once(
    channels: dict[str, str], platform: Sandbox, herald: Settings
) -> None:
    long_ago = now() - timedelta(minutes=5)
    post_ids = [create_post(channels=[channels["native"]], parts=[f"stuck {i}"], at=long_ago) for i in range(10)]
    for post_id in post_ids:
        assert ledger.claim_post(post_id, "dead-worker", long_ago, herald.lease_seconds, herald.grace_seconds)
    post_queue().empty()

    barrier = threading.Barrier(2)

    def reconcile() -> None:
        barrier.wait()
        tick()

    threads = [threading.Thread(target=reconcile) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert post_queue().count == 10  # one job per post, not two
    drain()

    for post_id in post_ids:
        assert fences(post_id) == [1, 2]  # the dead claim, then exactly one re-drive
    assert len(platform.posts()) == 10


def test_a_held_post_is_not_armed_by_the_reconciler_and_lifting_the_stop_rearms_it(
    channels: dict[str, str], platform: Sandbox, herald: Settings
) -> None:
    set_emergency_stop(True)
    post_id = create_post(channels=[channels["none"]], parts=["stopped"])
    drain()
    assert describe_post(post_id)["status"] == "held"
    Redis.from_url(herald.redis_url).flushdb()

    assert tick().armed == 0
    assert post_queue().count == 0 and post_queue().scheduled_job_registry.count == 0

    set_emergency_stop(False)
    assert post_queue().count == 1
    drain()
    assert describe_post(post_id)["status"] == "published"


def test_a_missed_slot_raises_one_alarm_through_the_hook_and_resolves_once_published(
    channels: dict[str, str], platform: Sandbox, herald: Settings, captured: Captured
) -> None:
    post_id = create_post(channels=[channels["native"]], parts=["late"], at=now() - timedelta(minutes=3))
    Redis.from_url(herald.redis_url).flushdb()  # everything was stopped: no job ran

    first = tick()
    second = tick()
    assert (first.missed_raised, second.missed_raised) == (1, 0)
    assert [(e.kind, e.state, e.post_id) for e in captured.events] == [("missed_slot", "open", post_id)]
    assert "past its slot" in captured.events[0].detail

    drain()  # the first tick armed it
    assert describe_post(post_id)["status"] == "published"
    assert tick().resolved == 1
    assert [e.state for e in captured.events] == ["open", "resolved"]


def test_a_read_back_that_finds_two_copies_raises_a_duplicate_alarm(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, captured: Captured
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["twice?"])
    drain()
    key = describe_post(post_id)["deliveries"][0]["parts"][0]["key"]
    # A second copy with the same key reaches the platform behind herald's back.
    httpx.post(
        f"{sandbox_url}/api/readback/posts",
        json={"text": "twice?", "key": key},
        headers={"Authorization": "Bearer t-ok"},
    ).raise_for_status()

    report = tick()

    assert report.duplicates == 1
    assert [(e.kind, e.state) for e in captured.events] == [("duplicate", "open")]
    assert "2 copies" in captured.events[0].detail
    with db.reading() as s:
        assert s.get_one(Post, post_id).deliveries[0].first_seen_at is not None


def herald_json(*args: str) -> tuple[int, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", *args, "--json"],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, json.loads(result.stdout)


def test_health_is_unhealthy_until_the_reconciler_runs_and_the_queue_is_counted(channels: dict[str, str]) -> None:
    code, report = herald_json("health")
    assert code == 1
    assert any("never run" in p for p in report["problems"])

    create_post(channels=[channels["native"]], parts=["queued"], at=now() + timedelta(hours=1))
    tick()
    code, report = herald_json("health")
    assert code == 0, report["problems"]
    assert report["last_tick_age"] < 30
    assert report["scheduled"] == 1
    assert report["open_alarms"] == 0


def test_timeline_shows_the_four_instants_their_gaps_and_the_attempts(
    channels: dict[str, str], platform: Sandbox
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["watch me"])
    drain()
    tick()  # the read-back sweep sees it

    code, info = herald_json("timeline", str(post_id))
    assert code == 0
    delivery = info["deliveries"][0]
    assert delivery["claimed"] and delivery["confirmed"] and delivery["first_seen"]
    assert delivery["slot_to_claimed"] >= 0
    assert delivery["claimed_to_confirmed"] >= 0
    assert delivery["confirmed_to_first_seen"] >= 0
    assert [(a["fence"], a["outcome"]) for a in delivery["attempts"]] == [(1, "published")]

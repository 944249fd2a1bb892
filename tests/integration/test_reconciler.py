"""The reconciler: nothing stuck, nothing silent (§7, §14). Real processes where it matters."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis
from sqlalchemy import select

from adapters.sandbox import SandboxReadback
from core import config, ledger
from core.config import Settings
from core.plugins.adapter import PublishContext, Published
from core.plugins.hookspecs import RegisterAdapter, hookimpl
from core.plugins.manager import plugin_manager
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.queue import post_queue
from core.services.channels import add_channel
from core.services.controls import set_emergency_stop
from core.services.posts import create_post
from core.store import db
from core.store.models import Alarm, AlarmKind, Attempt, Post, Tick
from reconciler.tick import NAME, READBACK, repair, run_forever, sweep, tick
from tests.integration.conftest import ROOT, Captured, Sandbox, Workers, drain, post_json, wait_until

pytestmark = pytest.mark.integration


def now() -> datetime:
    return datetime.now(UTC)


def published(post_ids: list[int]) -> bool:
    return all(post_json(p)["status"] == "published" for p in post_ids)


def fences(post_id: int) -> list[int]:
    with db.reading() as s:
        return list(s.execute(select(Attempt.fence).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars())


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
    wait_until(lambda: post_json(post_id)["status"] == "published", timeout=30)

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
    info = post_json(post_id)
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

    wait_until(lambda: post_json(post_id)["status"] == "published", timeout=6)
    assert len(platform.posts()) == 1


def test_two_reconcilers_over_the_same_stuck_set_redrive_each_post_once(
    channels: dict[str, str], platform: Sandbox, herald: Settings
) -> None:
    long_ago = now() - timedelta(minutes=5)
    # Created five minutes ago for then (a slot in the past is refused now).
    post_ids = [
        create_post(channels=[channels["native"]], parts=[f"stuck {i}"], clock=ManualClock(long_ago)) for i in range(10)
    ]
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
    assert post_json(post_id)["status"] == "held"
    Redis.from_url(herald.redis_url).flushdb()

    assert tick().armed == 0
    assert post_queue().count == 0 and post_queue().scheduled_job_registry.count == 0

    set_emergency_stop(False)
    assert post_queue().count == 1
    drain()
    assert post_json(post_id)["status"] == "published"


def test_a_missed_slot_raises_one_alarm_through_the_hook_and_resolves_once_published(
    channels: dict[str, str], platform: Sandbox, herald: Settings, captured: Captured
) -> None:
    # Created three minutes ago for then (a slot in the past is refused now).
    post_id = create_post(
        channels=[channels["native"]], parts=["late"], clock=ManualClock(now() - timedelta(minutes=3))
    )
    Redis.from_url(herald.redis_url).flushdb()  # everything was stopped: no job ran

    first = tick()
    second = tick()
    assert (first.missed_raised, second.missed_raised) == (1, 0)
    assert [(e.kind, e.state, e.post_id) for e in captured.events] == [("missed_slot", "open", post_id)]
    assert "past its slot" in captured.events[0].detail

    drain()  # the first tick armed it
    assert post_json(post_id)["status"] == "published"
    assert tick().resolved == 1
    assert [e.state for e in captured.events] == ["open", "resolved"]


def test_a_read_back_that_finds_two_copies_raises_a_duplicate_alarm(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str, captured: Captured
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["twice?"])
    drain()
    key = post_json(post_id)["deliveries"][0]["parts"][0]["key"]
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

    create_post(channels=[channels["native"]], parts=["queued"], at=now() + timedelta(minutes=30))
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
    instants = [datetime.fromisoformat(delivery[name]) for name in ("slot", "claimed", "confirmed", "first_seen")]
    assert instants == sorted(instants)  # slot → claimed → confirmed → first seen
    gaps = [delivery[name] for name in ("slot_to_claimed", "claimed_to_confirmed", "confirmed_to_first_seen")]
    for gap, (earlier, later) in zip(gaps, itertools.pairwise(instants), strict=True):
        assert gap == pytest.approx((later - earlier).total_seconds(), abs=1.0)  # shown to the second
    assert [(a["fence"], a["outcome"]) for a in delivery["attempts"]] == [(1, "published")]


# -- the read-back sweep runs in its own loop (§7) -------------------------------------------------------


class Unanswered(SandboxReadback):
    """A read_back platform whose search does not answer until the test lets it."""

    name = "sandbox-unanswered"
    #: A search that hangs is no cheap one: the publish job does not ask it before a send
    #: (the pre-publish check), so only the sweep meets it.
    cheap_find = False
    #: Set when a search is in flight; ``answer`` lets it return.
    searching = threading.Event()
    answer = threading.Event()

    def find_all(self, ctx: PublishContext) -> list[Published]:
        type(self).searching.set()
        type(self).answer.wait(timeout=60)
        return super().find_all(ctx)


class UnansweredPlugin:
    @hookimpl
    def herald_register_adapters(self, register: RegisterAdapter) -> None:
        register(Unanswered)


@pytest.fixture
def unanswered(herald: Settings, sandbox_url: str, tmp_path: Path) -> Iterator[type[Unanswered]]:
    """A channel ``u1`` on the unanswered platform, its adapter enabled beside the sandbox's."""
    Unanswered.searching, Unanswered.answer = threading.Event(), threading.Event()
    toml = tmp_path / "plugins.toml"
    toml.write_text((ROOT / "plugins.toml").read_text() + "\n[adapters.sandbox-unanswered]\nenabled = true\n")
    plugin = UnansweredPlugin()
    plugin_manager().register(plugin)
    config.use(replace(herald, plugins_toml=str(toml)))
    add_channel("u1", Unanswered.name, {"base_url": sandbox_url, "token": "t-ok"})
    yield Unanswered
    Unanswered.answer.set()  # a sweep still waiting (the test failed) is let go
    plugin_manager().unregister(plugin)


def ticks() -> dict[str, datetime]:
    with db.reading() as s:
        return {t.name: t.at for t in s.execute(select(Tick)).scalars()}


def open_missed_slots() -> list[int]:
    with db.reading() as s:
        query = select(Alarm.post_id).where(Alarm.kind == AlarmKind.MISSED_SLOT, Alarm.open_key.is_not(None))
        return list(s.execute(query).scalars())


def test_a_read_back_sweep_stuck_on_a_platform_that_does_not_answer_does_not_delay_the_repair_pass(
    channels: dict[str, str], platform: Sandbox, herald: Settings, unanswered: type[Unanswered], captured: Captured
) -> None:
    searched = create_post(channels=["u1"], parts=["to be read back"])
    drain()  # published: the sweep will look it up, and the platform will not answer

    stop = threading.Event()
    loops = threading.Thread(target=run_forever, kwargs={"interval": 0.05, "stop": stop})
    loops.start()
    try:
        assert unanswered.searching.wait(timeout=20), "the sweep never asked the platform"
        # Only now, with the sweep stuck inside its call, does a post fall due and miss its slot.
        late = create_post(
            channels=[channels["native"]], parts=["late"], clock=ManualClock(now() - timedelta(minutes=3))
        )
        Redis.from_url(herald.redis_url).flushdb()  # its job is lost: only a repair pass can arm it again

        wait_until(lambda: post_queue().count == 1 and open_missed_slots() == [late], timeout=20)
        assert post_queue().job_ids == [f"post-{late}"]
        assert [(e.kind, e.post_id) for e in captured.events] == [("missed_slot", late)]
        assert not unanswered.answer.is_set()
        assert READBACK not in ticks()  # the first sweep is still waiting for its answer
        assert NAME in ticks()

        unanswered.answer.set()
        wait_until(lambda: READBACK in ticks())
        with db.reading() as s:
            assert s.get_one(Post, searched).deliveries[0].first_seen_at is not None
    finally:
        stop.set()
        unanswered.answer.set()
        loops.join(timeout=20)
    assert not loops.is_alive()


def test_the_sweep_counts_its_settle_window_from_its_own_previous_run_not_the_repair_pass(
    channels: dict[str, str], platform: Sandbox, herald: Settings, sandbox_url: str
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["settling"])
    drain()
    key = post_json(post_id)["deliveries"][0]["parts"][0]["key"]
    clock = ManualClock(DatabaseClock(db.engine()).now())
    assert (sweep(clock).seen, ticks()[READBACK]) == (1, clock.now())
    httpx.post(  # a second copy that the platform indexed late
        f"{sandbox_url}/api/readback/posts",
        json={"text": "settling", "key": key},
        headers={"Authorization": "Bearer t-ok"},
    ).raise_for_status()

    clock.advance(herald.readback_settle_seconds + 1)
    repair(clock)  # a repair pass long after the attempt does not move the sweep's window
    assert ticks()[NAME] == clock.now()
    # The previous sweep started inside the settle window: this one still looks...
    again = sweep(clock)
    assert (again.seen, again.duplicates) == (1, 1)
    clock.advance(1)
    # ...and the next, whose previous sweep started after the window, no longer does.
    assert sweep(clock).seen == 0

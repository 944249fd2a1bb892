"""Threads end to end (§10): reply chains, resume from the first unpublished part, and
how far a thread got – real SQL, real Redis, the sandbox platform over HTTP, real workers."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import types
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlalchemy import func, select

from core import config
from core.config import Settings
from core.domain.errors import UserError
from core.domain.states import Strategy
from core.plugins import hookspecs
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter, Limits, PublishContext, Published
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock, ManualClock
from core.runtime.queue import post_queue
from core.services.channels import add_channel
from core.services.posts import create_post
from core.store import db
from core.store.models import Post
from tests.integration.conftest import ROOT, Sandbox, Workers, drain, post_json, wait_until

pytestmark = pytest.mark.integration

STRATEGIES = ["native", "readback", "none"]


def thread(tag: str, n: int = 5) -> list[str]:
    return [f"{tag}: part {i} of {n}" for i in range(1, n + 1)]


def delivery(post_id: int) -> dict[str, Any]:
    (only,) = post_json(post_id)["deliveries"]
    shown: dict[str, Any] = only
    return shown


def part_states(post_id: int) -> list[str]:
    return [p["state"] for p in delivery(post_id)["parts"]]


def assert_reply_chain(posts: list[dict[str, Any]]) -> None:
    """The platform's own record: post 1 starts the thread, post i replies to post i-1, root is post 1."""
    first = posts[0]
    assert (first["reply_to"], first["root"]) == (None, None)
    for parent, child in itertools.pairwise(posts):
        assert child["reply_to"] == parent["id"]
        assert child["root"] == first["id"]


def redrive_when_due(post_id: int, clock: ManualClock) -> None:
    """Move the clock past the parked post's retry time, arm it (its job is queued), run it."""
    clock.advance(config.settings().backoff_max + 0.1)
    assert arm(post_id, clock) is not None
    assert post_queue().count == 1
    drain()


# -- the chain ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_five_part_thread_is_published_as_a_reply_chain(
    strategy: str, channels: dict[str, str], platform: Sandbox
) -> None:
    texts = thread(f"chain {strategy}")
    post_id = create_post(channels=[channels[strategy]], parts=texts)

    drain()

    posts = platform.posts(strategy)
    assert [p["text"] for p in posts] == texts
    assert_reply_chain(posts)
    info = post_json(post_id)
    assert info["status"] == "published"
    (shown,) = info["deliveries"]
    assert shown["progress"] == "5/5"
    assert [p["platform_id"] for p in shown["parts"]] == [p["id"] for p in posts]
    assert shown["platform_id"] == posts[0]["id"]  # the thread is known by its root


# -- resume --------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_part_refused_before_acceptance_is_retried_from_that_part_without_resending_earlier_ones(
    strategy: str, channels: dict[str, str], platform: Sandbox, slow_retries: Settings, clock: ManualClock
) -> None:
    # The platform refuses part 3 with a 503 and stores nothing: provably not sent.
    platform.faults(error_before_accept=1.0, after=2, times=1, strategies=[strategy])
    texts = thread(f"resume {strategy}")
    post_id = create_post(channels=[channels[strategy]], parts=texts)

    drain()

    parked = delivery(post_id)
    assert parked["status"] == "retry_wait"
    assert parked["progress"] == "2/5"
    assert part_states(post_id) == ["published", "published", "unsent", "unsent", "unsent"]
    assert post_json(post_id)["status"] == "publishing"
    assert [p["text"] for p in platform.posts(strategy)] == texts[:2]
    stored_part_2 = parked["parts"][1]["platform_id"]

    redrive_when_due(post_id, clock)

    posts = platform.posts(strategy)
    assert [p["text"] for p in posts] == texts  # exactly one copy of each part
    assert_reply_chain(posts)
    assert posts[2]["reply_to"] == stored_part_2
    assert delivery(post_id)["status"] == "published"
    # The second claim started at part 3 (index 2): parts 1-2 were never sent again.
    attempts = post_json(post_id)["attempts"]
    assert [a["part"] for a in attempts if a["fence"] == 1] == [0, 1, 2]
    assert [a["part"] for a in attempts if a["fence"] == 2] == [2, 3, 4]


def test_a_thread_that_runs_out_of_retries_after_two_parts_is_partially_published_not_failed(
    channels: dict[str, str], platform: Sandbox, slow_retries: Settings, clock: ManualClock
) -> None:
    # Every request after the second is refused: parts 1-2 land, part 3 never does.
    platform.faults(error_before_accept=1.0, after=2, strategies=["native"])
    post_id = create_post(channels=[channels["native"]], parts=thread("doomed"))

    drain()
    for _ in range(slow_retries.max_attempts - 1):
        assert delivery(post_id)["status"] == "retry_wait"
        redrive_when_due(post_id, clock)

    info = post_json(post_id)
    assert info["status"] == "partially_published"
    (stopped,) = info["deliveries"]
    assert stopped["status"] == "failed"
    assert stopped["reason"] == "platform_unavailable"
    assert stopped["progress"] == "2/5"
    assert len(platform.posts("native")) == 2


# -- a worker killed inside part 3's call ---------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_worker_killed_after_part_3_was_accepted_resumes_the_thread_by_the_strategy(
    strategy: str, channels: dict[str, str], platform: Sandbox, workers: Workers, herald: Settings, clock: ManualClock
) -> None:
    # The platform stores part 3, then holds its answer: the worker is inside the call.
    platform.faults(hold_after_accept=1.0, hold_seconds=30, after=2, times=1, strategies=[strategy])
    texts = thread(f"killed {strategy}")
    post_id = create_post(channels=[channels[strategy]], parts=texts)
    worker = workers.start()
    wait_until(lambda: len(platform.posts(strategy)) == 3, timeout=30)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()

    # Part 3 is 'sending': the evidence that the platform may have it.
    assert part_states(post_id) == ["published", "published", "sending", "unsent", "unsent"]
    part_3 = platform.posts(strategy)[2]

    # The dead worker's lease and its grace pass on the clock, not on the wall.
    clock.set(DatabaseClock(db.engine()).now() + timedelta(seconds=herald.lease_seconds + herald.grace_seconds + 0.2))
    assert arm(post_id, clock) is not None
    drain()

    posts = platform.posts(strategy)
    info = post_json(post_id)
    (shown,) = info["deliveries"]
    redriven = [a for a in info["attempts"] if a["fence"] == 2]
    if strategy == "none":
        # Nobody can tell whether part 3 landed: a person decides; nothing after it is sent.
        assert info["status"] == "held"
        assert shown["status"] == "held"
        assert shown["reason"] == "ambiguous_outcome"
        assert shown["progress"] == "2/5"
        assert part_states(post_id) == ["published", "published", "sending", "unsent", "unsent"]
        assert [p["text"] for p in posts] == texts[:3]
        assert [p["platform_id"] for p in shown["parts"][:2]] == [p["id"] for p in posts[:2]]
        return
    assert [p["text"] for p in posts] == texts  # no second copy of part 3
    assert_reply_chain(posts)
    assert shown["status"] == "published"
    assert shown["progress"] == "5/5"
    assert shown["parts"][2]["platform_id"] == part_3["id"]
    assert posts[3]["reply_to"] == part_3["id"]
    assert redriven[0]["part"] == 2
    if strategy == "readback":
        assert redriven[0]["outcome"] == "adopted"  # found by its key; no second call
    else:
        assert redriven[0]["outcome"] == "published"  # resent with its key; the platform deduplicated


# -- showing it ----------------------------------------------------------------------------------------


def herald_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_post_show_prints_each_parts_state_and_platform_id_and_the_threads_progress(
    channels: dict[str, str], platform: Sandbox, tmp_path: Path
) -> None:
    # Part 2 lands, then the platform answers 500: on a platform that cannot be asked, it is held.
    platform.faults(error_after_accept=1.0, after=1, times=1, strategies=["none"])
    parts_file = tmp_path / "thread.txt"
    parts_file.write_text("first of three\n---\nsecond of three\n---\nthird of three\n")
    created = herald_cmd("post", "create", "--channel", channels["none"], "--parts-file", str(parts_file))
    assert created.returncode == 0, created.stderr
    post_id = created.stdout.strip()
    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr

    shown = herald_cmd("post", "show", post_id, "--json")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    posts = platform.posts("none")
    assert [p["text"] for p in posts] == ["first of three", "second of three"]
    assert info["status"] == "held"
    (held,) = info["deliveries"]
    assert held["progress"] == "1/3"
    assert [(p["index"], p["state"], p["platform_id"]) for p in held["parts"]] == [
        (0, "published", posts[0]["id"]),
        (1, "sending", None),
        (2, "unsent", None),
    ]
    assert held["parts"][0]["url"].endswith(f"/p/{posts[0]['id']}")

    table = herald_cmd("post", "show", post_id)
    assert table.returncode == 0, table.stderr
    assert "thread 1/3 published" in table.stdout
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.stdout.splitlines()]
    parts = [row for row in cells if row and re.fullmatch(r"\d/3", row[0])]
    assert [row[:3] for row in parts] == [
        ["1/3", "published", posts[0]["id"]],
        ["2/3", "sending", ""],
        ["3/3", "unsent", ""],
    ]


# -- refused at creation -------------------------------------------------------------------------------


class FlatAdapter(Adapter):
    """A platform without threads."""

    name: ClassVar[str] = "flat-test"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NONE
    limits: ClassVar[Limits] = Limits(max_chars=500, threads=False)

    def publish(self, ctx: PublishContext) -> Published:
        raise AssertionError("a refused post is never sent")


def test_a_thread_on_a_channel_without_threads_is_refused_at_creation_with_a_clear_error(
    channels: dict[str, str], herald: Settings, tmp_path: Path
) -> None:
    module = types.ModuleType("herald_flat")

    @hookspecs.hookimpl
    def herald_register_adapters(register: hookspecs.RegisterAdapter) -> None:
        register(FlatAdapter)

    module.herald_register_adapters = herald_register_adapters  # type: ignore[attr-defined]
    toml = tmp_path / "plugins.toml"
    toml.write_text((ROOT / "plugins.toml").read_text() + "\n[adapters.flat-test]\nenabled = true\n")
    pm = plugins.plugin_manager()
    pm.register(module, name="herald_flat")
    config.use(replace(herald, plugins_toml=str(toml)))
    try:
        add_channel("flat", "flat-test", {})

        with pytest.raises(UserError, match=r"channel flat \(flat-test\) does not support threads: give one part"):
            create_post(channels=["flat"], parts=["one", "two"])
        with pytest.raises(UserError, match="does not support threads"):
            create_post(channels=[channels["native"], "flat"], parts=["one", "two"])
        with db.reading() as s:
            assert s.execute(select(func.count()).select_from(Post)).scalar_one() == 0

        assert create_post(channels=["flat"], parts=["a single part is fine"]) > 0
    finally:
        config.use(herald)
        pm.unregister(module)
        plugins._instances.cache_clear()

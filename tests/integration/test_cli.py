"""The herald command as people use it: real processes, real database, real sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.config import Settings
from tests.integration.conftest import ROOT, Sandbox

pytestmark = pytest.mark.integration


def herald_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_adapters_lists_name_strategy_and_key_ttl(herald: Settings) -> None:
    result = herald_cmd("adapters", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["sandbox-native"]["strategy"] == "native_key"
    assert rows["sandbox-native"]["key_ttl"] == 86400
    assert rows["sandbox-readback"]["strategy"] == "read_back"
    assert rows["sandbox-none"]["strategy"] == "none"


def test_channel_add_post_create_worker_and_post_show(herald: Settings, sandbox_url: str, platform: Sandbox) -> None:
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "cli1", "--set", f"base_url={sandbox_url}"
    )
    assert added.returncode == 0, added.stderr
    created = herald_cmd("post", "create", "--channel", "cli1", "--text", "from the command line", "--in", "0s")
    assert created.returncode == 0, created.stderr
    post_id = created.stdout.strip()
    assert post_id.isdigit()

    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr
    shown = herald_cmd("post", "show", post_id, "--json")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert info["status"] == "published"
    delivery = info["deliveries"][0]
    assert delivery["platform_id"] == platform.posts()[0]["id"]
    assert delivery["url"]
    assert [a["outcome"] for a in info["attempts"]] == ["published"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["post", "create", "--channel", "nope", "--text", "x"], "no channel named nope"),
        (["post", "create", "--channel", "c", "--text", "x", "--at", "tomorrow"], "not an ISO 8601 time"),
        (["post", "create", "--channel", "c", "--text", "x", "--at", "2026-12-01T09:00"], "has no offset"),
        (
            ["post", "create", "--channel", "c", "--text", "x", "--at", "2026-03-29T02:30", "--zone", "Europe/Paris"],
            "does not exist in Europe/Paris",
        ),
        (["post", "create", "--channel", "c", "--text", "x", "--in", "soon"], "is not a duration"),
        (["post", "show", "999"], "no post 999"),
        (["channel", "add", "--platform", "myspace", "--name", "m"], "no enabled adapter 'myspace'"),
        (["channel", "add", "--platform", "sandbox-none", "--name", "m", "--set", "novalue"], "write key=value"),
        (["post", "list"], "No such command 'list'"),
        (["post", "show", "one"], "Invalid value for 'post_id'"),
    ],
)
def test_bad_input_is_one_clear_line_never_a_traceback(herald: Settings, args: list[str], message: str) -> None:
    result = herald_cmd(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_thread_longer_than_the_platform_allows_is_refused_at_creation(herald: Settings, sandbox_url: str) -> None:
    herald_cmd("channel", "add", "--platform", "sandbox-none", "--name", "short", "--set", f"base_url={sandbox_url}")
    result = herald_cmd("post", "create", "--channel", "short", "--text", "x" * 501)
    assert result.returncode == 2
    assert "allows 500" in result.stderr

"""The herald command as people use it: real processes, real database, real sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from redis import Redis

from core.config import Settings
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.posts import create_post
from reconciler.tick import tick
from tests.integration.channels_made_before import add_unchecked_channel
from tests.integration.conftest import ROOT, Sandbox, drain

pytestmark = pytest.mark.integration


def herald_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        cwd=ROOT,
        # Wide enough that rich never wraps or elides a table cell a test reads.
        env={**os.environ, "COLUMNS": "400"},
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
        (["post", "publish"], "No such command 'publish'"),
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


def herald_json(*args: str) -> Any:
    result = herald_cmd(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_channel_list_never_prints_a_secret(herald: Settings, sandbox_url: str) -> None:
    secret = "sk-live-a1b2c3d4e5f6"
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "s1",
        "--set", f"base_url={sandbox_url}", "--set", f"token={secret}",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr

    table = herald_cmd("channel", "list")
    assert table.returncode == 0, table.stderr
    (row,) = herald_json("channel", "list")

    for printed in (table.stdout, json.dumps(row, ensure_ascii=False)):
        assert secret[:-4] not in printed
        assert "••••e5f6" in printed and sandbox_url in printed
    assert row == {
        "name": "s1",
        "platform": "sandbox-native",
        "account": "default",
        "connected": True,
        "settings": {"base_url": sandbox_url, "token": "••••e5f6"},
    }


def test_channel_reconnect_alone_publishes_what_the_401_and_the_disconnection_held(
    herald: Settings, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-revoked", "revoked")
    add_channel("lapsed", "sandbox-readback", {"base_url": sandbox_url, "token": "t-revoked"})
    refused = create_post(channels=["lapsed"], parts=["refused: the 401 disconnects the channel"])
    drain()
    held = create_post(channels=["lapsed"], parts=["held until the reconnect"])
    drain()
    assert [c["connected"] for c in herald_json("channel", "list")] == [False]

    reconnected = herald_cmd("channel", "reconnect", "lapsed", "--set", "token=t-renewed-token-77")
    assert reconnected.returncode == 0, reconnected.stderr
    assert "channel lapsed connected; 2 post(s) armed again" in reconnected.stdout
    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr

    assert herald_json("post", "show", str(held))["status"] == "published"
    assert herald_json("post", "show", str(refused))["status"] == "published"
    assert sorted(p["text"] for p in platform.posts("readback")) == [
        "held until the reconnect",
        "refused: the 401 disconnects the channel",
    ]
    (channel,) = herald_json("channel", "list")
    assert channel["connected"] is True and channel["settings"]["token"] == "••••n-77"


def test_channel_reconnect_json_says_what_happened(herald: Settings, sandbox_url: str) -> None:
    add_channel("fine", "sandbox-native", {"base_url": sandbox_url})
    done = herald_json("channel", "reconnect", "fine", "--set", "token=abcdefghijkl")
    assert done["armed"] == [] and done["updated_settings"] == ["token"]
    assert done["channel"]["connected"] is True and done["channel"]["settings"]["token"] == "••••jkl"


def test_post_show_prints_the_slot_in_the_posts_zone_table_and_json(herald: Settings, sandbox_url: str) -> None:
    herald_cmd("channel", "add", "--platform", "sandbox-native", "--name", "z1", "--set", f"base_url={sandbox_url}")
    created = herald_cmd(
        "post", "create", "--channel", "z1", "--part", "first", "--part", "second",
        "--at", "2031-07-01T09:30", "--zone", "Europe/Paris",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    post_id = created.stdout.strip()

    info = herald_json("post", "show", post_id)
    assert (info["status"], info["zone"], info["scheduled_at"]) == (
        "scheduled",
        "Europe/Paris",
        "2031-07-01T09:30:00+02:00",
    )
    assert [(d["channel"], d["status"], d["progress"]) for d in info["deliveries"]] == [("z1", "pending", "0/2")]
    assert [p["state"] for p in info["deliveries"][0]["parts"]] == ["unsent", "unsent"]
    shown = herald_cmd("post", "show", post_id)
    assert shown.returncode == 0, shown.stderr
    assert "2031-07-01T09:30:00+02:00" in shown.stdout and "z1: thread 0/2 published" in shown.stdout


def test_in_is_counted_from_now(herald: Settings, sandbox_url: str) -> None:
    herald_cmd("channel", "add", "--platform", "sandbox-native", "--name", "d1", "--set", f"base_url={sandbox_url}")
    before = datetime.now(UTC)
    created = herald_cmd(
        "post", "create", "--channel", "d1", "--text", "in an hour", "--in", "1h", "--zone", "Asia/Tokyo"
    )
    after = datetime.now(UTC)
    assert created.returncode == 0, created.stderr

    slot = datetime.fromisoformat(herald_json("post", "show", created.stdout.strip())["scheduled_at"])
    assert slot.utcoffset() == timedelta(hours=9)
    assert before + timedelta(hours=1) - timedelta(seconds=1) <= slot <= after + timedelta(hours=1)


def test_reschedule_without_a_slot_is_refused(herald: Settings, sandbox_url: str) -> None:
    add_channel("r9", "sandbox-native", {"base_url": sandbox_url})
    post_id = create_post(channels=["r9"], parts=["stay"], at=datetime.now(UTC) + timedelta(hours=1))
    result = herald_cmd("post", "reschedule", str(post_id))
    assert result.returncode == 2
    assert "give the new slot with --at or --in" in result.stderr


def test_timeline_alarms_and_health_print_tables_and_json(herald: Settings, sandbox_url: str) -> None:
    add_channel("w1", "sandbox-readback", {"base_url": sandbox_url})
    # Created three minutes ago for then (a slot in the past is refused now).
    three_minutes_ago = ManualClock(datetime.now(UTC) - timedelta(minutes=3))
    late = create_post(channels=["w1"], parts=["late"], zone="Asia/Tokyo", clock=three_minutes_ago)
    Redis.from_url(herald.redis_url).flushdb()  # nothing ran it
    tick()

    (alarm,) = herald_json("alarms")
    assert (alarm["kind"], alarm["state"], alarm["post_id"], alarm["channel"]) == ("missed_slot", "open", late, "w1")
    assert datetime.fromisoformat(alarm["slot"]).utcoffset() == timedelta(hours=9)
    assert set(alarm) == {
        "id", "kind", "state", "post_id", "channel", "slot", "detail", "opened_at", "resolved_at", "schedule_id",
    }  # fmt: skip
    assert alarm["schedule_id"] is None
    table = herald_cmd("alarms")
    assert table.returncode == 0 and "missed_slot" in table.stdout and "past its slot" in table.stdout

    unhealthy = herald_cmd("health")
    assert unhealthy.returncode == 1 and "1 open alarm(s)" in unhealthy.stdout
    report = herald_cmd("health", "--json")
    assert report.returncode == 1
    assert json.loads(report.stdout)["healthy"] is False

    drain()
    tick()
    line = herald_json("timeline", str(late))
    assert line["zone"] == "Asia/Tokyo" and line["status"] == "published"
    assert [a["outcome"] for a in line["deliveries"][0]["attempts"]] == ["published"]
    shown = herald_cmd("timeline", str(late))
    assert shown.returncode == 0, shown.stderr
    assert "first seen" in shown.stdout and "published" in shown.stdout
    assert herald_json("alarms") == []
    assert herald_json("alarms", "--all")[0]["state"] == "resolved"


def test_a_channel_made_before_without_its_base_url_is_held_misconfigured_and_post_show_names_the_fix(
    herald: Settings,
) -> None:
    # `channel add` refuses it now (tests/integration/test_cli_config.py); one made before is still caught.
    add_unchecked_channel("bare", "sandbox-none", {"token": "t"})
    created = herald_cmd("post", "create", "--channel", "bare", "--text", "where to?")
    assert created.returncode == 0, created.stderr
    post_id = created.stdout.strip()

    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr

    (delivery,) = herald_json("post", "show", post_id)["deliveries"]
    assert (delivery["status"], delivery["reason"], delivery["attempts"]) == ("held", "channel_misconfigured", 1)
    assert delivery["parts"][0]["state"] == "unsent"  # nothing was sent: not held as in doubt
    shown = herald_cmd("post", "show", post_id).stdout
    assert "channel_misconfigured" in shown and "--set base_url=" in shown


def test_sandbox_token_and_fault_refuse_bad_input_in_one_line(sandbox_url: str, platform: Sandbox) -> None:
    bad_state = herald_cmd("sandbox", "token", "t9", "bogus", "--url", sandbox_url)
    assert bad_state.returncode == 2
    assert bad_state.stderr.strip() == "error: 'bogus' is not a token state: use one of ok, revoked, forbidden"
    unknown = herald_cmd("sandbox", "fault", "--set", "drop_after_acept=1", "--url", sandbox_url)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert unknown.stderr.startswith("error: the sandbox refused: unknown fault field(s) ['drop_after_acept']")
    revoked = herald_cmd("sandbox", "token", "t-secret-9", "revoked", "--url", sandbox_url)
    assert revoked.returncode == 0, revoked.stderr
    assert "t-secret-9" not in revoked.stdout and "revoked" in revoked.stdout  # a token is never printed whole
    nobody = herald_cmd("sandbox", "token", "t9", "ok", "--url", "http://127.0.0.1:9")
    assert nobody.returncode == 2 and "no sandbox platform answers at http://127.0.0.1:9" in nobody.stderr

    done = herald_cmd(
        "sandbox", "fault", "--set", "rate_limit=1", "--set", "strategies=none,readback", "--url", sandbox_url
    )
    assert done.returncode == 0, done.stderr
    faults = httpx.get(f"{sandbox_url}/sandbox/faults").json()
    assert (faults["rate_limit"], faults["strategies"]) == (1.0, ["none", "readback"])

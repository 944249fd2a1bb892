"""Support (§18) as people do it: `herald post retry`, `herald post resolve`, `herald
channel reconnect`, `herald health`, `herald alarms resolve` – real processes, a worker
running, real Redis and SQL, and the sandbox's copies as the oracle."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis import Redis

from core.config import Settings
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.posts import create_post
from reconciler.tick import tick
from tests.integration.conftest import Sandbox, Workers, drain, post_json, wait_until
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def herald_json(*args: str) -> Any:
    result = herald_cmd(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def created(*args: str) -> str:
    result = herald_cmd("post", "create", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def channel_status(post_id: str, channel: str) -> tuple[str, str | None]:
    (d,) = [d for d in post_json(int(post_id))["deliveries"] if d["channel"] == channel]
    return d["status"], d["reason"]


def settled(post_id: str, *statuses: str) -> dict[str, Any] | None:
    info = post_json(int(post_id))
    return info if info["status"] in statuses else None


@pytest.fixture
def in_doubt(herald: Settings, sandbox_url: str, platform: Sandbox, workers: Workers) -> str:
    """A post on a none channel whose one attempt the platform accepted without answering,
    held for a person, with a worker running."""
    add_channel("x1", "sandbox-none", {"base_url": sandbox_url, "token": "t-ok"})
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])
    workers.start()
    post_id = created("--channel", "x1", "--text", "did it land?")
    wait_until(lambda: channel_status(post_id, "x1") == ("held", "ambiguous_outcome"), timeout=30)
    assert len(platform.posts("none")) == 1
    return post_id


def test_post_retry_sends_only_the_failed_channel_then_has_nothing_to_retry(
    herald: Settings, sandbox_url: str, platform: Sandbox, workers: Workers
) -> None:
    platform.token("t-forbidden", "forbidden")
    add_channel("n1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"})
    add_channel("x1", "sandbox-none", {"base_url": sandbox_url, "token": "t-forbidden"})
    workers.start()
    post_id = created("--channel", "n1", "--channel", "x1", "--text", "one published, one failed")
    wait_until(lambda: settled(post_id, "partially_published"), timeout=30)
    assert channel_status(post_id, "x1") == ("failed", "permission_denied")

    platform.token("t-forbidden", "ok")  # the permission is granted
    retried = herald_cmd("post", "retry", post_id, "--channel", "x1")
    assert retried.returncode == 0, retried.stderr
    assert f"post {post_id} on x1: retrying (was failed permission_denied)" in retried.stdout
    wait_until(lambda: settled(post_id, "published"), timeout=30)

    assert len(platform.posts("native")) == 1 and len(platform.posts("none")) == 1
    again = herald_cmd("post", "retry", post_id, "--json")
    assert again.returncode == 2 and again.stdout == ""
    assert f"error: post {post_id} has nothing to retry: n1 is published" in again.stderr
    assert "Traceback" not in again.stderr
    line = herald_json("timeline", post_id)
    assert [a["action"] for d in line["deliveries"] for a in d["actions"]] == ["retry"]
    assert "what a person did" in herald_cmd("timeline", post_id).stdout


def test_post_retry_of_an_attempt_in_doubt_is_refused_naming_resolve(in_doubt: str) -> None:
    result = herald_cmd("post", "retry", in_doubt, "--channel", "x1")
    assert result.returncode == 2
    assert f"herald post resolve {in_doubt} --channel x1 landed --url URL" in result.stderr


def test_post_resolve_landed_shows_it_published_at_that_url_and_sends_no_second_copy(
    in_doubt: str, platform: Sandbox
) -> None:
    (copy,) = platform.posts("none")
    url = f"{platform.url}/p/{copy['id']}"

    resolved = herald_cmd("post", "resolve", in_doubt, "landed", "--channel", "x1", "--url", url)
    assert resolved.returncode == 0, resolved.stderr
    assert f"recorded as landed at {url} (platform id {copy['id']})" in resolved.stdout

    info = herald_json("post", "show", in_doubt)
    (delivery,) = info["deliveries"]
    assert (info["status"], delivery["status"], delivery["url"], delivery["platform_id"]) == (
        "published",
        "published",
        url,
        copy["id"],
    )
    assert herald_cmd("reconcile", "--once").returncode == 0
    assert len(platform.posts("none")) == 1
    (action,) = herald_json("timeline", in_doubt)["deliveries"][0]["actions"]
    assert action["action"] == "landed" and url in action["detail"]


def test_post_resolve_send_again_makes_exactly_one_more_copy(in_doubt: str, platform: Sandbox) -> None:
    resolved = herald_json("post", "resolve", in_doubt, "send-again", "--channel", "x1")
    assert (resolved["outcome"], resolved["part"], resolved["url"]) == ("send_again", 0, None)
    assert (resolved["delivery_status"], resolved["post_status"]) == ("pending", "publishing")

    wait_until(lambda: settled(in_doubt, "published"), timeout=30)
    assert herald_cmd("reconcile", "--once").returncode == 0
    assert [p["text"] for p in platform.posts("none")] == ["did it land?", "did it land?"]
    (delivery,) = herald_json("timeline", in_doubt)["deliveries"]
    assert [a["action"] for a in delivery["attempts"]] == ["send", "resend"]
    assert "resend accepted by a person" in delivery["actions"][0]["detail"]


def test_post_resolve_is_refused_for_a_delivery_not_in_doubt_and_without_its_url(
    herald: Settings, sandbox_url: str, platform: Sandbox
) -> None:
    add_channel("n1", "sandbox-native", {"base_url": sandbox_url})
    post_id = str(create_post(channels=["n1"], parts=["published"]))
    drain()

    refused = herald_cmd("post", "resolve", post_id, "send-again", "--channel", "n1")
    assert refused.returncode == 2
    assert f"post {post_id} on n1 is published, not an attempt in doubt" in refused.stderr
    no_url = herald_cmd("post", "resolve", post_id, "landed", "--channel", "n1")
    assert no_url.returncode == 2 and "landed needs the post's address: add --url URL" in no_url.stderr
    bad = herald_cmd("post", "resolve", post_id, "maybe", "--channel", "n1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(platform.posts("native")) == 1


def test_a_401_disconnects_and_channel_reconnect_alone_gets_the_post_published_by_a_running_worker(
    herald: Settings, sandbox_url: str, platform: Sandbox, workers: Workers
) -> None:
    platform.token("t-revoked", "revoked")
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-none", "--name", "lapsed",
        "--set", f"base_url={sandbox_url}", "--set", "token=t-revoked",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    workers.start()
    post_id = created("--channel", "lapsed", "--text", "after the 401")
    wait_until(lambda: channel_status(post_id, "lapsed") == ("held", "auth_expired"), timeout=30)
    assert [c["connected"] for c in herald_json("channel", "list")] == [False]

    reconnected = herald_cmd("channel", "reconnect", "lapsed", "--set", "token=t-renewed")
    assert reconnected.returncode == 0, reconnected.stderr
    wait_until(lambda: settled(post_id, "published"), timeout=30)

    (copy,) = platform.posts("none")
    assert (copy["text"], copy["token"]) == ("after the 401", "t-renewed")
    (action,) = herald_json("timeline", post_id)["deliveries"][0]["actions"]
    assert action["action"] == "reconnect"


def test_health_shows_what_needs_a_person_and_the_stop_and_exits_3(
    herald: Settings, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-forbidden", "forbidden")
    add_channel("x1", "sandbox-none", {"base_url": sandbox_url, "token": "t-forbidden"})
    create_post(channels=["x1"], parts=["fails"])
    create_post(channels=["x1"], parts=["waits"], needs_approval=True)
    drain()
    tick()
    assert herald_cmd("stop", "--account", "default").returncode == 0

    shown = herald_cmd("health")
    assert shown.returncode == 3, shown.stdout + shown.stderr
    assert "need a person: 2 (1 held, 1 failed, 0 in doubt)" in shown.stdout
    assert "emergency stop: ON account default" in shown.stdout
    assert "healthy" not in shown.stdout.replace("unhealthy", "")
    report = herald_cmd("health", "--json")
    assert report.returncode == 3
    data = json.loads(report.stdout)
    assert (data["state"], data["healthy"], data["needs_person"], data["stopped_accounts"]) == (
        "needs_person",
        False,
        2,
        ["default"],
    )
    assert "Exit codes" in herald_cmd("health", "--help").stdout


def test_alarms_resolve_resolves_an_open_alarm_once_and_alarms_still_lists(herald: Settings, sandbox_url: str) -> None:
    add_channel("w1", "sandbox-native", {"base_url": sandbox_url})
    then = datetime.now(UTC) - timedelta(minutes=3)
    create_post(channels=["w1"], parts=["late"], clock=ManualClock(then))  # made then, for then
    Redis.from_url(herald.redis_url).flushdb()  # nothing ran it
    tick()
    (alarm,) = herald_json("alarms")

    done = herald_cmd("alarms", "resolve", str(alarm["id"]))
    assert done.returncode == 0, done.stderr
    assert f"alarm {alarm['id']} (missed_slot" in done.stdout and "resolved" in done.stdout
    assert herald_json("alarms") == []
    assert herald_json("alarms", "--all")[0]["state"] == "resolved"
    again = herald_cmd("alarms", "resolve", str(alarm["id"]))
    assert again.returncode == 2 and "was resolved already" in again.stderr
    unknown = herald_cmd("alarms", "resolve", "999")
    assert unknown.returncode == 2 and "no alarm 999" in unknown.stderr
    assert "missed_slot" not in herald_cmd("alarms").stdout

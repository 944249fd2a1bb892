"""Bad input to the herald command, as a new user types it: real processes, real SQL and
Redis, the sandbox over HTTP. Each refusal is one line that says what to do, exits 2,
prints no traceback, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from core.config import Settings
from core.store import db
from core.store.models import Channel, Post
from tests.integration.conftest import ROOT, Sandbox
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def refused(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
    """Run ``herald *args``; it must refuse with one ``error:`` line. Returns the message."""
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "400", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0].removeprefix("error: ")


def count(model: type[Post] | type[Channel]) -> int:
    with db.reading() as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def created(*args: str) -> str:
    result = herald_cmd("post", "create", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def shown(post_id: str) -> dict[str, object]:
    result = herald_cmd("post", "show", post_id, "--json")
    assert result.returncode == 0, result.stderr
    info: dict[str, object] = json.loads(result.stdout)
    return info


@pytest.fixture
def channel(herald: Settings, sandbox_url: str) -> str:
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "c1", "--set", f"base_url={sandbox_url}"
    )
    assert added.returncode == 0, added.stderr
    return "c1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something listens on, as another `herald run`'s sandbox would."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


# -- times --------------------------------------------------------------------------------


def test_a_slot_in_the_past_is_refused_naming_now_and_nothing_is_created(channel: str) -> None:
    message = refused("post", "create", "--channel", channel, "--text", "x", "--at", "2026-01-05T09:00:00+01:00")
    assert message.startswith("the slot 2026-01-05T09:00:00+01:00 is ")
    assert message.endswith(" days in the past: give a later --at or --in, or --now to publish at once")
    assert count(Post) == 0


def test_now_publishes_at_once_and_is_refused_beside_at_or_in(channel: str, platform: Sandbox) -> None:
    assert refused("post", "create", "--channel", channel, "--text", "x", "--now", "--in", "5m") == (
        "--now publishes at once: give it without --in"
    )
    assert refused("post", "create", "--channel", channel, "--text", "x", "--now", "--at", "2031-01-01T09:00Z") == (
        "--now publishes at once: give it without --at"
    )
    assert count(Post) == 0

    before = datetime.now(UTC)
    post_id = created("--channel", channel, "--text", "right now", "--now")
    slot = datetime.fromisoformat(str(shown(post_id)["scheduled_at"]))
    assert before - timedelta(seconds=1) <= slot <= datetime.now(UTC)
    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr
    assert shown(post_id)["status"] == "published"
    assert [p["text"] for p in platform.posts()] == ["right now"]


def test_a_move_into_the_past_is_refused_and_a_move_to_now_is_taken(channel: str) -> None:
    post_id = created("--channel", channel, "--text", "later", "--at", "2031-07-01T09:30:00+02:00")
    message = refused("post", "reschedule", post_id, "--at", "2026-07-01T09:30:00+02:00")
    assert message.endswith("in the past: give a later --at or --in, or --now to publish at once")
    assert shown(post_id)["scheduled_at"] == "2031-07-01T09:30:00+02:00"
    assert refused("post", "reschedule", post_id) == "give the new slot with --at or --in, or --now to publish at once"

    moved = herald_cmd("post", "reschedule", post_id, "--now")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.strip() == f"post {post_id} moved to now"
    slot = datetime.fromisoformat(str(shown(post_id)["scheduled_at"]))
    assert datetime.now(UTC) - timedelta(seconds=30) <= slot <= datetime.now(UTC)


@pytest.mark.parametrize(
    ("when", "message"),
    [
        (
            ["--in", "99999999d"],
            "'now + 99999999d' is out of range: herald takes instants from 0001-01-02 to 9999-12-30 (UTC)",
        ),
        (
            ["--in", "99999999999999d"],
            "'99999999999999d' is too long a duration: give one that ends before the year 9999",
        ),
        (["--at", "99999-01-01"], "year 99999 is out of range: herald takes years 1 to 9999"),
        (
            ["--at", "0000-01-01T00:00Z"],
            "'0000-01-01T00:00Z' is not an ISO 8601 time (year 0 is out of range): write e.g. "
            "2026-12-01T09:00:00+01:00, or a local time with --zone Europe/Paris",
        ),
        (
            ["--at", "9999-12-31T23:59-01:00"],
            "'9999-12-31T23:59-01:00' is out of range: herald takes instants from 0001-01-02 to 9999-12-30 (UTC)",
        ),
        (
            ["--at", "9999-12-31T20:00", "--zone", "America/New_York"],
            "'9999-12-31T20:00' is out of range: herald takes instants from 0001-01-02 to 9999-12-30 (UTC)",
        ),
    ],
)
def test_an_instant_or_a_duration_out_of_range_is_one_clear_line(channel: str, when: list[str], message: str) -> None:
    assert refused("post", "create", "--channel", channel, "--text", "x", *when) == message
    assert count(Post) == 0


def test_fold_picks_the_first_or_second_occurrence_of_a_repeated_local_time(channel: str) -> None:
    # Berlin falls back on 2030-10-27 from 03:00 CEST to 02:00 CET: 02:30 happens twice.
    at = ["--at", "2030-10-27T02:30", "--zone", "Europe/Berlin"]
    message = refused("post", "create", "--channel", channel, "--text", "x", *at)
    assert message == (
        "2030-10-27T02:30 happens twice in Europe/Berlin (the clocks fall back): "
        "say which with --fold 0 (00:30 UTC) or --fold 1 (01:30 UTC)"
    )
    first = shown(created("--channel", channel, "--text", "first", *at, "--fold", "0"))
    second = shown(created("--channel", channel, "--text", "second", *at, "--fold", "1"))
    assert (first["scheduled_at"], second["scheduled_at"]) == ("2030-10-27T02:30:00+02:00", "2030-10-27T02:30:00+01:00")
    instants = [datetime.fromisoformat(str(p["scheduled_at"])).astimezone(UTC) for p in (first, second)]
    assert instants == [datetime(2030, 10, 27, 0, 30, tzinfo=UTC), datetime(2030, 10, 27, 1, 30, tzinfo=UTC)]


def test_a_local_time_that_does_not_exist_is_refused_with_the_fix(channel: str) -> None:
    for fold in ([], ["--fold", "1"]):
        message = refused(
            "post", "create", "--channel", channel, "--text", "x",
            "--at", "2030-03-31T02:30", "--zone", "Europe/Berlin", *fold,
        )  # fmt: skip
        assert message == (
            "2030-03-31T02:30 does not exist in Europe/Berlin: the clocks skip over it (spring forward). "
            "Pick a time outside the gap, e.g. 2030-03-31T03:30."
        )
    assert count(Post) == 0


def test_fold_on_a_time_that_happens_once_is_refused_not_ignored(channel: str) -> None:
    message = refused(
        "post", "create", "--channel", channel, "--text", "x",
        "--at", "2030-10-26T02:30", "--zone", "Europe/Berlin", "--fold", "1",
    )  # fmt: skip
    assert message == (
        "--fold picks one of the two occurrences of a local time that happens twice (when the clocks fall back), "
        "but 2030-10-26T02:30 happens once in Europe/Berlin: drop --fold"
    )
    assert count(Post) == 0


# -- parts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            ["--text", "a", "--part", "b"],
            "--text and --part together: use --part for each part of a thread, or --text for a one-part post",
        ),
        (["--part", "1/2", "--part", " "], "part 2 of 2 is empty: give it text, or leave it out"),
        (["--part", ""], "part 1 of 1 is empty: give it text, or leave it out"),
        (["--text", ""], "--text is empty: give the post's text"),
        (["--text", "   "], "--text is empty: give the post's text"),
        ([], "the post has no text: give --text, or --part for each part of a thread"),
    ],
)
def test_mixed_or_empty_parts_are_refused_and_nothing_is_created(channel: str, given: list[str], message: str) -> None:
    assert refused("post", "create", "--channel", channel, *given) == message
    assert count(Post) == 0


# -- cancel and approve --------------------------------------------------------------------


def test_cancel_and_approve_that_would_change_nothing_are_refused_saying_why(channel: str) -> None:
    post_id = created("--channel", channel, "--text", "out", "--now")
    assert herald_cmd("worker", "--burst", "--no-scheduler").returncode == 0
    assert refused("post", "cancel", post_id) == (
        f"post {post_id} is already published on every channel: there is nothing left to cancel "
        "(herald does not delete published posts; remove it on the platform)"
    )
    assert refused("post", "approve", post_id) == (
        f"post {post_id} needs no approval (it was created without --needs-approval): "
        f"nothing to approve; it goes out at its slot (`herald post show {post_id}`)"
    )

    later = created("--channel", channel, "--text", "later", "--in", "1h", "--needs-approval")
    approved = herald_cmd("post", "approve", later)
    assert approved.returncode == 0 and approved.stdout.strip() == f"post {later} approved"
    assert refused("post", "approve", later) == (
        f"post {later} is already approved: nothing to do (`herald post show {later}`)"
    )
    cancelled = herald_cmd("post", "cancel", later)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"post {later} cancelled on 1 channel(s) (c1); now cancelled"
    assert refused("post", "cancel", later) == f"post {later} is already cancelled: there is nothing left to cancel"


def test_cancel_on_a_partly_published_post_cancels_the_rest_and_says_so(
    channel: str, sandbox_url: str, platform: Sandbox
) -> None:
    platform.token("t-revoked", "revoked")
    lapsed = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "lapsed",
        "--set", f"base_url={sandbox_url}", "--set", "token=t-revoked",
    )  # fmt: skip
    assert lapsed.returncode == 0, lapsed.stderr
    post_id = created("--channel", channel, "--channel", "lapsed", "--text", "half", "--now")
    assert herald_cmd("worker", "--burst", "--no-scheduler").returncode == 0

    result = herald_cmd("post", "cancel", post_id)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"post {post_id} cancelled on 1 channel(s) (lapsed); 1 channel(s) had published and keep it (c1); "
        "now partially_published"
    )
    view = json.loads(herald_cmd("post", "show", post_id, "--json").stdout)
    assert {d["channel"]: d["status"] for d in view["deliveries"]} == {"c1": "published", "lapsed": "cancelled"}
    assert [p["text"] for p in platform.posts()] == ["half"]


# -- reconcile ------------------------------------------------------------------------------


@pytest.mark.parametrize("interval", ["-5", "0", "0.001", "nan", "1e308"])
def test_reconcile_refuses_an_interval_that_would_busy_loop_or_never_tick(herald: Settings, interval: str) -> None:
    started = time.monotonic()
    message = refused("reconcile", "--interval", interval, timeout=30)
    assert message == f"--interval={float(interval):g}: give a number of seconds from 0.05 to 3600 (e.g. 60)."
    assert time.monotonic() - started < 30  # refused at once, not after looping


def test_reconcile_refuses_a_tick_from_the_environment_that_would_busy_loop(herald: Settings) -> None:
    message = refused("reconcile", env={"HERALD_TICK_SECONDS": "0.0001"}, timeout=30)
    assert message == "HERALD_TICK_SECONDS=0.0001: give a number of seconds from 0.05 to 3600 (e.g. 60)."


# -- sandbox serve and herald run -------------------------------------------------------------


@pytest.mark.parametrize("port", ["70000", "-1", "65536"])
def test_sandbox_serve_on_a_port_out_of_range_is_one_line(herald: Settings, port: str) -> None:
    assert refused("sandbox", "serve", "--port", port, timeout=30) == (
        f"port {port} is out of range: give --port from 1 to 65535 (0 picks a free one)"
    )


def test_sandbox_serve_on_a_port_in_use_names_it_and_the_fix(herald: Settings, taken_port: int) -> None:
    assert refused("sandbox", "serve", "--port", str(taken_port), timeout=30) == (
        f"port {taken_port} is in use on 127.0.0.1 (another sandbox or `herald run` may be serving it): "
        "stop that one, or give another with --port"
    )


def test_a_second_herald_run_refuses_at_once_when_the_sandbox_port_is_taken(herald: Settings, taken_port: int) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", "run", "--sandbox-port", str(taken_port)],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""  # no "herald is running", no demo posts announced
    assert result.stderr.strip() == (
        f"error: port {taken_port} is in use on 127.0.0.1 (another sandbox or `herald run` may be serving it): "
        "stop that one, or give another with --sandbox-port"
    )
    assert time.monotonic() - started < 20
    assert count(Channel) == 0 and count(Post) == 0  # no demo seeded against the other sandbox
    assert not (herald.home_path / "sandbox.log").exists()  # nothing was started


def test_herald_run_refuses_at_once_when_the_api_port_is_taken(herald: Settings, taken_port: int) -> None:
    assert refused("run", "--sandbox-port", str(free_port()), "--api-port", str(taken_port), timeout=30) == (
        f"port {taken_port} is in use on 127.0.0.1 (another sandbox or `herald run` may be serving it): "
        "stop that one, or give another with --api-port"
    )
    assert not (herald.home_path / "sandbox.log").exists()  # nothing was started


@pytest.mark.parametrize("port", ["0", "70000"])
def test_herald_run_on_a_sandbox_port_out_of_range_is_one_line(herald: Settings, port: str) -> None:
    assert refused("run", "--sandbox-port", port, timeout=30) == (
        f"port {port} is out of range: give --sandbox-port from 1 to 65535"
    )


def test_sandbox_serve_takes_a_state_file_or_none_not_both(herald: Settings, tmp_path: object) -> None:
    assert refused("sandbox", "serve", "--port", str(free_port()), "--state", "x.jsonl", "--no-state") == (
        "give --state FILE or --no-state, not both"
    )


def test_a_long_refusal_stays_one_line_in_a_narrow_or_piped_terminal(herald: Settings, taken_port: int) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", "sandbox", "serve", "--port", str(taken_port)],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "40"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"port {taken_port} is in use" in result.stderr

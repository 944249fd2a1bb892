"""The sandbox platform as `herald sandbox serve` runs it, in a real process: a restart
keeps its posts, so the URLs herald stored still show the posts they named, and a new
post gets a new id."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.config import Settings
from tests.integration.conftest import ROOT, wait_until
from tests.integration.test_cli import herald_cmd, herald_json

pytestmark = pytest.mark.integration


class SandboxProcess:
    """`herald sandbox serve` on one port, started and stopped like a person would."""

    def __init__(self, port: int, log: Path, *extra: str) -> None:
        self.port, self.log, self.extra = port, log, extra
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "core.cli", "sandbox", "serve", "--port", str(self.port), *self.extra],
                cwd=ROOT,
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(self._answers, timeout=20)

    def _answers(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.log.read_text()
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(f"{self.url}/sandbox/health", timeout=1).json()["pid"] == self.proc.pid
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc = None

    def posts(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.url}/sandbox/posts", timeout=5).json()["posts"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def served(herald: Settings) -> Iterator[SandboxProcess]:
    herald.home_path.mkdir(parents=True, exist_ok=True)
    sandbox = SandboxProcess(free_port(), herald.home_path / "sandbox-serve.log")
    sandbox.start()
    yield sandbox
    sandbox.stop()


def publish(channel: str, text: str) -> dict[str, Any]:
    created = herald_cmd("post", "create", "--channel", channel, "--text", text, "--now")
    assert created.returncode == 0, created.stderr
    worked = herald_cmd("worker", "--burst", "--no-scheduler")
    assert worked.returncode == 0, worked.stderr
    (delivery,) = herald_json("post", "show", created.stdout.strip())["deliveries"]
    assert delivery["status"] == "published"
    return dict(delivery)


def test_a_restarted_sandbox_still_shows_the_posts_herald_linked_and_gives_new_ids(
    herald: Settings, served: SandboxProcess
) -> None:
    added = herald_cmd(
        "channel", "add", "--platform", "sandbox-native", "--name", "kept", "--set", f"base_url={served.url}"
    )
    assert added.returncode == 0, added.stderr
    first = publish("kept", "before the restart")

    served.stop()
    served.start()

    page = httpx.get(first["url"], timeout=5)  # the URL herald stored
    assert page.status_code == 200 and "before the restart" in page.text
    assert [(p["id"], p["text"]) for p in served.posts()] == [(first["platform_id"], "before the restart")]
    assert (herald.home_path / "sandbox" / "posts.jsonl").is_file()  # under herald's home by default

    second = publish("kept", "after the restart")
    assert second["platform_id"] != first["platform_id"] and second["url"] != first["url"]
    assert [p["text"] for p in served.posts()] == ["before the restart", "after the restart"]
    assert "after the restart" in httpx.get(second["url"], timeout=5).text
    assert "before the restart" in httpx.get(first["url"], timeout=5).text


def test_a_sandbox_with_no_state_forgets_its_posts_when_it_stops(herald: Settings) -> None:
    herald.home_path.mkdir(parents=True, exist_ok=True)
    sandbox = SandboxProcess(free_port(), herald.home_path / "memory.log", "--no-state")
    sandbox.start()
    try:
        answer = httpx.post(
            f"{sandbox.url}/api/none/posts", json={"text": "fleeting"}, headers={"Authorization": "Bearer t"}, timeout=5
        )
        assert answer.status_code == 201
        sandbox.stop()
        sandbox.start()
        assert sandbox.posts() == []
        assert not (herald.home_path / "sandbox").exists()
    finally:
        sandbox.stop()


def test_a_second_sandbox_on_the_same_state_file_is_refused_naming_it(herald: Settings, served: SandboxProcess) -> None:
    result = herald_cmd("sandbox", "serve", "--port", str(free_port()))
    assert result.returncode == 2
    state = herald.home_path / "sandbox" / "posts.jsonl"
    assert result.stderr.strip() == (
        f"error: another sandbox keeps its posts in {state}: stop it, or give this one --state FILE or --no-state"
    )
    assert "Traceback" not in result.stderr

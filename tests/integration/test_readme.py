"""The README's "Using it" is a script: run it, block after block, against `herald run`.

As a newcomer would: `herald run` on the embedded default (its own SQLite file and
embedded Redis-compatible server, in a temporary home), the demo posts out first, then
every ``sh`` block of the section pasted in order into one shell. Ids come from the
commands' own output (the blocks keep them in variables); the only change made to the
text is the sandbox's port, so the test never collides with a `make run` on 8025.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from core.domain.posting_slots import PostingSchedule, parse_slots
from tests.integration.conftest import ROOT

pytestmark = [
    pytest.mark.integration,
    # The quick start is the embedded default whatever the suite runs on (the HERALD_
    # variables are cleared for it): on PostgreSQL's pass it would run the same thing again.
    pytest.mark.skipif(
        bool(os.environ.get("HERALD_DATABASE_URL")),
        reason="the README's quick start runs on the embedded default, in the embedded default's pass",
    ),
]

README = ROOT / "README.md"


def using_it_blocks() -> list[str]:
    """The ``sh`` blocks of the README's "Using it" section, in order."""
    text = README.read_text()
    section = text[text.index("## Using it\n") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Running:
    def __init__(self, env: dict[str, str], sandbox: str, demo: list[int], output: Callable[[], str]) -> None:
        self.env, self.sandbox, self.demo, self.output = env, sandbox, demo, output

    def herald(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "core.cli", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def post(self, post_id: int | str) -> dict[str, Any]:
        shown = self.herald("post", "show", str(post_id), "--json")
        assert shown.returncode == 0, shown.stderr
        data: dict[str, Any] = json.loads(shown.stdout)
        return data

    def sandbox_posts(self) -> list[dict[str, Any]]:
        posts: list[dict[str, Any]] = httpx.get(f"{self.sandbox}/sandbox/posts", timeout=10).json()["posts"]
        return posts

    def sandbox_texts(self) -> list[str]:
        return [p["text"] for p in self.sandbox_posts()]


def _wait(predicate: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.3)


# One `herald run` for the module (each costs a start and a demo): the demo's test comes
# first, before the README's script adds its own posts.
@pytest.fixture(scope="module")
def herald_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp_path = tmp_path_factory.mktemp("readme")
    if not (ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("the README's script activates .venv, which `make test` creates")
    port, api_port = _free_port(), _free_port()
    sandbox = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env.update(
        HERALD_DATABASE_URL=f"sqlite:///{tmp_path / 'herald.db'}",
        HERALD_HOME=str(tmp_path / "home"),
        HERALD_SANDBOX_URL=sandbox,
        COLUMNS="200",
        BROWSER="true",  # herald run opens the feed; here nothing is shown
    )
    log = (tmp_path / "run.log").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "run", "--sandbox-port", str(port), "--api-port", str(api_port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def output() -> str:
            log.seek(0)
            return log.read()

        def demo_ids() -> list[int] | None:
            found = re.search(r"demo posts ([\d, ]+) go out", output())
            if proc.poll() is not None:
                pytest.fail(f"herald run stopped: {output()}")
            return [int(i) for i in found.group(1).split(",")] if found else None

        demo = _wait(demo_ids)
        assert demo, "herald run did not seed its demo"
        running = Running(env, sandbox, demo, output)
        # A newcomer reads the feed first: the demo posts are out before the script runs.
        assert _wait(lambda: all(running.post(i)["status"] == "published" for i in demo))
        yield running
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_the_demo_goes_out_once_on_every_channel_the_real_adapters_included(herald_run: Running) -> None:
    _the_dashboard_link_logs_in_once_and_no_key_is_printed(herald_run)
    posts = herald_run.sandbox_posts()
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for post in posts:
        by_strategy.setdefault(post["strategy"], []).append(post)
    # The hello post on all five; the thread (3 parts) and the image post on the three rich ones.
    assert {s: len(found) for s, found in by_strategy.items()} == {
        "native": 5,
        "readback": 1,
        "none": 1,
        "mastodon": 5,
        "bluesky": 5,
    }
    for strategy in ("mastodon", "bluesky"):
        found = by_strategy[strategy]
        thread = [p for p in found if p["text"].startswith(("A thread", "part "))]
        assert [p["reply_to"] for p in thread[1:]] == [p["id"] for p in thread[:-1]], strategy
        (pictured,) = [p for p in found if p["media"]]
        assert pictured["media"][0]["alt"].startswith("The word herald"), strategy


def _the_dashboard_link_logs_in_once_and_no_key_is_printed(herald_run: Running) -> None:
    found = _wait(lambda: re.search(r"^dashboard: (http://\S+)/login/(\S+) ", herald_run.output(), flags=re.M))
    assert found, herald_run.output()
    base, token = found.group(1), found.group(2)
    assert httpx.get(f"{base}/openapi.json", timeout=10).json()["info"]["title"] == "herald"
    # Only a login link is ever printed, never an API key (hk_…).
    assert "hk_" not in herald_run.output()
    opened = httpx.get(f"{base}/login/{token}", timeout=10, follow_redirects=False)
    assert (opened.status_code, opened.headers.get("location")) == (303, "/"), opened
    assert "herald_session" in opened.cookies
    again = httpx.get(f"{base}/login/{token}", timeout=10, follow_redirects=False)
    assert again.status_code == 401 and "used or expired" in again.text  # once only


# herald run, its demo, then every block with the sleeps it says: longer than one test's default.
@pytest.mark.timeout(360)
def test_the_readme_using_it_script_runs_in_order_and_does_what_it_says(herald_run: Running) -> None:
    blocks = using_it_blocks()
    assert len(blocks) >= 4
    port = herald_run.sandbox.rsplit(":", 1)[1]
    script = "\n".join(blocks).replace("127.0.0.1:8025", f"127.0.0.1:{port}")
    names = sorted(set(re.findall(r"^([A-Z]+)=\$\(", script, flags=re.M)))
    trailer = "\n".join(f'echo "VAR {name}=${name}"' for name in names)
    done = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}\n{trailer}\n"],
        cwd=ROOT,
        env=herald_run.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr
    ids = dict(re.findall(r"^VAR ([A-Z]+)=(\d+)$", done.stdout, flags=re.M))
    assert set(ids) == set(names), done.stdout

    hello = herald_run.post(ids["HELLO"])
    assert (hello["revision"], hello["texts"]) == (2, ["Hello, world"])
    launch = herald_run.post(ids["LAUNCH"])
    assert (launch["scheduled_at"], launch["zone"]) == ("2030-12-02T09:30:00+01:00", "Europe/Paris")
    assert herald_run.post(ids["THREAD"])["texts"] == ["A thread, 1/3", "2/3", "3/3"]
    # Queued: two successive weekday slots, shown in the slots' zone.
    queued = [herald_run.post(ids[name]) for name in ("QUEUED", "NEXT")]
    slots = [datetime.fromisoformat(q["scheduled_at"]) for q in queued]
    assert [q["zone"] for q in queued] == ["Europe/Berlin"] * 2 and slots[0] < slots[1]
    assert all(slot.weekday() < 5 and slot.strftime("%H:%M") in ("09:00", "13:00") for slot in slots), slots
    weekdays = PostingSchedule("Europe/Berlin", frozenset(parse_slots("mon-fri 09:00,13:00")))
    assert next(weekdays.instants(slots[0])) == slots[1]  # the one right after
    assert herald_run.post(ids["SHORT"])["status"] == "cancelled"
    assert herald_run.post(ids["DRAFT"])["status"] == "scheduled"
    assert herald_run.post(ids["REVIEW"])["approval"] == "approved"
    # Reconnecting alone sent what the revoked token held.
    refused = herald_run.post(ids["REFUSED"])
    assert refused["status"] == "published", refused
    # The answer lost on the `none` platform: held for a person, then sent once more on
    # their word – two copies, as they accepted.
    doubt = herald_run.post(ids["DOUBT"])
    assert doubt["status"] == "published", doubt
    texts = herald_run.sandbox_texts()
    assert texts.count("Did it land?") == 2
    assert texts.count("Behind a revoked token") == 1
    assert texts.count("Now") == 1
    # Said in the blocks' own comments: the held post showed its reason and its fix.
    assert "auth_expired" in done.stdout and "ambiguous_outcome" in done.stdout
    # The picture went out with its kept alt text; the thread waits with its three.
    photo = herald_run.post(ids["PHOTO"])
    assert photo["status"] == "published", photo
    assert [(a["filename"], a["alt"]) for a in photo["media"][0]] == [("herald-teal.png", "A teal rectangle")]
    pictures = herald_run.post(ids["PICTURES"])
    assert [[a["alt"] for a in part] for part in pictures["media"]] == [
        ["Teal"],
        ["An orange rectangle", "Teal again"],
    ]
    assert "is not an image or a video" in done.stderr

"""`herald post edit`, `post schedule`, and `post create --draft/--channel-text/--idempotency-key`
as people use them: real processes, real database and Redis, the sandbox as the platform."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy import func, select

from core.config import Settings
from core.domain.keys import delivery_key
from core.runtime.arming import job_id
from core.runtime.queue import post_queue
from core.services.channels import add_channel
from core.store import db
from core.store.models import Channel, Post
from tests.integration.conftest import ROOT, Sandbox
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_channels(herald: Settings, sandbox_url: str) -> None:
    for name, platform in (("n1", "sandbox-native"), ("r1", "sandbox-readback"), ("x1", "sandbox-none")):
        add_channel(name, platform, {"base_url": sandbox_url, "token": "t-ok"})


def ok(*args: str) -> str:
    result = herald_cmd(*args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def refused(*args: str) -> str:
    result = herald_cmd(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return result.stderr


def work() -> None:
    ok("worker", "--burst", "--no-scheduler")


def show(post_id: str) -> dict[str, Any]:
    return json.loads(ok("post", "show", post_id, "--json"))


def key_of(post_id: str, channel: str, revision: int, part: int = 0) -> str:
    with db.reading() as s:
        slot = s.get_one(Post, int(post_id)).scheduled_at
        channel_id = s.execute(select(Channel.id).where(Channel.name == channel)).scalar_one()
    return delivery_key(int(post_id), channel_id, slot, revision, part)


def test_post_edit_before_publishing_sends_the_edited_text_once_under_the_new_revisions_key(
    cli_channels: None, platform: Sandbox
) -> None:
    post_id = ok("post", "create", "--channel", "n1", "--text", "first words", "--in", "1h").strip()

    edited = ok("post", "edit", post_id, "--text", "better words", "--in", "0s")
    assert f"post {post_id} edited (revision 2" in edited
    work()

    (copy,) = platform.posts()
    assert copy["text"] == "better words"
    assert copy["idempotency_key"] == key_of(post_id, "n1", 2) != key_of(post_id, "n1", 1)
    assert show(post_id)["status"] == "published"


def test_post_edit_of_a_published_post_asks_for_a_choice_then_corrects_or_republishes(
    cli_channels: None, platform: Sandbox
) -> None:
    post_id = ok("post", "create", "--channel", "n1", "--text", "as published").strip()
    work()
    assert show(post_id)["status"] == "published"

    message = refused("post", "edit", post_id, "--text", "fixed")
    assert "--correct" in message and "--republish" in message
    assert "not both" in refused("post", "edit", post_id, "--text", "fixed", "--correct", "--republish")

    corrected = ok("post", "edit", post_id, "--text", "fixed", "--correct")
    assert "n1: the platform copy was not edited: sandbox-native cannot edit" in corrected
    work()
    assert [p["text"] for p in platform.posts()] == ["as published"]
    assert show(post_id)["revision"] == 2

    again = json.loads(ok("post", "edit", post_id, "--text", "second edition", "--republish", "--json"))
    assert again["republished_from"] == int(post_id) and again["post_id"] != int(post_id)
    assert again["mode"] == "republish"
    work()
    assert [p["text"] for p in platform.posts()] == ["as published", "second edition"]
    assert show(str(again["post_id"]))["status"] == "published"


def test_post_edit_is_refused_while_an_attempt_is_in_doubt(cli_channels: None, platform: Sandbox) -> None:
    platform.faults(drop_after_accept=1.0, times=1, strategies=["none"])
    post_id = ok("post", "create", "--channel", "x1", "--text", "maybe landed").strip()
    work()
    (delivery,) = show(post_id)["deliveries"]
    assert (delivery["status"], delivery["reason"]) == ("held", "ambiguous_outcome")

    message = refused("post", "edit", post_id, "--text", "changed")
    assert "attempt in doubt on x1" in message and f"herald post resolve {post_id} --channel x1" in message


def test_channel_text_at_create_reaches_that_channel_only(cli_channels: None, platform: Sandbox) -> None:
    post_id = ok(
        "post", "create", "--channel", "n1", "--channel", "x1", "--channel", "r1",
        "--part", "thread 1/2", "--part", "thread 2/2",
        "--channel-text", "x1=the one-part version",
        "--channel-text", "r1=r1's own 1/2", "--channel-text", "r1=r1's own 2/2",
    ).strip()  # fmt: skip
    work()

    assert show(post_id)["status"] == "published"
    assert [p["text"] for p in platform.posts("native")] == ["thread 1/2", "thread 2/2"]
    assert [p["text"] for p in platform.posts("none")] == ["the one-part version"]
    assert [p["text"] for p in platform.posts("readback")] == ["r1's own 1/2", "r1's own 2/2"]

    message = refused("post", "create", "--channel", "n1", "--text", "x", "--channel-text", "r1=y")
    assert "--channel-text names r1, which the post does not go to" in message
    assert "write NAME=TEXT" in refused("post", "create", "--channel", "n1", "--text", "x", "--channel-text", "r1")


def test_channel_text_in_an_edit(cli_channels: None, platform: Sandbox) -> None:
    post_id = ok("post", "create", "--channel", "n1", "--channel", "x1", "--text", "shared", "--in", "1h").strip()
    ok("post", "edit", post_id, "--channel-text", "x1=x1's own", "--in", "0s")
    work()
    assert [p["text"] for p in platform.posts("native")] == ["shared"]
    assert [p["text"] for p in platform.posts("none")] == ["x1's own"]


def test_a_draft_has_no_job_until_post_schedule_publishes_it(cli_channels: None, platform: Sandbox) -> None:
    post_id = ok("post", "create", "--channel", "n1", "--text", "not yet", "--draft").strip()
    queue = post_queue()
    assert show(post_id)["status"] == "draft"
    assert queue.connection.exists(f"rq:job:{job_id(int(post_id))}") == 0
    assert queue.count == 0 and queue.scheduled_job_registry.count == 0
    ok("reconcile", "--once")
    work()
    assert platform.posts() == [] and queue.connection.exists(f"rq:job:{job_id(int(post_id))}") == 0

    scheduled = ok("post", "schedule", post_id)
    assert f"post {post_id} scheduled for" in scheduled
    work()
    assert [p["text"] for p in platform.posts()] == ["not yet"]
    assert "not a draft" in refused("post", "schedule", post_id)


def test_post_create_with_an_idempotency_key(cli_channels: None) -> None:
    # No slot ("now") on purpose: --in is counted from each command's own now.
    args = ("post", "create", "--channel", "n1", "--text", "once")
    first = herald_cmd(*args, "--idempotency-key", "k-1")
    assert first.returncode == 0, first.stderr
    post_id = first.stdout.strip()

    again = herald_cmd(*args, "--idempotency-key", "k-1")
    assert (again.returncode, again.stdout.strip()) == (0, post_id)
    assert f"post {post_id} already existed" in again.stderr

    message = refused("post", "create", "--channel", "n1", "--text", "other", "--idempotency-key", "k-1")
    assert f"idempotency key 'k-1' was used for post {post_id} with other content (parts differ)" in message

    # Two processes at once with a new key: one post.
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "core.cli", *args, "--idempotency-key", "k-race"],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    answers = [racer.communicate(timeout=60) for racer in racers]
    assert [r.returncode for r in racers] == [0, 0], answers
    ids = {out.strip() for out, _ in answers}
    assert len(ids) == 1 and post_id not in ids
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Post)).scalar_one() == 2

"""`post show` shows what a post says: every part's text, a channel's own text where it
differs, and when a waiting delivery tries next – through the service and the command."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from core.config import Settings
from core.domain.states import DeliveryStatus, Reason
from core.services.posts import create_post, show_post
from tests.integration.conftest import Sandbox, drain
from tests.integration.test_cli import herald_cmd

pytestmark = pytest.mark.integration


def test_show_gives_every_parts_text_and_a_channels_text_only_where_it_differs(channels: dict[str, str]) -> None:
    n1, r1 = channels["native"], channels["readback"]
    post_id = create_post(
        channels=[n1, r1],
        parts=["the first part", "the second part"],
        channel_texts={r1: ["the first part, shorter for r1", "the second part"]},
    )

    post = show_post(post_id)

    assert post.texts == ("the first part", "the second part")
    by_channel = {d.channel: d for d in post.deliveries}
    assert [p.text for p in by_channel[n1].parts] == [None, None]
    assert [p.text for p in by_channel[r1].parts] == ["the first part, shorter for r1", None]


def test_a_waiting_delivery_shows_when_it_tries_next_in_the_posts_zone(
    channels: dict[str, str], platform: Sandbox
) -> None:
    platform.faults(rate_limit=1.0, retry_after=600, times=1, strategies=["native"])
    post_id = create_post(channels=[channels["native"], channels["readback"]], parts=["busy"], zone="Asia/Tokyo")
    drain()

    by_channel = {d.channel: d for d in show_post(post_id).deliveries}

    waiting = by_channel[channels["native"]]
    assert (waiting.status, waiting.reason) == (DeliveryStatus.RETRY_WAIT, Reason.RATE_LIMITED)
    assert waiting.next_attempt_at is not None and waiting.next_attempt_at.utcoffset() == timedelta(hours=9)
    assert by_channel[channels["readback"]].next_attempt_at is None  # published: nothing to wait for


def test_post_show_prints_the_texts_a_channels_own_text_and_the_next_attempt(
    herald: Settings, sandbox_url: str, platform: Sandbox
) -> None:
    for name, platform_name in (("s1", "sandbox-native"), ("s2", "sandbox-readback")):
        added = herald_cmd(
            "channel", "add", "--platform", platform_name, "--name", name, "--set", f"base_url={sandbox_url}"
        )
        assert added.returncode == 0, added.stderr
    created = herald_cmd(
        "post", "create", "--channel", "s1", "--channel", "s2", "--part", "hello [world]", "--part", "and more",
        "--channel-text", "s2=hello [world]", "--channel-text", "s2=and more, for s2", "--in", "0s",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    post_id = created.stdout.strip()
    platform.faults(rate_limit=1.0, retry_after=600, times=1, strategies=["native"])
    assert herald_cmd("worker", "--burst", "--no-scheduler").returncode == 0

    shown = herald_cmd("post", "show", post_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "part 1/2: hello [world]" in lines and "part 2/2: and more" in lines
    assert "s2: part 2 reads: and more, for s2" in lines
    assert not [line for line in lines if line.startswith("s1: part")]
    info = json.loads(herald_cmd("post", "show", post_id, "--json").stdout)
    s1 = next(d for d in info["deliveries"] if d["channel"] == "s1")
    assert s1["status"] == "retry_wait" and s1["next_attempt_at"]
    assert f"s1: next attempt at {s1['next_attempt_at']}" in lines
    assert info["texts"] == ["hello [world]", "and more"]
    assert [p["text"] for d in info["deliveries"] for p in d["parts"]] == [None, None, None, "and more, for s2"]

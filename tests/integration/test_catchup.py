"""Catch-up after an outage (issue 16 point 6): a backlog of overdue posts goes out at the
channel's rate, not as one burst, by two real worker processes sharing the pacer, against
the sandbox platform keeping the same rate for real (a 429 for every post past it).

A behaviour check, not a timing one: every post publishes once, the platform refuses
none, and no window of the rate's length holds more posts than the rate allows.
"""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest
from sqlalchemy import select

from core.config import Settings
from core.services.channels import add_channel
from core.services.posts import create_post
from core.store import db
from core.store.models import Delivery
from tests.integration.conftest import Sandbox, Workers, post_json, wait_until

pytestmark = pytest.mark.integration

COUNT, PER = 10, 3.0


def most_in_any_window(instants: list[datetime], seconds: float) -> int:
    """The most of ``instants`` that one closed window of ``seconds`` holds."""
    ordered = sorted(instants)
    return max(
        sum(1 for later in ordered[i:] if (later - first).total_seconds() <= seconds) for i, first in enumerate(ordered)
    )


def test_thirty_overdue_posts_go_out_at_the_channels_rate_without_a_429_by_two_workers(
    herald: Settings, sandbox_url: str, platform: Sandbox, workers: Workers
) -> None:
    add_channel("paced", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok", "rate": f"{COUNT}/{PER:g}"})
    httpx.put(f"{sandbox_url}/sandbox/rate", json={"count": COUNT, "per_seconds": PER}).raise_for_status()
    # The outage: thirty posts come due while no worker runs.
    post_ids = [create_post(channels=["paced"], parts=[f"backlog {i}"]) for i in range(30)]

    workers.start()
    workers.start()
    wait_until(lambda: all(post_json(p)["status"] == "published" for p in post_ids), timeout=60, interval=0.5)

    posts = platform.posts()
    assert sorted(p["text"] for p in posts) == sorted(f"backlog {i}" for i in range(30))  # each once
    assert httpx.get(f"{sandbox_url}/sandbox/rate").json()["refused"] == 0
    landed = [datetime.fromisoformat(p["created_at"]) for p in posts]
    with db.reading() as s:
        confirmed = list(s.execute(select(Delivery.confirmed_at).where(Delivery.post_id.in_(post_ids))).scalars())
    assert most_in_any_window(landed, PER) <= COUNT
    assert most_in_any_window(confirmed, PER) <= COUNT

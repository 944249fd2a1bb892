"""A worker runs several jobs at once (``core.runtime.worker``): while a platform holds one
post's answer, the worker's other threads send other posts; a stop lets the jobs in flight
end and record their outcomes before the worker leaves."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise

import pytest
from sqlalchemy import select

from core.runtime.queue import connection, post_queue
from core.runtime.worker import HeraldWorker
from core.services.posts import create_post
from core.store import db
from core.store.models import Delivery, DeliveryPart
from tests.integration.conftest import Sandbox, Workers, post_json, wait_until

#: Each post's answer is held this long after the platform stored it: less than the call's
#: deadline (TEST_TIMINGS' 1.5 s), so every call ends well.
HOLD = 1.0


def _posts(n: int) -> list[int]:
    return [create_post(channels=["n1"], parts=[f"side by side {i}"]) for i in range(n)]


def _spans(post_ids: Sequence[int]) -> list[tuple[datetime, datetime]]:
    """(claimed, confirmed) of each post's one delivery, in the order the posts were claimed."""
    with db.reading() as s:
        rows = s.execute(
            select(Delivery.claimed_at, Delivery.confirmed_at)
            .where(Delivery.post_id.in_(post_ids))
            .order_by(Delivery.claimed_at)
        ).all()
    assert all(confirmed is not None for _, confirmed in rows)
    return [(claimed, confirmed) for claimed, confirmed in rows]


@pytest.mark.parametrize("jobs", [3, 1])
def test_while_the_platform_holds_each_answer_a_worker_sends_its_jobs_side_by_side(
    jobs: int, channels: dict[str, str], platform: Sandbox
) -> None:
    platform.faults(hold_after_accept=1.0, hold_seconds=HOLD, times=3, strategies=["native"])
    post_ids = _posts(3)

    HeraldWorker([post_queue()], connection=connection(), jobs=jobs).work(burst=True, with_scheduler=False)

    assert [post_json(p)["status"] for p in post_ids] == ["published"] * 3
    assert len(platform.posts("native")) == 3
    spans = _spans(post_ids)
    first_answer = min(confirmed for _, confirmed in spans)
    if jobs == 3:
        # Every post was claimed, and its call made, before the first held answer came back.
        assert all(claimed < first_answer for claimed, _ in spans)
    else:
        # One at a time: each post is claimed only once the one before it was confirmed.
        assert all(later[0] >= earlier[1] for earlier, later in pairwise(spans))


def test_a_stopped_worker_lets_its_jobs_in_flight_end_and_record_them_before_it_leaves(
    channels: dict[str, str], platform: Sandbox, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERALD_WORKER_JOBS", "3")
    platform.faults(hold_after_accept=1.0, hold_seconds=HOLD, times=3, strategies=["native"])
    post_ids = _posts(3)
    worker = workers.start()
    # All three stored by the platform, each answer still held: three calls in flight.
    wait_until(lambda: len(platform.posts("native")) == 3, timeout=30)

    os.kill(worker.pid, signal.SIGTERM)

    assert worker.wait(timeout=20) == 0
    assert [post_json(p)["status"] for p in post_ids] == ["published"] * 3
    with db.reading() as s:
        states = s.execute(select(DeliveryPart.state)).scalars().all()
    assert [str(state) for state in states] == ["published"] * 3
    assert len(platform.posts("native")) == 3

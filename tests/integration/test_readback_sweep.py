"""The read-back sweep (§14): every part, and again while a delivery's last attempt settles."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import httpx
import pytest

from core.runtime.clock import DatabaseClock
from core.services.posts import create_post
from core.store import db
from core.store.models import Alarm, AlarmKind
from reconciler import readback
from tests.integration.conftest import Sandbox, drain, post_json, wait_until

pytestmark = pytest.mark.integration

SETTLE = 60.0
#: The platform's search lag in the late-copy test.
LAG = 1.5


def _now() -> datetime:
    return DatabaseClock(db.engine()).now()


def _second_copy(sandbox_url: str, text: str, key: str) -> None:
    """A copy with the same key that reached the platform behind herald's back."""
    httpx.post(
        f"{sandbox_url}/api/readback/posts",
        json={"text": text, "key": key},
        headers={"Authorization": "Bearer t-ok"},
    ).raise_for_status()


def _sweep_until(done: Callable[[int, int], bool], timeout: float = 10.0) -> tuple[int, int]:
    """Sweep until ``done(seen, raised)`` (the platform's search lag has passed); that result."""

    def swept() -> tuple[int, int] | None:
        result = readback.sweep(_now(), 5.0, SETTLE)
        return result if done(*result) else None

    found: tuple[int, int] = wait_until(swept, timeout=timeout)
    return found


def _duplicate_alarms() -> list[str]:
    with db.reading() as s:
        return [a.detail for a in s.query(Alarm).filter(Alarm.kind == AlarmKind.DUPLICATE)]


def test_a_second_copy_that_becomes_visible_only_after_the_first_sighting_is_still_detected(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    platform.faults(search_lag=LAG, strategies=["readback"])  # the platform's index lags
    post_id = create_post(channels=[channels["readback"]], parts=["late twin"])
    drain()
    key = post_json(post_id)["deliveries"][0]["parts"][0]["key"]
    assert _sweep_until(lambda seen, raised: seen == 1) == (1, 0)  # first sighting: one copy

    _second_copy(sandbox_url, "late twin", key)
    assert readback.sweep(_now(), 5.0, SETTLE) == (1, 0)  # the second copy is not indexed yet

    assert _sweep_until(lambda seen, raised: raised == 1) == (1, 1)
    assert _duplicate_alarms() == ["a read-back found 2 copies of part 1 on r1"]
    assert readback.sweep(_now(), 5.0, SETTLE) == (1, 0)  # raised once


def test_every_part_of_a_thread_is_read_back_not_only_the_first(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["one/3", "two/3", "three/3"])
    drain()
    parts = post_json(post_id)["deliveries"][0]["parts"]
    _second_copy(sandbox_url, "two/3", parts[1]["key"])

    assert readback.sweep(_now(), 5.0, SETTLE) == (1, 1)
    assert _duplicate_alarms() == ["a read-back found 2 copies of part 2 on r1"]


def test_a_delivery_whose_last_attempt_left_the_settle_window_is_no_longer_read_back(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    post_id = create_post(channels=[channels["readback"]], parts=["settled"])
    drain()
    key = post_json(post_id)["deliveries"][0]["parts"][0]["key"]
    assert readback.sweep(_now(), 5.0, SETTLE) == (1, 0)
    _second_copy(sandbox_url, "settled", key)
    later = _now() + timedelta(seconds=SETTLE + 1)

    # One more look when the previous sweep started inside the window, however long ago...
    assert readback.sweep(later, 5.0, SETTLE, previous=_now()) == (1, 1)
    # ...and none once the previous sweep, too, started after it.
    assert readback.sweep(later, 5.0, SETTLE, previous=later) == (0, 0)


def test_a_delivery_not_confirmed_yet_is_read_back_too(
    channels: dict[str, str], platform: Sandbox, sandbox_url: str
) -> None:
    # The platform stores the post and answers 500; its search lags, so the resend that
    # follows would see nothing: the copies pile up while the delivery waits to retry.
    platform.faults(error_after_accept=1.0, times=1, strategies=["readback"])
    post_id = create_post(channels=[channels["readback"]], parts=["in doubt"])
    drain()
    delivery = post_json(post_id)["deliveries"][0]
    assert delivery["status"] == "retry_wait"
    _second_copy(sandbox_url, "in doubt", delivery["parts"][0]["key"])

    assert readback.sweep(_now(), 5.0, SETTLE) == (1, 1)
    assert _duplicate_alarms() == ["a read-back found 2 copies of part 1 on r1"]


def test_native_and_none_deliveries_are_not_read_back(channels: dict[str, str], platform: Sandbox) -> None:
    create_post(channels=[channels["native"], channels["none"]], parts=["not searchable"])
    drain()

    assert readback.sweep(_now(), 5.0, SETTLE) == (0, 0)

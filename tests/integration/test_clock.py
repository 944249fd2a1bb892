"""The database's clock as herald reads it (core/runtime/clock.py): never ahead of the
server, so no slot is taken as come early – even when taking a connection is slow (a
loaded machine: the chaos harness saw claims ~55 ms early when the checkout's time was
counted into the reading)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest
from sqlalchemy import Engine, event, text

from core.config import Settings
from core.runtime.clock import DatabaseClock
from core.store import db

pytestmark = pytest.mark.integration


@pytest.fixture
def slow_checkout(herald: Settings) -> Iterator[Engine]:
    engine = db.engine()
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite has no server: its clock is this process's own")

    def slow(*_: Any) -> None:
        time.sleep(0.2)

    event.listen(engine, "checkout", slow)
    DatabaseClock._offsets.clear()
    try:
        yield engine
    finally:
        event.remove(engine, "checkout", slow)
        DatabaseClock._offsets.clear()


def test_the_clock_is_never_ahead_of_the_server_even_when_a_checkout_is_slow(slow_checkout: Engine) -> None:
    clock = DatabaseClock(slow_checkout)
    clock.now()  # measures the offset, through a slow checkout
    with slow_checkout.connect() as conn:
        for _ in range(20):
            ours = clock.now()
            theirs = conn.execute(text("SELECT clock_timestamp()")).scalar_one().astimezone(UTC)
            assert ours <= theirs, f"herald's clock is {(ours - theirs).total_seconds():.3f} s ahead of the server"
            # ...and behind it by no more than a loopback round trip or so, not the checkout's 0.2 s.
            assert (theirs - ours).total_seconds() < 0.1

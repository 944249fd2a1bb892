"""The reconciler's loops (§7): each pass that fails is retried at the next one."""

from __future__ import annotations

import threading

import pytest

from core.domain.errors import ConfigError
from reconciler.tick import every, run_forever


def test_a_failed_pass_is_logged_and_retried_at_the_next_one(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    runs: list[int] = []

    def repair_pass() -> None:
        runs.append(len(runs) + 1)
        if len(runs) == 1:
            raise RuntimeError("database unreachable")
        stop.set()  # the second pass worked: end the loop

    every(0.0, repair_pass, stop, "repair pass")

    assert runs == [1, 2]
    assert "repair pass failed" in caplog.text


def test_a_loop_asked_to_stop_runs_no_further_pass() -> None:
    stop = threading.Event()
    stop.set()
    every(0.0, lambda: pytest.fail("ran after stop"), stop, "read-back sweep")


@pytest.mark.parametrize("interval", [-5.0, 0.0, 0.001, float("nan"), float("inf"), 1e308])
def test_run_forever_refuses_an_interval_that_would_busy_loop_or_never_tick(interval: float) -> None:
    stop = threading.Event()
    with pytest.raises(ConfigError) as info:
        run_forever(interval, stop=stop)  # refused before any loop starts, or this would hang
    assert str(info.value).startswith("--interval=")
    assert "from 0.05 to 3600" in str(info.value)
    assert not any(t.name == "herald-readback-sweep" for t in threading.enumerate())

"""The reconciler's loops (§7): each pass that fails is retried at the next one."""

from __future__ import annotations

import threading

import pytest

from reconciler.tick import every


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

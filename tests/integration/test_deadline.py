"""A platform call ends at its deadline against the real sandbox platform, and the
platform sees the connection close then: nothing of the call can reach it afterwards."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from adapters.sandbox.adapters import SandboxNone
from adapters.sandbox.server import SandboxServer
from core.domain.errors import Ambiguous
from core.plugins.adapter import PublishContext, Published
from core.plugins.transport import http_client
from core.runtime.calls import call_adapter
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.integration

#: The call's hard timeout; the platform holds its answer five times as long.
TIMEOUT = 1.0
HOLD = 5.0
#: A per-phase timeout longer than the hold: only the call's deadline can end a held call
#: (a call may have less time left than its client's timeouts, e.g. after a first request).
SLOW_CLIENT = 2 * HOLD


@pytest.fixture
def admin(sandbox: SandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sandbox.url, timeout=5.0) as client:
        client.delete("/sandbox/posts").raise_for_status()
        yield client


def context(sandbox: SandboxServer, text: str, client_timeout: float) -> PublishContext:
    return PublishContext(
        settings={"base_url": sandbox.url, "token": "t-ok"},
        client=http_client(client_timeout),
        key=f"key-{text}",
        text=text,
    )


def faults(admin: httpx.Client, **config: Any) -> None:
    admin.put("/sandbox/faults", json=config).raise_for_status()


def hung_up(admin: httpx.Client) -> dict[str, Any]:
    """The one held answer, once the platform has seen the client close its connection."""

    def closed() -> dict[str, Any] | None:
        held: list[dict[str, Any]] = admin.get("/sandbox/held").json()["held"]
        assert len(held) == 1, held
        return held[0] if held[0]["client_closed_after"] is not None else None

    found: dict[str, Any] = wait_until(closed, timeout=HOLD)
    return found


def publish(sandbox: SandboxServer, text: str, client_timeout: float = TIMEOUT) -> tuple[Published | Exception, float]:
    """One sandbox-none publish under the deadline: what it returned or raised, and how long it took."""
    ctx = context(sandbox, text, client_timeout)
    started = time.monotonic()
    try:
        outcome: Published | Exception = call_adapter(SandboxNone().publish, ctx, TIMEOUT)
    except Ambiguous as exc:
        outcome = exc
    return outcome, time.monotonic() - started


def test_an_answer_held_past_the_deadline_is_cut_there_and_the_platform_sees_the_hang_up(
    sandbox: SandboxServer, admin: httpx.Client
) -> None:
    # A first call leaves a kept-alive connection in the pool: the cut must work on it too.
    assert isinstance(publish(sandbox, "before", SLOW_CLIENT)[0], Published)
    faults(admin, hold_after_accept=1.0, hold_seconds=HOLD, times=1)

    outcome, elapsed = publish(sandbox, "held", SLOW_CLIENT)

    assert isinstance(outcome, Ambiguous), outcome
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + 1.0 < HOLD
    held = hung_up(admin)
    assert held["fault"] == "hold_after_accept"
    assert held["answered"] is False
    assert TIMEOUT - 0.3 < held["client_closed_after"] < TIMEOUT + 0.5
    # It landed: the ambiguity is real, which is why nothing of it may arrive later.
    assert [p["text"] for p in admin.get("/sandbox/posts").json()["posts"]] == ["before", "held"]


def test_a_trickled_answer_is_cut_at_the_deadline_though_every_read_gets_a_byte(
    sandbox: SandboxServer, admin: httpx.Client
) -> None:
    # A byte every 0.2 s beats the client's 1 s read timeout; only the deadline ends it.
    faults(admin, trickle_after_accept=1.0, trickle_interval=0.2, times=1)

    outcome, elapsed = publish(sandbox, "trickled")

    assert isinstance(outcome, Ambiguous), outcome
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + 1.0
    held = hung_up(admin)
    assert held["fault"] == "trickle_after_accept"
    assert held["answered"] is False
    assert TIMEOUT - 0.3 < held["client_closed_after"] < TIMEOUT + 0.5


@pytest.mark.parametrize("fault", ["hold", "trickle"])
def test_the_call_after_a_cut_is_answered(sandbox: SandboxServer, admin: httpx.Client, fault: str) -> None:
    faults(admin, **{f"{fault}_after_accept": 1.0, "hold_seconds": HOLD, "times": 1})
    assert isinstance(publish(sandbox, "cut", SLOW_CLIENT)[0], Ambiguous)

    outcome, elapsed = publish(sandbox, "next", SLOW_CLIENT)

    assert isinstance(outcome, Published), outcome
    assert elapsed < TIMEOUT

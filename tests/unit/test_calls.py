"""call_adapter: one adapter call under its deadline, against a loopback HTTP server.

The server counts connections and requests, so the tests see what reached "the platform"
and whether the process's one client kept its connection alive.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from core.domain.errors import AdapterError, Ambiguous, ConfigError, HeraldError, NotSent, Rejected
from core.domain.states import Reason
from core.plugins.adapter import PublishContext
from core.plugins.deadline import DeadlineTransport
from core.plugins.transport import http_client
from core.runtime.calls import call_adapter

#: The client's per-phase timeout: longer than any deadline here, so only the deadline cuts.
CLIENT_TIMEOUT = 5.0


class Loopback(ThreadingHTTPServer):
    """``/ok`` answers, ``/hold`` never does (it waits for the client to hang up), ``/drop``
    closes the connection unanswered, anything else is a 404."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: list[str] = []
        #: Set when the client closed a connection that a ``/hold`` was waiting on.
        self.hung_up = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: Loopback
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.requests.append(self.path)
        if self.path == "/ok":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        elif self.path == "/hold":
            self.connection.settimeout(CLIENT_TIMEOUT * 2)
            with contextlib.suppress(OSError):  # a reset is a hang-up too
                self.connection.recv(1, socket.MSG_PEEK)
            self.server.hung_up.set()
            self.close_connection = True
        elif self.path == "/drop":
            self.close_connection = True
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture
def server() -> Iterator[Loopback]:
    loopback = Loopback()
    thread = threading.Thread(target=loopback.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield loopback
    loopback.shutdown()
    thread.join()
    loopback.server_close()


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ctx() -> PublishContext:
    return PublishContext(settings={}, client=http_client(CLIENT_TIMEOUT), key="k", text="hello")


def get(url: str) -> Callable[[PublishContext], str]:
    def call(ctx: PublishContext) -> str:
        response = ctx.client.get(url)
        response.raise_for_status()
        return response.text

    return call


def wait_for(predicate: Callable[[], bool], timeout: float = CLIENT_TIMEOUT) -> bool:
    until = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > until:
            return False
        time.sleep(0.01)
    return True


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- the deadline -------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_a_call_whose_deadline_has_passed_before_it_begins_is_not_run(timeout: float) -> None:
    ran: list[PublishContext] = []

    with pytest.raises(NotSent, match="not run"):
        call_adapter(ran.append, ctx(), timeout)

    assert ran == []


def test_calls_reuse_the_kept_alive_connection_of_the_process_client(server: Loopback) -> None:
    answers = [call_adapter(get(f"{server.url}/ok"), ctx(), 2.0) for _ in range(3)]

    assert answers == ["ok", "ok", "ok"]
    assert server.requests == ["/ok"] * 3
    assert server.connections == 1


def test_a_request_begun_after_the_deadline_is_not_sent_and_never_reaches_the_platform(server: Loopback) -> None:
    clock = FakeClock()

    def slow_adapter(ctx: PublishContext) -> str:
        clock.now += 3.0  # the adapter's own work outlasts the deadline
        return get(f"{server.url}/ok")(ctx)

    with pytest.raises(NotSent, match="deadline passed before any request was written"):
        call_adapter(slow_adapter, ctx(), 2.0, now=clock)

    assert server.requests == []


def passing_the_deadline_at(event: str, url: str, clock: FakeClock) -> Callable[[PublishContext], str]:
    """An adapter whose request outlives the deadline exactly when httpcore starts ``event``
    (httpcore's ``trace`` extension calls back at each step of a request)."""

    def trace(name: str, info: dict[str, Any]) -> None:
        if name == event:
            clock.now += 10.0

    def adapter(ctx: PublishContext) -> str:
        return ctx.client.get(url, extensions={"trace": trace}).text

    return adapter


def test_a_deadline_passing_just_before_the_request_is_written_sends_nothing(server: Loopback) -> None:
    call_adapter(get(f"{server.url}/ok"), ctx(), 2.0)  # a kept-alive connection, ready
    clock = FakeClock()
    adapter = passing_the_deadline_at("http11.send_request_headers.started", f"{server.url}/ok", clock)

    with pytest.raises(NotSent, match="before any request was written"):
        call_adapter(adapter, ctx(), 2.0, now=clock)

    assert server.requests == ["/ok"]
    assert call_adapter(get(f"{server.url}/ok"), ctx(), 2.0) == "ok"
    assert server.connections == 2  # the refused request's connection was aborted, not reused


def test_a_deadline_passing_while_the_answer_is_awaited_is_ambiguous(server: Loopback) -> None:
    clock = FakeClock()
    adapter = passing_the_deadline_at("http11.receive_response_headers.started", f"{server.url}/ok", clock)

    with pytest.raises(Ambiguous, match="after a request was written") as info:
        call_adapter(adapter, ctx(), 2.0, now=clock)

    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


def test_once_a_request_was_written_a_later_request_past_the_deadline_is_ambiguous(server: Loopback) -> None:
    clock = FakeClock()

    def two_requests(ctx: PublishContext) -> str:
        get(f"{server.url}/ok")(ctx)  # may have created the post
        clock.now += 3.0
        return get(f"{server.url}/ok")(ctx)

    with pytest.raises(Ambiguous, match="after a request was written"):
        call_adapter(two_requests, ctx(), 2.0, now=clock)

    assert server.requests == ["/ok"]


def test_an_answer_held_past_the_deadline_is_cut_there_and_its_connection_never_reused(server: Loopback) -> None:
    assert call_adapter(get(f"{server.url}/ok"), ctx(), 2.0) == "ok"

    started = time.monotonic()
    with pytest.raises(Ambiguous) as info:
        call_adapter(get(f"{server.url}/hold"), ctx(), 0.5)
    elapsed = time.monotonic() - started

    assert isinstance(info.value.__cause__, httpx.ReadTimeout)
    assert 0.45 <= elapsed < 1.5 < CLIENT_TIMEOUT
    assert server.hung_up.wait(CLIENT_TIMEOUT)
    # The cut connection (the kept-alive one) is gone; the next ones share a new one.
    assert [call_adapter(get(f"{server.url}/ok"), ctx(), 2.0) for _ in range(2)] == ["ok", "ok"]
    assert server.connections == 2


def test_the_wait_for_a_pooled_connection_ends_at_the_deadline(server: Loopback) -> None:
    # One connection, taken by a request that waits on /hold until its own read timeout.
    transport = DeadlineTransport(limits=httpx.Limits(max_connections=1))
    with httpx.Client(transport=transport, timeout=httpx.Timeout(CLIENT_TIMEOUT, read=1.0)) as client:

        def hold() -> None:
            with contextlib.suppress(httpx.ReadTimeout):
                client.get(f"{server.url}/hold")

        holder = threading.Thread(target=hold)
        holder.start()
        assert wait_for(lambda: server.requests == ["/hold"])
        waiting = PublishContext(settings={}, client=client, key="k", text="hello")

        started = time.monotonic()
        with pytest.raises(NotSent) as info:
            call_adapter(get(f"{server.url}/ok"), waiting, 0.3)
        elapsed = time.monotonic() - started
        holder.join()

    assert isinstance(info.value.__cause__, httpx.PoolTimeout)
    assert 0.25 <= elapsed < 0.9  # the deadline, not the client's pool timeout nor the holder's read


# -- outcomes -----------------------------------------------------------------------------


def test_a_refused_connection_is_not_sent() -> None:
    with pytest.raises(NotSent) as info:
        call_adapter(get(f"http://127.0.0.1:{closed_port()}/ok"), ctx(), 2.0)

    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_a_refused_connection_after_a_written_request_is_ambiguous(server: Loopback) -> None:
    def two_platforms(ctx: PublishContext) -> str:
        get(f"{server.url}/ok")(ctx)
        return get(f"http://127.0.0.1:{closed_port()}/ok")(ctx)

    with pytest.raises(Ambiguous) as info:
        call_adapter(two_platforms, ctx(), 2.0)

    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_a_connection_closed_without_an_answer_is_ambiguous(server: Loopback) -> None:
    with pytest.raises(Ambiguous) as info:
        call_adapter(get(f"{server.url}/drop"), ctx(), 2.0)

    assert isinstance(info.value.__cause__, httpx.RemoteProtocolError)


@pytest.mark.parametrize(
    "error",
    [Rejected(Reason.CONTENT_REJECTED, "too long"), NotSent("503"), ConfigError("no base_url")],
    ids=lambda e: type(e).__name__,
)
def test_the_adapters_own_herald_errors_pass_through_unchanged(error: HeraldError) -> None:
    def adapter(ctx: PublishContext) -> None:
        raise error

    with pytest.raises(HeraldError) as info:
        call_adapter(adapter, ctx(), 2.0)

    assert info.value is error


def test_a_bug_before_any_request_is_an_adapter_error_that_sent_nothing() -> None:
    bug = KeyError("base_url")

    def adapter(ctx: PublishContext) -> None:
        raise bug

    with pytest.raises(AdapterError) as info:
        call_adapter(adapter, ctx(), 2.0)

    assert info.value.sent is False
    assert "KeyError" in str(info.value) and "base_url" in str(info.value)
    assert info.value.__cause__ is bug


def test_a_bug_after_a_request_was_written_is_an_adapter_error_that_sent(server: Loopback) -> None:
    def adapter(ctx: PublishContext) -> None:
        get(f"{server.url}/ok")(ctx)
        raise ValueError("unreadable answer")

    with pytest.raises(AdapterError, match="ValueError: unreadable answer") as info:
        call_adapter(adapter, ctx(), 2.0)

    assert info.value.sent is True
    assert isinstance(info.value.__cause__, ValueError)


def test_an_http_status_error_the_adapter_raises_is_an_adapter_error_that_sent(server: Loopback) -> None:
    with pytest.raises(AdapterError, match="HTTPStatusError") as info:
        call_adapter(get(f"{server.url}/missing"), ctx(), 2.0)

    assert info.value.sent is True


def test_outside_a_call_the_client_keeps_its_per_phase_timeouts_only(server: Loopback) -> None:
    response = http_client(CLIENT_TIMEOUT).get(f"{server.url}/ok")

    assert response.text == "ok"

"""A platform call's deadline, enforced at the transport (§5).

httpx's timeouts are per phase (pool, connect, read, write): a platform that trickles its
answer a byte per read, or a request that waited for a pooled connection, can run past
any one of them and still reach the platform after the grace window. So a call carries
one :class:`Deadline`, fixed when it starts, and every request made under it through
herald's client (:class:`DeadlineTransport`) ends by it:

* the wait for a pooled connection and the connect are bounded by the time left (the
  request's ``timeout`` extension, which httpcore reads per request);
* every read and every ``send`` on the socket is bounded by the time left, recomputed
  each time, so a trickle ends at the deadline however often its bytes come;
* when the deadline passes, a request not yet written is refused and one in flight is
  cut: its connection is aborted (a TCP reset, so even bytes still in the kernel's send
  buffer are dropped) and httpcore never returns it to the pool.

The deadline travels in a context variable rather than on the client: the client is the
process's one long-lived pool (a new one costs ~25 ms, a kept-alive request ~0.5 ms), and
the adapter's signature carries only its ``PublishContext``. Each request reads it once
per socket operation, a few hundred nanoseconds.

httpx does not let a caller plug a network backend into its own ``HTTPTransport``, so
:class:`DeadlineTransport` drives httpcore's ``ConnectionPool`` itself (HTTP/1.1, no
proxies) and maps httpcore's errors to httpx's, as httpx's transport does.
"""

from __future__ import annotations

import select
import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx


@dataclass(slots=True)
class Deadline:
    """The moment one call must be over by, and what its requests did meanwhile."""

    #: When the call must end, on the ``now`` clock.
    at: float
    #: The monotonic clock the deadline is read from (tests inject their own).
    now: Callable[[], float] = time.monotonic
    #: Whether any byte of a request was handed to the network under this deadline.
    sent: bool = False
    #: Whether the deadline refused a request or cut one in flight.
    cut: bool = False

    def remaining(self) -> float:
        return self.at - self.now()


_current: ContextVar[Deadline | None] = ContextVar("herald_deadline", default=None)


@contextmanager
def bounded_by(deadline: Deadline) -> Iterator[Deadline]:
    """Bound every request made through herald's client in this context by ``deadline``."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


#: A reset on close: ``SO_LINGER`` on with a zero timeout.
_RESET = struct.pack("ii", 1, 0)


class _DeadlineStream(httpcore.NetworkStream):
    """One connection's socket; every operation ends by the current call's deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        deadline = _current.get()
        limit, by_deadline = self._time_left(deadline, timeout, httpcore.ReadTimeout)
        try:
            self._sock.settimeout(limit)
            return self._sock.recv(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(self._timed_out(deadline, by_deadline, exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        deadline = _current.get()
        rest = memoryview(buffer)
        try:
            while rest:
                # Each send gets the time left now: one timeout for the whole loop would
                # let a platform that reads slowly stretch the write past the deadline.
                limit, by_deadline = self._time_left(deadline, timeout, httpcore.WriteTimeout)
                if deadline is not None:
                    deadline.sent = True  # before the send: a failing one may have sent part
                self._sock.settimeout(limit)
                rest = rest[self._sock.send(rest) :]
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(self._timed_out(deadline, by_deadline, exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        deadline = _current.get()
        limit, by_deadline = self._time_left(deadline, timeout, httpcore.ConnectTimeout)
        try:
            self._sock.settimeout(limit)
            return _DeadlineStream(ssl_context.wrap_socket(self._sock, server_hostname=server_hostname))
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(self._timed_out(deadline, by_deadline, exc)) from exc
        except OSError as exc:
            self.close()
            raise httpcore.ConnectError(str(exc)) from exc

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock  # what httpcore asks of it (the ALPN protocol) the socket answers
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":
            return _readable(self._sock)
        return None

    def _time_left(
        self, deadline: Deadline | None, timeout: float | None, timed_out: type[httpcore.TimeoutException]
    ) -> tuple[float | None, bool]:
        """The timeout of one socket operation, and whether the deadline set it.

        Raises:
            ``timed_out``: the deadline has passed; the connection is aborted.
        """
        if deadline is None:
            return timeout, False
        remaining = deadline.remaining()
        if remaining <= 0:
            raise timed_out(self._timed_out(deadline, True))
        if timeout is None or remaining < timeout:
            return remaining, True
        return timeout, False

    def _timed_out(self, deadline: Deadline | None, by_deadline: bool, exc: TimeoutError | None = None) -> str:
        """Abort the connection and say why: a timed-out request leaves it unusable, and a
        graceful close would still deliver whatever the kernel holds of the request."""
        with suppress(OSError):
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        self._sock.close()
        if deadline is not None and by_deadline:
            deadline.cut = True
            return "the call's deadline has passed"
        return str(exc)


def _readable(sock: socket.socket) -> bool:
    """Whether an idle kept-alive socket has something to read: the platform closed it."""
    if sock.fileno() < 0:
        return True
    if hasattr(select, "poll"):
        poll = select.poll()
        poll.register(sock, select.POLLIN)
        return bool(poll.poll(0))
    return bool(select.select([sock], [], [], 0)[0])  # pragma: no cover - no poll on Windows


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own connect, bounded by the deadline, handing out deadline-bound streams."""

    def __init__(self) -> None:
        self._sync = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        deadline = _current.get()
        if deadline is not None:
            remaining = deadline.remaining()
            if remaining <= 0:
                deadline.cut = True
                raise httpcore.ConnectTimeout("the call's deadline has passed")
            timeout = _within(timeout, remaining)
        stream = self._sync.connect_tcp(host, port, timeout, local_address, socket_options)
        sock: socket.socket = stream.get_extra_info("socket")
        return _DeadlineStream(sock)


_PHASES = ("connect", "read", "write", "pool")


def _within(timeout: float | None, remaining: float) -> float:
    return remaining if timeout is None else min(timeout, remaining)


#: httpcore's errors and the httpx errors adapters know, most specific first by MRO.
_HTTPX_ERRORS: Mapping[type[Exception], type[httpx.TransportError]] = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.ProxyError: httpx.ProxyError,
}


@contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for cls in type(exc).__mro__:
            mapped = _HTTPX_ERRORS.get(cls)
            if mapped is not None:
                raise mapped(str(exc), request=request) from exc
        raise


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream, self._request = stream, request

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors(self._request):
            yield from self._stream

    def close(self) -> None:
        close: Callable[[], None] | None = getattr(self._stream, "close", None)
        if close is not None:
            close()


class DeadlineTransport(httpx.BaseTransport):
    """An HTTP/1.1 connection pool whose requests end by the current call's deadline.

    Outside :func:`bounded_by` it is a plain pool with the client's per-phase timeouts.
    """

    def __init__(self, limits: httpx.Limits | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        limits = limits or httpx.Limits()
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        extensions = request.extensions
        deadline = _current.get()
        if deadline is not None:
            remaining = deadline.remaining()
            if remaining <= 0:
                deadline.cut = True
                raise httpx.PoolTimeout("the call's deadline passed before this request began", request=request)
            given: Mapping[str, float | None] = extensions.get("timeout", {})
            extensions = {**extensions, "timeout": {phase: _within(given.get(phase), remaining) for phase in _PHASES}}
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=extensions,
        )
        with _as_httpx_errors(request):
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream, request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()

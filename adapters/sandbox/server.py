"""The sandbox platform: a real local HTTP server that behaves like a social platform.

It speaks several APIs, each under its own path prefix: its own, one prefix per dedupe
strategy (``/api/native``, ``/api/readback``, ``/api/none``: ``api.py``), and two real
platforms' as their official docs describe them, so the real adapters run end to end
against it – Mastodon's REST API under ``/mastodon`` (``mastodon.py``; also at the root,
``/api/v1`` and ``/api/v2``, where an instance has it) and Bluesky's XRPC under
``/bluesky`` (``bluesky.py``). All of them keep their posts and uploads in one
store (``store.py``, ``media.py``), suffer the same faults (``faults.py``) and keep the
same rate limit (``limiter.py``), answered the same way (``exchange.py``). People see
every post in an HTML feed at ``/``, with its images and videos (served at
``/media/{id}``: ``feed.py``); tests use the admin API under ``/sandbox`` as the oracle
and to inject faults (``admin.py``).

It is built on the stdlib ``http.server`` rather than a framework because fault injection
needs the raw socket: "accept the post, then close the connection without answering" is
the failure herald exists to survive, and a framework would always answer.

``herald sandbox serve`` keeps the posts in a state file under herald's home, so a
restart keeps the feed, the ids and the remembered keys (``journal.py``); tests run it in
memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from adapters.sandbox.admin import answer_admin
from adapters.sandbox.api import answer_api
from adapters.sandbox.bluesky import answer_bluesky
from adapters.sandbox.exchange import Exchange, HeldAnswer
from adapters.sandbox.faults import FaultPlan
from adapters.sandbox.feed import render_feed, render_post
from adapters.sandbox.limiter import RateLimiter
from adapters.sandbox.mastodon import answer_mastodon
from adapters.sandbox.store import PlatformStore, Refusal
from core.domain.errors import UserError

#: The platform APIs by path prefix; each request to one waits out the ``latency`` fault first.
PLATFORM_APIS = {"api": answer_api, "mastodon": answer_mastodon, "bluesky": answer_bluesky}


class PlatformHTTPServer(ThreadingHTTPServer):
    """The threaded HTTP server holding the platform's state; tracks open connections."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: Path | None = None) -> None:
        self.faults = FaultPlan()
        #: The platform's rate limit (``PUT /sandbox/rate``), off until set.
        self.rate = RateLimiter()
        #: Every held-back answer, in order; ``DELETE /sandbox/posts`` forgets them.
        self.held: list[HeldAnswer] = []
        self.held_lock = threading.Lock()
        self.log_requests = os.environ.get("HERALD_SANDBOX_LOG") == "1"
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        # The port first: a second sandbox on a taken port is told about the port, not
        # about the state file the first one holds. Nothing is served before serve_forever.
        super().__init__(address, PlatformRequestHandler)
        try:
            self.store = PlatformStore(state)
        except BaseException:
            self.socket.close()
            raise

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{port}"

    def server_close(self) -> None:
        super().server_close()
        # Its state file's lock, for the next sandbox; a bind that failed has no store yet.
        if hasattr(self, "store"):
            self.store.close()

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Cut kept-alive connections, so a stopped platform stops answering at once."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-hold are expected here; stay quiet unless asked to log.
        if self.log_requests:
            traceback.print_exc(file=sys.stderr)


class PlatformRequestHandler(BaseHTTPRequestHandler):
    server: PlatformHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "HeraldSandbox/1"
    # Headers and body go out in two writes; with Nagle on, each kept-alive answer waits ~40 ms.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, open_=False)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log_requests:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PUT(self) -> None:
        self._answer("PUT")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        split = urlsplit(self.path)
        # Segments are unquoted one by one, so an id holding a slash (a Bluesky post's
        # at:// URI, in the feed's /p/ links) stays one segment.
        parts = [unquote(part) for part in split.path.split("/") if part]
        if parts[:1] == ["api"] and parts[1:2] in (["v1"], ["v2"]):
            # Mastodon's API at the root too, where an instance serves it: a Mastodon
            # channel's base_url may be the sandbox's own address, with no path.
            parts = ["mastodon", *parts]
        query = {name: values[-1] for name, values in parse_qs(split.query).items()}
        exchange = Exchange(self, method, parts, query, self._read_body())
        try:
            if parts and parts[0] in PLATFORM_APIS:
                time.sleep(self.server.faults.config.latency)
                PLATFORM_APIS[parts[0]](exchange)
            elif parts[:1] == ["sandbox"]:
                answer_admin(exchange, self.server.held, self.server.held_lock)
            else:
                self._pages(exchange, method, parts)
        except Refusal as refusal:
            exchange.send_json(refusal.status, refusal.body)

    def _pages(self, exchange: Exchange, method: str, parts: list[str]) -> None:
        """The pages for people: the feed, one post, an upload's bytes."""
        store = self.server.store
        if method == "GET" and not parts:
            exchange.send_html(200, render_feed(store.posts()))
        elif method == "GET" and len(parts) == 2 and parts[0] == "p":
            post = store.get(parts[1])
            if post is None:
                raise Refusal(404, "not_found", f"no post {parts[1]!r}")
            exchange.send_html(200, render_post(post))
        elif method == "GET" and len(parts) == 2 and parts[0] == "media":
            found = store.media_file(parts[1])
            if found is None:
                raise Refusal(404, "not_found", f"no media {parts[1]!r}")
            media, data = found
            exchange.send(200, data, media.mime)
        else:
            raise Refusal(404, "not_found", f"no route {method} {urlsplit(self.path).path}")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""


class SandboxServer:
    """The sandbox platform on a daemon thread; binds at construction (port 0: any free one).
    In memory unless given a ``state`` file."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, state: Path | None = None) -> None:
        self._httpd = PlatformHTTPServer((host, port), state)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Where the platform answers, e.g. ``http://127.0.0.1:8765``."""
        return self._httpd.url

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                # A short poll keeps stop() quick; shutdown() waits for one poll to end.
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="sandbox-platform",
                daemon=True,
            )
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self._httpd.close_connections()

    def __enter__(self) -> SandboxServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def check_port(port: int, option: str, *, any_free: bool = False) -> None:
    """Refuse a port no socket can have.

    Args:
        port: the port asked for.
        option: how it was given (``--port``, ``--sandbox-port``), for the message.
        any_free: 0 is allowed, for "any free port".

    Raises:
        UserError: out of range.
    """
    lowest = 0 if any_free else 1
    if not lowest <= port <= 65535:
        free = " (0 picks a free one)" if any_free else ""
        raise UserError(f"port {port} is out of range: give {option} from 1 to 65535{free}")


def refused_port(exc: OSError, host: str, port: int, option: str) -> UserError:
    """The one line a failed bind deserves, naming the port and the fix."""
    if exc.errno == errno.EADDRINUSE:
        return UserError(
            f"port {port} is in use on {host} (another sandbox or `herald run` may be serving it): "
            f"stop that one, or give another with {option}"
        )
    if exc.errno == errno.EACCES:
        return UserError(f"port {port} needs privileges on this machine: give one above 1023 with {option}")
    return UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): give another --host or {option}")


def ensure_free(host: str, port: int, option: str) -> None:
    """Refuse at once a port something already listens on (before starting anything).

    Raises:
        UserError: out of range, or taken.
    """
    check_port(port, option)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the server binds (HTTPServer reuses the address): a port left in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise refused_port(exc, host, port, option) from None


def listen(host: str, port: int, state: Path | None = None, option: str = "--port") -> PlatformHTTPServer:
    """The sandbox platform bound to ``host:port`` (0: any free port), keeping ``state``.

    Raises:
        UserError: the port is out of range or taken, the host cannot be bound, or the
            state file is another sandbox's.
    """
    check_port(port, option, any_free=True)
    try:
        return PlatformHTTPServer((host, port), state)
    except OSError as exc:
        raise refused_port(exc, host, port, option) from None


def serve(host: str, port: int, state: Path | None = None) -> None:
    """Run the sandbox platform in the foreground until Ctrl-C or SIGTERM.

    Raises:
        UserError: it cannot listen there, or its state file is another sandbox's.
    """
    httpd = listen(host, port, state)

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, interrupt) if in_main_thread else None
    kept = f"; posts kept in {state}" if state is not None else "; posts in memory only"
    print(f"herald sandbox platform listening on {httpd.url}{kept}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        httpd.close_connections()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)

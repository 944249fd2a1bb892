"""The sandbox platform: a real local HTTP server that behaves like a social platform.

One path prefix per dedupe strategy (``/api/native``, ``/api/readback``, ``/api/none``),
each taking posts (``/posts``) and uploads of media to attach to them (``/media``,
``media.py``); an HTML feed at ``/`` for people, showing the posts with their images and
videos (served at ``/media/{id}``); and an admin API under ``/sandbox`` that tests use as
the oracle (every accepted post and upload, in order; every answer held back, and when
the client hung up on it) and to inject faults (``faults.py``).

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
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from adapters.sandbox.faults import STRATEGIES, Fault, FaultConfig, FaultError, FaultPlan
from adapters.sandbox.feed import render_feed, render_post
from adapters.sandbox.store import TOKEN_STATES, PlatformStore, Refusal
from core.domain.errors import UserError


@dataclass
class HeldAnswer:
    """One answer the platform held back (``hold_after_accept``, ``trickle_after_accept``)."""

    #: The post's id, or the upload's (``media-N``).
    post_id: str
    fault: str
    #: Seconds from the post's acceptance until the client closed its connection; None
    #: while it has not (or if it waited for the whole answer).
    client_closed_after: float | None = None
    #: Whether the whole answer was sent.
    answered: bool = False


class PlatformHTTPServer(ThreadingHTTPServer):
    """The threaded HTTP server holding the platform's state; tracks open connections."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: Path | None = None) -> None:
        self.faults = FaultPlan()
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

    # -- plumbing ---------------------------------------------------------------------

    def _answer(self, method: str) -> None:
        split = urlsplit(self.path)
        parts = [part for part in split.path.split("/") if part]
        query = {name: values[-1] for name, values in parse_qs(split.query).items()}
        raw = self._read_body()
        try:
            if parts[:1] == ["api"]:
                time.sleep(self.server.faults.config.latency)
                self._platform_api(method, parts[1:], query, raw)
            elif parts[:1] == ["sandbox"]:
                self._admin_api(method, parts[1:], query, raw)
            elif method == "GET" and not parts:
                self._send_html(200, render_feed(self.server.store.posts()))
            elif method == "GET" and len(parts) == 2 and parts[0] == "p":
                post = self.server.store.get(parts[1])
                if post is None:
                    raise Refusal(404, "not_found", f"no post {parts[1]!r}")
                self._send_html(200, render_post(post))
            elif method == "GET" and len(parts) == 2 and parts[0] == "media":
                found = self.server.store.media_file(parts[1])
                if found is None:
                    raise Refusal(404, "not_found", f"no media {parts[1]!r}")
                media, data = found
                self._send(200, data, media.mime)
            else:
                raise Refusal(404, "not_found", f"no route {method} {split.path}")
        except Refusal as refusal:
            self._send_json(refusal.status, refusal.body)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _json_body(self, raw: bytes) -> Any:
        try:
            return json.loads(raw or b"null")
        except ValueError as exc:
            raise Refusal(400, "bad_request", f"the body is not valid JSON: {exc}") from exc

    def _base_url(self) -> str:
        host = self.headers.get("Host")
        return f"http://{host}" if host else self.server.url

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode(), "application/json", headers)

    def _send_html(self, status: int, page: str) -> None:
        self._send(status, page.encode(), "text/html; charset=utf-8")

    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    # -- the platform API -------------------------------------------------------------

    def _platform_api(self, method: str, parts: list[str], query: dict[str, str], raw: bytes) -> None:
        if len(parts) not in (2, 3) or parts[0] not in STRATEGIES or parts[1] not in ("posts", "media", "me"):
            raise Refusal(404, "not_found", f"no route {method} {self.path}")
        strategy, route = parts[0], (method, *parts[1:])
        if route == ("GET", "me"):
            # Who the token is: what `herald channel test` asks, changing nothing.
            token = self._token()
            self.server.store.check_token(token)
            self._send_json(200, {"strategy": strategy, "token_ends": token[-4:]})
        elif route == ("GET", "posts"):
            self._search(strategy, query)
        elif route == ("POST", "posts"):
            self._create_post(strategy, raw)
        elif route == ("POST", "media"):
            self._upload_media(strategy, raw)
        elif route[:2] == ("GET", "media") and len(route) == 3:
            media = self.server.store.media(parts[2])
            if media is None or media.strategy != strategy:
                raise Refusal(404, "not_found", f"no media {parts[2]!r}")
            self._send_json(200, media.public_json(self._base_url()))
        elif len(parts) == 2:
            raise Refusal(405, "method_not_allowed", f"{method} is not allowed here")
        else:
            raise Refusal(404, "not_found", f"no route {method} {self.path}")

    def _search(self, strategy: str, query: dict[str, str]) -> None:
        if strategy == "none":
            raise Refusal(404, "not_found", "this platform cannot be searched")
        if not query.get("key"):
            raise Refusal(400, "bad_request", "give the key to search for: ?key=<key>")
        config = self.server.faults.config
        lag = config.search_lag if strategy in config.strategies else 0.0
        found = self.server.store.search(strategy, query["key"], lag)
        base_url = self._base_url()
        self._send_json(200, {"posts": [post.public_json(base_url) for post in found]})

    def _create_post(self, strategy: str, raw: bytes) -> None:
        faults = self.server.faults
        config = faults.config
        fault = faults.choose(strategy, "posts").fault
        if self._refused_before_accept(fault, config):
            return
        token = self._token()
        self.server.store.check_token(token)
        body = self._json_body(raw)
        if not isinstance(body, dict):
            raise Refusal(400, "bad_request", "the body must be a JSON object")
        forget_after = config.forget_keys_after if strategy in config.strategies else None
        post, created = self.server.store.accept(
            strategy, body, token, self.headers.get("Idempotency-Key") or None, forget_after
        )
        answer = post.public_json(self._base_url())
        body = {name: answer[name] for name in ("id", "url", "created_at")}
        self._answer_accepted(fault, config, post.id, 201 if created else 200, body)

    def _upload_media(self, strategy: str, raw: bytes) -> None:
        """Take one file (the raw body, typed by ``Content-Type``) to attach to a post later."""
        faults = self.server.faults
        config = faults.config
        decision = faults.choose(strategy, "media")
        if self._refused_before_accept(decision.fault, config):
            return
        token = self._token()
        self.server.store.check_token(token)
        if decision.fault is Fault.REFUSE_MEDIA:
            raise Refusal(422, "media_invalid", "the platform refused the file")
        mime = (self.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
        processing = config.media_processing_seconds if strategy in config.strategies else 0.0
        media = self.server.store.accept_media(strategy, raw, mime, token, processing, decision.processing_fails)
        self._answer_accepted(decision.fault, config, media.id, 201, media.public_json(self._base_url()))

    def _token(self) -> str:
        authorization = self.headers.get("Authorization", "")
        return authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""

    def _refused_before_accept(self, fault: Fault | None, config: FaultConfig) -> bool:
        """Answer a fault that stores nothing (429, 503); True when one was answered."""
        if fault is Fault.RATE_LIMIT:
            self._send_json(429, {"error": "rate_limited"}, {"Retry-After": str(config.retry_after)})
            return True
        if fault is Fault.ERROR_BEFORE_ACCEPT:
            self._send_json(503, {"error": "unavailable", "detail": "nothing was stored"})
            return True
        return False

    def _answer_accepted(
        self, fault: Fault | None, config: FaultConfig, stored_id: str, status: int, body: Any
    ) -> None:
        """Answer a request whose post or upload is stored, as its fault (if any) says."""
        if fault is Fault.DROP_AFTER_ACCEPT:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault is Fault.ERROR_AFTER_ACCEPT:
            self._send_json(500, {"error": "internal_error"})
        elif fault is Fault.HOLD_AFTER_ACCEPT:
            self._hold(stored_id, fault, config.hold_seconds, status, body)
        elif fault is Fault.TRICKLE_AFTER_ACCEPT:
            self._trickle(stored_id, fault, config.trickle_interval, status, body)
        else:
            self._send_json(status, body)

    def _hold(self, post_id: str, fault: Fault, seconds: float, status: int, body: Any) -> None:
        """Answer after ``seconds``, watching the connection meanwhile for the client hanging up."""
        held = self._held(post_id, fault)
        started = time.monotonic()
        if self._client_hung_up(seconds):
            held.client_closed_after = time.monotonic() - started
            self.close_connection = True
            return
        self._send_json(status, body)
        held.answered = True

    def _trickle(self, post_id: str, fault: Fault, interval: float, status: int, body: Any) -> None:
        """Send the headers, then the body one byte every ``interval`` seconds until done or hung up on."""
        held = self._held(post_id, fault)
        started = time.monotonic()
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        for offset in range(len(payload)):
            if self._client_hung_up(interval):
                break
            try:
                self.wfile.write(payload[offset : offset + 1])
            except OSError:  # reset by the client
                break
        else:
            held.answered = True
            return
        held.client_closed_after = time.monotonic() - started
        self.close_connection = True

    def _held(self, post_id: str, fault: Fault) -> HeldAnswer:
        held = HeldAnswer(post_id=post_id, fault=str(fault))
        with self.server.held_lock:
            self.server.held.append(held)
        return held

    def _client_hung_up(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client closes (or resets) its end."""
        if seconds <= 0:
            return False
        connection = self.connection
        previous = connection.gettimeout()
        until = time.monotonic() + seconds
        try:
            connection.settimeout(seconds)
            # A peek sees the end of the stream without consuming a request sent meanwhile.
            if connection.recv(1, socket.MSG_PEEK) == b"":
                return True
            time.sleep(max(until - time.monotonic(), 0.0))  # bytes, not a hang-up: hold on
            return False
        except TimeoutError:
            return False
        except OSError:
            return True
        finally:
            with contextlib.suppress(OSError):
                connection.settimeout(previous)

    # -- the admin API (the test oracle) ----------------------------------------------

    def _admin_api(self, method: str, parts: list[str], query: dict[str, str], raw: bytes) -> None:
        store, faults = self.server.store, self.server.faults
        route = (method, *parts[:1])
        if route == ("GET", "health") and len(parts) == 1:
            # The pid tells `herald run` that the sandbox answering is the one it started.
            self._send_json(200, {"ok": True, "pid": os.getpid(), "state": str(store.state or "")})
        elif route == ("GET", "posts") and len(parts) == 1:
            strategy = query.get("strategy")
            if strategy is not None and strategy not in STRATEGIES:
                raise Refusal(400, "bad_request", f"unknown strategy {strategy!r}; use one of {list(STRATEGIES)}")
            self._send_json(200, {"posts": [post.admin_json() for post in store.posts(strategy)]})
        elif route == ("GET", "media") and len(parts) == 1:
            self._send_json(200, {"media": [media.admin_json() for media in store.uploads()]})
        elif route == ("DELETE", "posts") and len(parts) == 1:
            store.reset()
            faults.configure(FaultConfig())
            with self.server.held_lock:
                self.server.held.clear()
            self._send_json(200, {"ok": True})
        elif route == ("GET", "held") and len(parts) == 1:
            with self.server.held_lock:
                held = [asdict(answer) for answer in self.server.held]
            self._send_json(200, {"held": held})
        elif route == ("GET", "faults") and len(parts) == 1:
            self._send_json(200, faults.config.to_json())
        elif route == ("PUT", "faults") and len(parts) == 1:
            try:
                config = FaultConfig.from_json(self._json_body(raw))
            except FaultError as exc:
                raise Refusal(400, "bad_request", str(exc)) from exc
            faults.configure(config)
            self._send_json(200, config.to_json())
        elif route == ("PUT", "tokens") and len(parts) == 2:
            body = self._json_body(raw)
            state = body.get("state") if isinstance(body, dict) else None
            if state not in TOKEN_STATES:
                raise Refusal(400, "bad_request", f'send {{"state": one of {list(TOKEN_STATES)}}}')
            store.set_token(parts[1], state)
            self._send_json(200, {"token": parts[1], "state": state})
        else:
            raise Refusal(404, "not_found", f"no route {method} /sandbox/{'/'.join(parts)}")


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

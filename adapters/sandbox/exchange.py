"""One request to the sandbox platform and its answer, with the faults that touch it.

Every API the sandbox speaks answers through an :class:`Exchange`: its own (``api.py``),
Mastodon's (``mastodon.py``) and Bluesky's (``bluesky.py``). The faults are drawn once per
new post or upload (``FaultPlan.choose``) and answered here, the same way for all of
them: a refusal before anything is stored (429, 503), or, once the post or upload is
stored, an answer lost (the connection closed), a 500, an answer held back or trickled
out a byte at a time. Each API only says how it words those answers (:class:`FaultAnswers`).
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from adapters.sandbox.faults import Fault, FaultConfig, FaultPlan
from adapters.sandbox.limiter import RateLimiter
from adapters.sandbox.store import PlatformStore

if TYPE_CHECKING:
    from adapters.sandbox.server import PlatformRequestHandler


@dataclass(frozen=True)
class Answer:
    """A JSON answer: its status, body and extra headers."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


class FaultAnswers(Protocol):
    """How one API words the answers the faults give (its own error bodies and headers)."""

    def rate_limited(self, retry_after: int) -> Answer:
        """``rate_limit``: nothing stored; try again in ``retry_after`` seconds."""
        ...

    def unavailable(self) -> Answer:
        """``error_before_accept``: nothing stored."""
        ...

    def internal_error(self) -> Answer:
        """``error_after_accept``: stored, and then the platform failed."""
        ...


@dataclass
class HeldAnswer:
    """One answer the platform held back (``hold_after_accept``, ``trickle_after_accept``)."""

    #: The post's id, or the upload's.
    post_id: str
    fault: str
    #: Seconds from the post's acceptance until the client closed its connection; None
    #: while it has not (or if it waited for the whole answer).
    client_closed_after: float | None = None
    #: Whether the whole answer was sent.
    answered: bool = False


class Exchange:
    """One request (method, path, query, body, headers) and the ways to answer it."""

    def __init__(
        self, handler: PlatformRequestHandler, method: str, parts: list[str], query: dict[str, str], raw: bytes
    ) -> None:
        self._handler = handler
        self.method = method
        #: The path's segments, e.g. ``["api", "native", "posts"]``.
        self.parts = parts
        #: The query's parameters, the last value of each.
        self.query = query
        #: The body as sent.
        self.raw = raw
        self.headers = handler.headers

    @property
    def path(self) -> str:
        return self._handler.path

    @property
    def store(self) -> PlatformStore:
        return self._handler.server.store

    @property
    def faults(self) -> FaultPlan:
        return self._handler.server.faults

    @property
    def rate(self) -> RateLimiter:
        return self._handler.server.rate

    def bearer(self) -> str:
        """The token of ``Authorization: Bearer <token>``; empty when there is none."""
        authorization = self.headers.get("Authorization", "")
        return authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""

    def content_type(self) -> str:
        """The body's MIME type, lower case, without its parameters."""
        return (self.headers.get("Content-Type") or "").partition(";")[0].strip().lower()

    def base_url(self) -> str:
        """Where the client reached the platform, e.g. ``http://127.0.0.1:8025``."""
        host = self.headers.get("Host")
        return f"http://{host}" if host else self._handler.server.url

    # -- answers ----------------------------------------------------------------------

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self.send(status, json.dumps(body).encode(), "application/json", headers)

    def send_answer(self, answer: Answer) -> None:
        self.send_json(answer.status, answer.body, answer.headers)

    def send_html(self, status: int, page: str) -> None:
        self.send(status, page.encode(), "text/html; charset=utf-8")

    def send(self, status: int, payload: bytes, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        handler = self._handler
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)

    # -- the faults -------------------------------------------------------------------

    def refused_before_accept(self, fault: Fault | None, config: FaultConfig, wording: FaultAnswers) -> bool:
        """Answer a fault that stores nothing (429, 503); True when one was answered."""
        if fault is Fault.RATE_LIMIT:
            self.send_answer(wording.rate_limited(config.retry_after))
            return True
        if fault is Fault.ERROR_BEFORE_ACCEPT:
            self.send_answer(wording.unavailable())
            return True
        return False

    def over_rate(self, account: str, wording: FaultAnswers) -> bool:
        """Answer 429 when a new post of ``account`` goes past the platform's rate limit
        (``limiter.py``), with the whole seconds until it has room; True when answered."""
        wait = self.rate.admit(account)
        if wait is None:
            return False
        self.send_answer(wording.rate_limited(max(1, math.ceil(wait))))
        return True

    def answer_accepted(
        self, fault: Fault | None, config: FaultConfig, stored_id: str, answer: Answer, wording: FaultAnswers
    ) -> None:
        """Answer a request whose post or upload is stored, as its fault (if any) says."""
        if fault is Fault.DROP_AFTER_ACCEPT:
            self._handler.close_connection = True
            self._handler.connection.shutdown(socket.SHUT_RDWR)
        elif fault is Fault.ERROR_AFTER_ACCEPT:
            self.send_answer(wording.internal_error())
        elif fault is Fault.HOLD_AFTER_ACCEPT:
            self._hold(stored_id, fault, config.hold_seconds, answer)
        elif fault is Fault.TRICKLE_AFTER_ACCEPT:
            self._trickle(stored_id, fault, config.trickle_interval, answer)
        else:
            self.send_answer(answer)

    def _hold(self, post_id: str, fault: Fault, seconds: float, answer: Answer) -> None:
        """Answer after ``seconds``, watching the connection meanwhile for the client hanging up."""
        held = self._held(post_id, fault)
        started = time.monotonic()
        if self._client_hung_up(seconds):
            held.client_closed_after = time.monotonic() - started
            self._handler.close_connection = True
            return
        self.send_answer(answer)
        held.answered = True

    def _trickle(self, post_id: str, fault: Fault, interval: float, answer: Answer) -> None:
        """Send the headers, then the body one byte every ``interval`` seconds until done or hung up on."""
        held = self._held(post_id, fault)
        started = time.monotonic()
        payload = json.dumps(answer.body).encode()
        handler = self._handler
        handler.send_response(answer.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        for offset in range(len(payload)):
            if self._client_hung_up(interval):
                break
            try:
                handler.wfile.write(payload[offset : offset + 1])
            except OSError:  # reset by the client
                break
        else:
            held.answered = True
            return
        held.client_closed_after = time.monotonic() - started
        handler.close_connection = True

    def _held(self, post_id: str, fault: Fault) -> HeldAnswer:
        held = HeldAnswer(post_id=post_id, fault=str(fault))
        server = self._handler.server
        with server.held_lock:
            server.held.append(held)
        return held

    def _client_hung_up(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client closes (or resets) its end."""
        if seconds <= 0:
            return False
        connection = self._handler.connection
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

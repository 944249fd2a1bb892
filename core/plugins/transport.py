"""httpx transport errors mapped once, for every adapter, and the client they come from.

A connection that was never made provably sent nothing; anything that failed after the
request may have been written could have reached the platform. Under a call's deadline
(``core.plugins.deadline``) the transport knows more: whether any byte of a request of
that call was written at all. Once one was, no later failure of the call can prove that
nothing landed – a first request may have created the post before a second one failed to
connect – so every failure is ``Ambiguous``; before, every failure is ``NotSent``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TypeVar

import httpx

from core.domain.errors import Ambiguous, NotSent, PublishError
from core.plugins.deadline import Deadline, DeadlineTransport

T = TypeVar("T")

#: Failures before a single byte of the request can have reached the platform.
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


@cache
def http_client(timeout: float) -> httpx.Client:
    """The process's one long-lived client: a kept-alive request costs ~0.5 ms, a new
    client ~25 ms. Its timeout bounds every phase of a request; a call's deadline
    (``core.runtime.calls``) bounds the whole call."""
    return httpx.Client(transport=DeadlineTransport(), timeout=httpx.Timeout(timeout), follow_redirects=False)


def transport_outcome(exc: httpx.TransportError, deadline: Deadline | None = None) -> PublishError:
    """The publish outcome of an httpx transport error: NotSent or Ambiguous.

    Args:
        exc: what the client raised.
        deadline: the call's deadline, which knows whether the call wrote anything.
    """
    sent = deadline is not None and deadline.sent
    if deadline is not None and deadline.cut:
        if sent:
            return Ambiguous("the call's deadline passed after a request was written")
        return NotSent("the call's deadline passed before any request was written")
    if isinstance(exc, _NEVER_SENT) and not sent:
        return NotSent(f"could not connect: {exc!r}")
    return Ambiguous(f"no answer after sending: {exc!r}")


def call_platform(call: Callable[[], T]) -> T:
    """Run one adapter call, turning httpx transport errors into NotSent or Ambiguous.

    It sets no deadline: a call that must end by one goes through
    ``core.runtime.calls.call_adapter``.

    Raises:
        NotSent: the connection was never made.
        Ambiguous: the request may have been written before the failure.
    """
    try:
        return call()
    except httpx.TransportError as exc:
        raise transport_outcome(exc) from exc

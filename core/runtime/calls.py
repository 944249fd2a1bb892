"""One adapter call under its deadline, and its outcome (§5, §6 steps 6–8).

The deadline is fixed when the call starts and enforced at the transport
(``core.plugins.deadline``): every request the adapter makes through ``ctx.client`` ends
by it, and when it passes the request in flight is cut and its connection aborted, so
nothing of the call can reach the platform afterwards – the grace window rests on that.

The call runs on the caller's thread: handing it to a pool would cost more than a
kept-alive request. The adapter's own Python code is not pre-empted (a thread cannot be
stopped safely), but it cannot reach the platform once the deadline has passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import httpx

from core.domain.errors import AdapterError, HeraldError, NotSent
from core.plugins.adapter import PublishContext, UploadContext, VerifyContext
from core.plugins.deadline import Deadline, bounded_by
from core.plugins.transport import transport_outcome

T = TypeVar("T")
#: The call's context: a ``PublishContext``, or an ``UploadContext`` for media.
C = TypeVar("C", PublishContext, UploadContext, VerifyContext)


def call_adapter(
    fn: Callable[[C], T],
    ctx: C,
    timeout: float,
    *,
    now: Callable[[], float] = time.monotonic,
) -> T:
    """Run one adapter call (``adapter.publish``, ``adapter.find``, ...) that must end
    within ``timeout`` seconds, and return what it returned.

    Args:
        fn: the adapter's method (``publish``, ``find``, ``upload``, ``media_ready``).
        ctx: its context; ``ctx.client`` is herald's client (``http_client``).
        timeout: seconds from now to the call's deadline.
        now: the monotonic clock the deadline is read from (tests inject one).

    Raises:
        NotSent: the deadline passed before any byte of a request was written (a call
            whose deadline has already passed is not run at all), or the platform could
            not be reached before anything was written.
        Ambiguous: a transport error or the deadline after a request byte was written.
        PublishError: the adapter's own outcome, unchanged; so is any other HeraldError.
        AdapterError: the adapter raised anything else (a bug); ``sent`` says whether
            any request byte was written during the call.
    """
    deadline = Deadline(at=now() + timeout, now=now)
    if timeout <= 0:
        raise NotSent(f"the call's deadline ({timeout:g}s) had passed before it began; it was not run")
    with bounded_by(deadline):
        try:
            return fn(ctx)
        except HeraldError:
            raise
        except httpx.TransportError as exc:
            raise transport_outcome(exc, deadline) from exc
        except Exception as exc:
            raise AdapterError(f"the adapter raised {type(exc).__name__}: {exc}", sent=deadline.sent) from exc

"""One adapter call under its deadline, and its outcome (§5, §6 steps 6–8).

The deadline is fixed when the call starts and enforced at the transport
(``core.plugins.deadline``): every request the adapter makes through ``ctx.client`` ends
by it, and when it passes the request in flight is cut and its connection aborted, so
nothing of the call can reach the platform afterwards – the grace window rests on that.

The call runs on a thread of its own (``_calls``), and the caller waits for it until the
deadline (and a moment for the cut to land): an adapter stuck in its own Python code,
which no transport can stop, is left behind rather than holding the job past its lease –
it cannot reach the platform once the deadline has passed. The hand-off costs less than
it saves: measured back to back (``bench.throughput``), the throughput ratio on PostgreSQL
was 0.52 with calls on the job's own thread and 0.61–0.62 with them here (SQLite: 0.65
and 0.61–0.62).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

import httpx

from core.domain.errors import AdapterError, HeraldError, NotSent
from core.plugins.adapter import PublishContext
from core.plugins.deadline import Deadline, bounded_by
from core.plugins.transport import transport_outcome

T = TypeVar("T")

#: Threads that run platform calls, so that a call stuck past its deadline can be left.
_calls = ThreadPoolExecutor(max_workers=64, thread_name_prefix="herald-call")

#: How long past its deadline a call is waited for: the cut itself takes a moment.
CUT_SLACK = 0.5


def call_adapter(
    fn: Callable[[PublishContext], T],
    ctx: PublishContext,
    timeout: float,
    *,
    now: Callable[[], float] = time.monotonic,
) -> T:
    """Run one adapter call (``adapter.publish``, ``adapter.find``, ...) that must end
    within ``timeout`` seconds, and return what it returned.

    Args:
        fn: the adapter's method.
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
    future = _calls.submit(contextvars.copy_context().run, _run, fn, ctx, deadline)
    try:
        return future.result(timeout=timeout + CUT_SLACK)
    except FutureTimeout:
        if future.cancel():  # never started: a queued call is not run later
            raise NotSent(f"the call waited {timeout:g}s for a thread and was not run") from None
        raise AdapterError(
            f"the adapter was still running {timeout + CUT_SLACK:g}s after the call began; left behind",
            sent=deadline.sent,
        ) from None


def _run(fn: Callable[[PublishContext], T], ctx: PublishContext, deadline: Deadline) -> T:
    if deadline.remaining() <= 0:
        raise NotSent("the call's deadline passed while it waited for a thread; it was not run")
    with bounded_by(deadline):
        try:
            return fn(ctx)
        except HeraldError:
            raise
        except httpx.TransportError as exc:
            raise transport_outcome(exc, deadline) from exc
        except Exception as exc:
            raise AdapterError(f"the adapter raised {type(exc).__name__}: {exc}", sent=deadline.sent) from exc

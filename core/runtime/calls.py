"""One adapter call under the hard timeout (placeholder until the transport deadline lands)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from core.domain.errors import AdapterError, Ambiguous, HeraldError
from core.plugins.adapter import PublishContext
from core.plugins.transport import call_platform

T = TypeVar("T")
_calls = ThreadPoolExecutor(max_workers=64, thread_name_prefix="herald-call")


def call_adapter(fn: Callable[[PublishContext], T], ctx: PublishContext, timeout: float) -> T:
    future = _calls.submit(call_platform, lambda: fn(ctx))
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise Ambiguous(f"no answer within the hard timeout of {timeout:g}s") from None
    except HeraldError:
        raise
    except Exception as exc:
        raise AdapterError(f"{type(exc).__name__}: {exc}", sent=True) from exc

"""When to try a delivery again: exponential backoff with full jitter, honouring Retry-After."""

from __future__ import annotations

import random


def retry_delay(
    attempts: int,
    *,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before the next attempt.

    Args:
        attempts: attempts made so far (1 after the first failure).
        base: the first delay; each attempt doubles it, up to ``cap``.
        cap: the longest delay.
        retry_after: the platform's own ``Retry-After``; never retried sooner.
        rng: random source for the jitter (tests pass a seeded one).

    The jitter spreads a burst of failures so their retries do not arrive together; it
    lies in the upper half of the exponential step so a retry is never immediate.
    """
    step = min(cap, base * 2 ** min(max(0, attempts - 1), 64))
    delay: float = step / 2 + (rng or random).uniform(0, step / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay

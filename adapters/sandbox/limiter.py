"""The sandbox platform's rate limit: a sliding window per account, as a platform keeps one.

Off by default. ``PUT /sandbox/rate {"count": 10, "per_seconds": 3}`` makes every API the
sandbox speaks take at most ``count`` new posts from one account in any ``per_seconds``
(a post counts when it is let through); one more is answered 429 with a ``Retry-After``
of the whole seconds until the window has room, and nothing is stored. An account is
what a platform counts: the bearer token (the sandbox's own API, Mastodon's), the app
password behind a Bluesky session. ``GET /sandbox/rate`` tells the setting and how many
posts the limit refused, so a benchmark counts the 429s herald earned; ``DELETE
/sandbox/posts`` switches it off and forgets them.

Unlike the ``rate_limit`` fault, which refuses a share of posts at random, this one
refuses exactly what goes past the rate: herald pacing itself to the same rate earns none.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapters.sandbox.faults import FaultError


@dataclass(frozen=True)
class RateConfig:
    """The limit ``PUT /sandbox/rate`` sets; ``count`` None: no limit."""

    count: int | None = None
    per_seconds: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "per_seconds": self.per_seconds}

    @classmethod
    def from_json(cls, body: object) -> RateConfig:
        """Raises: FaultError: not an object, an unknown field, or a value that is no rate."""
        if not isinstance(body, Mapping):
            raise FaultError('the rate must be a JSON object, e.g. {"count": 10, "per_seconds": 3}')
        unknown = sorted(set(body) - {"count", "per_seconds"})
        if unknown:
            raise FaultError(f"unknown rate field(s) {unknown}; known fields: ['count', 'per_seconds']")
        count = body.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise FaultError(f"count is the posts an account may make in the window (1 or more, or null): {count!r}")
        per = body.get("per_seconds", 1.0)
        if isinstance(per, bool) or not isinstance(per, int | float) or not math.isfinite(per) or per <= 0:
            raise FaultError(f"per_seconds is the window in seconds and must be above 0, got {per!r}")
        return cls(count, float(per))


class RateLimiter:
    """Sliding windows of accepted posts, one per account; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.config = RateConfig()
        self._windows: dict[str, deque[float]] = {}
        self._refused = 0
        self._admitted = 0

    def configure(self, config: RateConfig) -> None:
        """Replace the limit; the windows and the counts start afresh."""
        with self._lock:
            self.config = config
            self._windows.clear()
            self._refused = self._admitted = 0

    def admit(self, account: str) -> float | None:
        """Let one post of ``account`` through, or say in how many seconds the window has room.

        Returns:
            None: admitted (and counted in the window). Else the seconds to wait.
        """
        with self._lock:
            count, per = self.config.count, self.config.per_seconds
            if count is None:
                return None
            now = time.monotonic()
            window = self._windows.setdefault(account, deque())
            while window and window[0] <= now - per:
                window.popleft()
            if len(window) >= count:
                self._refused += 1
                return window[0] + per - now
            window.append(now)
            self._admitted += 1
            return None

    def to_json(self) -> dict[str, Any]:
        """The setting, and how many posts it let through and refused since it was set."""
        with self._lock:
            return {**self.config.to_json(), "admitted": self._admitted, "refused": self._refused}

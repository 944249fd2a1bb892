"""What an adapter declares of a platform's posting rate: :class:`Rate`, and its scope.

A platform that answers a burst with 429s says, in its docs, how many posts it takes in
a window (Mastodon: 300 statuses in 3 hours per account). An adapter declares those
windows (``Adapter.rates``); herald keeps every one of them when it sends, so a backlog
after an outage goes out at the platform's pace (``core.runtime.pacing``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from core.domain.errors import ConfigError


class RateScope(StrEnum):
    """Whose posts a platform's rate counts."""

    #: Each channel's own: the platform counts one account's posts (its token), or one chat's.
    CHANNEL = "channel"
    #: Every channel of the adapter together: the platform counts one app's or one bot's.
    PLATFORM = "platform"


#: A rate as people write it: ``COUNT/SECONDS`` (``10/3``, ``300/10800s``).
_RATE_TEXT = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*s?\s*")


@dataclass(frozen=True)
class Rate:
    """A sustained rate a platform enforces on posting: at most ``count`` posts in any
    ``per_seconds``, counted per ``scope``.

    After an outage herald sends a channel's overdue posts no faster than every rate its
    adapter declares (``Adapter.rates``) allows, so a backlog goes out paced rather than
    as one burst the platform answers with 429s (``core.runtime.pacing``).
    """

    count: int
    per_seconds: float
    scope: RateScope = RateScope.CHANNEL

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ConfigError(f"a rate's count must be a whole number of posts, at least 1, not {self.count!r}")
        if not (isinstance(self.per_seconds, int | float) and math.isfinite(self.per_seconds) and self.per_seconds > 0):
            raise ConfigError(f"a rate's per_seconds must be a positive number of seconds, not {self.per_seconds!r}")

    @classmethod
    def parse(cls, text: str, scope: RateScope = RateScope.CHANNEL) -> Rate:
        """A rate written ``COUNT/SECONDS``: ``10/3`` is ten posts in any three seconds.

        Raises:
            ConfigError: it is not written so, or its numbers cannot be a rate.
        """
        found = _RATE_TEXT.fullmatch(text)
        if found is None:
            raise ConfigError(f"rate {text!r} is not COUNT/SECONDS: write e.g. 10/3 for ten posts in any 3 seconds")
        return cls(int(found[1]), float(found[2]), scope)

    def __str__(self) -> str:
        return f"{self.count} per {self.per_seconds:g}s"


def rate_text(value: str) -> str | None:
    """A check: ``value`` is a rate, ``COUNT/SECONDS`` (:meth:`Rate.parse`)."""
    try:
        Rate.parse(value)
    except ConfigError:
        return "is not a rate COUNT/SECONDS (10/3: ten posts in any 3 seconds)"
    return None

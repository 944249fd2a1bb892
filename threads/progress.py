"""How far a thread got on one channel: published parts out of all its parts (§10).

A thread that stopped part-way shows ``3/5``, not a plain failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.domain.states import PartState


@dataclass(frozen=True)
class Progress:
    """Parts the platform confirmed, out of the thread's parts."""

    published: int
    total: int

    def __str__(self) -> str:
        return f"{self.published}/{self.total}"

    @property
    def started(self) -> bool:
        """Some part is on the platform."""
        return self.published > 0

    @property
    def complete(self) -> bool:
        return self.published == self.total


def progress(states: Iterable[PartState]) -> Progress:
    """The progress of a delivery from the states of its parts, in any order."""
    seen = list(states)
    return Progress(sum(state is PartState.PUBLISHED for state in seen), len(seen))

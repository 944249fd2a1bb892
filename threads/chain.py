"""The reply chain of a thread, and how a text becomes its parts (§10).

Part *i* replies to part *i−1*'s platform id and names the root – part 0 – for
platforms that need both. Resume needs nothing more: the ids of the parts that landed
are stored, so a part sent on a later attempt chains to the ids the platform gave, not
to anything recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.domain.errors import HeraldError

#: The line that separates two parts in a parts file.
SEPARATOR = "---"


class ChainBroken(HeraldError):
    """A part's parent has no stored platform id: replying would orphan it."""


def reply_targets(landed: Mapping[int, str], idx: int) -> tuple[str | None, str | None]:
    """What part ``idx`` replies to, and the root of its thread.

    Args:
        landed: platform ids of the parts that landed, by part index.
        idx: the part about to be sent, 0 for the first.

    Returns:
        ``(reply_to, root)``: both None for the first part; else part ``idx - 1``'s id
        and part 0's id.

    Raises:
        ChainBroken: part ``idx - 1`` or part 0 has not landed. Parts are sent in order,
            so this means a caller skipped one; sending anyway would start a new thread.
    """
    if idx < 0:
        raise ValueError(f"a part index is never negative, got {idx}")
    if idx == 0:
        return None, None
    missing = [i for i in (0, idx - 1) if i not in landed]
    if missing:
        raise ChainBroken(f"part {idx} cannot be sent: part {missing[0]} has no platform id yet")
    return landed[idx - 1], landed[0]


def split_parts(text: str) -> list[str]:
    """The parts of a parts file: chunks separated by a line holding only ``---``.

    Each part is stripped of surrounding blank space; empty parts (a separator at the
    start or end, or two in a row) are dropped.
    """
    parts: list[str] = []
    chunk: list[str] = []
    for line in text.splitlines():
        if line.strip() == SEPARATOR:
            parts.append("\n".join(chunk).strip())
            chunk = []
        else:
            chunk.append(line)
    parts.append("\n".join(chunk).strip())
    return [part for part in parts if part]

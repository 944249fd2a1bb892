"""A post's parts as people give them: ``--text`` for a one-part post, ``--part`` for
each part of a thread, or a parts file – one way at a time (``create_post`` refuses an
empty part, whichever front door sent it).

Mixing them used to make a thread silently (``--text a --part b``), and an empty part
was dropped without a word: either way the post published was not the one asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.domain.errors import UserError
from threads.chain import split_parts


def gather_parts(text: str | None, parts: Sequence[str], parts_file: str | None = None) -> list[str]:
    """The parts of a post from the one way they were given.

    Args:
        text: ``--text``, the whole of a one-part post.
        parts: ``--part``, each part of a thread, in order.
        parts_file: the content of ``--parts-file`` (parts separated by a line ``---``).

    Returns:
        The parts; empty when none was given (``create_post`` says what to give).

    Raises:
        UserError: two ways mixed, an empty ``--text``, or a parts file with no text.
    """
    if text is not None and (parts or parts_file is not None):
        other = "--part" if parts else "--parts-file"
        raise UserError(
            f"--text and {other} together: use --part for each part of a thread, or --text for a one-part post"
        )
    if parts and parts_file is not None:
        raise UserError("--part and --parts-file together: give a thread's parts one way, not both")
    if text is not None:
        if not text.strip():
            raise UserError("--text is empty: give the post's text")
        return [text]
    if parts_file is not None:
        found = split_parts(parts_file)
        if not found:
            raise UserError("the parts file has no text: write each part, separated by a line ---")
        return found
    return list(parts)  # each is checked by create_post (content.checked_texts), as from any front door

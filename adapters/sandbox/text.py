"""How the platforms the sandbox plays count text: in grapheme clusters, what a reader sees
as one character (an emoji with its modifiers, a letter with its accents).

Mastodon counts a status's length in them (StatusLengthValidator: ``each_grapheme_cluster``),
Bluesky a post's (app.bsky.feed.post: ``maxGraphemes``); the ``regex`` package's ``\\X``
finds them, by Unicode's extended grapheme cluster rules.
"""

from __future__ import annotations

import regex  # type: ignore[import-untyped]


def graphemes(text: str) -> list[str]:
    """The text's grapheme clusters, in order."""
    found: list[str] = regex.findall(r"\X", text)
    return found

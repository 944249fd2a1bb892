"""Rich-text facets: the links, mentions and hashtags of a post's text, by UTF-8 byte offsets.

Bluesky's text carries no markup; a post lists ``facets``, each a byte range of the text
and what it is (bluesky-social/atproto, lexicons/app/bsky/richtext/facet.json): a
``#link`` with its ``uri``, a ``#mention`` with the ``did`` of the account (never the
handle), a ``#tag`` with the tag without its ``#``. "Facet ranges are indexed using byte
offsets into the UTF-8 encoding", start inclusive, end exclusive, and "Facets can not
overlap" (bluesky-social/bsky-docs, docs/advanced-guides/post-richtext.md).

What counts as each is what the official client detects (packages/api/src/rich-text/
detection.ts and util.ts, ``detectFacets``; the same code is in post-richtext.md), ported
here with two differences: a link needs its ``http(s)://`` (the client also links bare
domains, checked against a list of top-level domains herald does not carry), and a mention
is checked against the handle syntax (https://atproto.com/specs/handle) rather than that
list. Mentions are resolved by the caller: one the network does not know stays plain text,
as the docs advise ("If the handle can't be resolved, just skip it!", docs/advanced-guides/
posts.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex  # type: ignore[import-untyped]

from core.plugins import text_length

LINK = "app.bsky.richtext.facet#link"
MENTION = "app.bsky.richtext.facet#mention"
TAG = "app.bsky.richtext.facet#tag"

#: JavaScript's ``\b`` without the ``u`` flag: a boundary between an ASCII word character
#: and anything else (Python's own ``\b`` counts every letter, ``é`` included).
_ASCII_BOUNDARY = r"(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))"

#: ``MENTION_REGEX``: ``/(^|\s|\()(@)([a-zA-Z0-9.-]+)(\b)/g``.
_MENTION = regex.compile(r"(^|\s|\()(@)([a-zA-Z0-9.-]+)" + _ASCII_BOUNDARY)

#: The spec's reference regex for handle syntax.
HANDLE_SYNTAX = regex.compile(
    r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$"
)

#: ``URL_REGEX``'s ``http(s)://`` branch, with its ``i`` and ``m`` flags.
_LINK = regex.compile(r"(^|\s|\()(https?://\S+)", regex.IGNORECASE | regex.MULTILINE)

#: ``TAG_REGEX``: ``#`` or the full-width ``＃``, then at least one character that is not a
#: digit, a space or punctuation, and no zero-width joiner or soft hyphen anywhere.
_INVISIBLE = "\u00ad\u2060\u200a\u200b\u200c\u200d\u20e2"
_TAG = regex.compile(
    rf"(^|\s)[#＃]((?!\ufe0f)[^\s{_INVISIBLE}]*[^0-9\s\p{{P}}{_INVISIBLE}]+[^\s{_INVISIBLE}]*)?",
)

#: ``TRAILING_PUNCTUATION_REGEX``: ``/\p{P}+$/gu``.
_TRAILING_PUNCTUATION = regex.compile(r"\p{P}+$")

#: "inclusive of #, max of 64 chars" (detection.ts); the lexicon's ``tag``: "maxLength":
#: 640, "maxGraphemes": 64.
MAX_TAG_GRAPHEMES = 64
MAX_TAG_BYTES = 640

#: Resolves a handle to the DID of its account; None when the network does not know it.
Resolve = Callable[[str], str | None]


def facets_of(text: str, resolve: Resolve) -> list[dict[str, Any]]:
    """The facets of ``text``, sorted by where they start, without overlaps.

    Args:
        text: the post's text.
        resolve: turns a mentioned handle into its DID (``com.atproto.identity.resolveHandle``).
    """
    found: list[tuple[int, int, dict[str, Any]]] = []
    for start, end, handle in _mentions(text):
        did = resolve(handle.lower())
        if did is not None:
            found.append((start, end, {"$type": MENTION, "did": did}))
    found.extend((start, end, {"$type": LINK, "uri": uri}) for start, end, uri in _links(text))
    found.extend((start, end, {"$type": TAG, "tag": tag}) for start, end, tag in _tags(text))
    found.sort(key=lambda f: f[0])
    facets: list[dict[str, Any]] = []
    taken = 0
    for start, end, feature in found:
        if start < taken:
            continue  # "discard any facets which overlap each other" (post-richtext.md)
        facets.append({"index": {"byteStart": _byte(text, start), "byteEnd": _byte(text, end)}, "features": [feature]})
        taken = end
    return facets


def _mentions(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, handle)`` of each ``@handle``, in characters, the ``@`` included."""
    spans = []
    for match in _MENTION.finditer(text):
        handle = match.group(3)
        if HANDLE_SYNTAX.match(handle):
            spans.append((match.start(2), match.end(3), handle))
    return spans


def _links(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, uri)`` of each ``http(s)://`` link, less the punctuation that ends a sentence."""
    spans = []
    for match in _LINK.finditer(text):
        uri, start = match.group(2), match.start(2)
        end = start + len(uri)
        if uri[-1] in ".,;:!?":
            uri, end = uri[:-1], end - 1
        if uri.endswith(")") and "(" not in uri:
            uri, end = uri[:-1], end - 1
        spans.append((start, end, uri))
    return spans


def _tags(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, tag)`` of each hashtag, the ``#`` in the span but not in the tag."""
    spans = []
    for match in _TAG.finditer(text):
        tag = match.group(2)
        if not tag:
            continue
        tag = _TRAILING_PUNCTUATION.sub("", tag.strip())
        if not tag or text_length(tag, "graphemes") > MAX_TAG_GRAPHEMES or len(tag.encode()) > MAX_TAG_BYTES:
            continue
        start = match.start() + len(match.group(1))
        spans.append((start, start + 1 + len(tag), tag))
    return spans


def _byte(text: str, index: int) -> int:
    """The UTF-8 byte offset of character ``index`` of ``text``."""
    return len(text[:index].encode())

"""A part's record key: a TID computed from its delivery key, the same on every retry.

A Bluesky post is a record of ``app.bsky.feed.post``, whose lexicon names its key type
``"key": "tid"`` (bluesky-social/atproto, lexicons/app/bsky/feed/post.json), and the PDS
refuses a key that is not one ("Invalid record key for ...", packages/pds/src/repo/
prepare.ts). A TID (https://atproto.com/specs/tid; atproto-website, specs/tid/en.mdx) is a
64-bit integer whose top bit is 0, "encoded as ``base32-sortable``. That is, encoded with
characters ``234567abcdefghijklmnopqrstuvwxyz``", always 13 characters.

The TID's bits would be a timestamp and a random clock id, if a PDS made it; herald makes
it from a hash of the delivery key instead, so a resend names the very record the first
attempt wrote, and a repository holds one post per part at most. That is allowed: TIDs in
record keys "are not expected to be valid timestamps, can be defined arbitrarily by clients
or PDS instances, and are not validated anywhere in the network" (bluesky-social/bsky-docs,
docs/advanced-guides/timestamps.md, "Record Key TIDs"). What a reader sorts and shows by is
the record's ``createdAt``, which herald sets to the real time of sending.
"""

from __future__ import annotations

import hashlib
import re

#: The base32-sortable alphabet of TIDs, in order.
ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"

#: The spec's reference regex for TID syntax.
TID_SYNTAX = re.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")

#: Why the hash input is prefixed: the same delivery key gives a different value wherever
#: else a hash of it is taken.
_DOMAIN = b"herald/bluesky/rkey/"


def tid_for(key: str) -> str:
    """The record key of the part whose delivery key is ``key``: 63 bits of its SHA-256
    (the top bit 0), as a 13-character TID."""
    digest = hashlib.sha256(_DOMAIN + key.encode()).digest()
    return encode(int.from_bytes(digest[:8], "big") & (2**63 - 1))


def encode(value: int) -> str:
    """``value`` (0 ≤ value < 2**63) as a TID: 13 base32-sortable digits, most significant first."""
    if not 0 <= value < 2**63:
        raise ValueError(f"a TID is a 64-bit integer with its top bit 0, not {value}")
    digits = []
    for _ in range(13):
        value, digit = divmod(value, 32)
        digits.append(ALPHABET[digit])
    return "".join(reversed(digits))

"""The delivery key: natural, so a retry reproduces it by construction (§4).

It is a hash of what the caller already has – post, channel, slot, revision, part –
never a random value: a worker that crashed and one that re-drives compute the same key,
which is what lets a platform with idempotency keys recognise the second send.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
#: 25 base-36 digits carry 129 bits of the hash: more than enough, and within §4's limit.
KEY_LENGTH = 25


def delivery_key(post_id: int, channel_id: int, slot: datetime, revision: int, part_idx: int) -> str:
    """The key of one part of one delivery: ``[a-z0-9]{25}``.

    Args:
        post_id: the post's id.
        channel_id: the channel's id.
        slot: the scheduled instant (aware; normalised to UTC, so the zone it was given
            in does not change the key).
        revision: the post's revision; a republish after an edit gets a new key.
        part_idx: the part's index in its thread.
    """
    if slot.tzinfo is None:
        raise ValueError("the slot must be an aware datetime")
    instant = slot.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    material = f"herald/1|{post_id}|{channel_id}|{instant}|{revision}|{part_idx}".encode()
    number = int.from_bytes(hashlib.sha256(material).digest(), "big")
    digits = []
    for _ in range(KEY_LENGTH):
        number, digit = divmod(number, 36)
        digits.append(_ALPHABET[digit])
    return "".join(digits)

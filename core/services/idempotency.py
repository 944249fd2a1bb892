"""Idempotent create: a repeat with the same key and content answers with the first post.

A script that retries a create it never heard back from must not make a second post. A
key is scoped to the account the post's channels belong to. The ledger's unique index
over (account, key) settles two creates with one key, however concurrent: one makes the
post, the other finds the key taken and compares what it asked for with the first request.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.domain.errors import IdempotencyInProgress, IdempotencyMismatch, UserError
from core.domain.media import rows_of
from core.services.content import Content
from core.store.models import IdempotencyKey

#: Longest key accepted (the column's size).
MAX_KEY = 200


def checked_key(key: str) -> str:
    """The key as given, when it can be stored.

    Raises:
        UserError: empty or longer than :data:`MAX_KEY`.
    """
    if not key.strip():
        raise UserError("the idempotency key is empty: give a non-empty --idempotency-key, or leave it out")
    if len(key) > MAX_KEY:
        raise UserError(f"the idempotency key has {len(key)} characters; at most {MAX_KEY} are kept. Use a shorter one")
    return key


def request_of(
    content: Content,
    *,
    at: datetime | None,
    zone: str | None,
    not_before: datetime | None,
    needs_approval: bool,
    draft: bool,
    queue: bool = False,
) -> dict[str, Any]:
    """What a create asked for, in the canonical form a repeat is compared by.

    The order channels are named in does not matter; the parts' order does. A slot left
    out ("now") is kept as such, so a retried "publish now" matches its first try; so is
    "add to queue", so a retry answers the first post, not the next free slot.
    """
    request: dict[str, Any] = {
        "channels": sorted(content.channels),
        "parts": list(content.parts),
        "channel_texts": {name: list(texts) for name, texts in sorted(content.channel_texts.items())},
        "slot": None if at is None else at.astimezone(UTC).isoformat(),
        "zone": zone,
        "not_before": None if not_before is None else not_before.astimezone(UTC).isoformat(),
        "needs_approval": needs_approval,
        "draft": draft,
    }
    if queue:  # only then: a request kept before add-to-queue existed still matches its repeat
        request["queue"] = True
    if content.media is not None and any(content.media):
        # The same files (by their kept id: the same bytes) with the same alt text.
        request["media"] = [rows_of(refs) for refs in content.media]
    return request


def replayed(first: IdempotencyKey, request: dict[str, Any]) -> int:
    """The post the key's first use made, when ``request`` asks for the same thing.

    Raises:
        IdempotencyMismatch: the key was used for other content (naming what differs and the first post).
        IdempotencyInProgress: the first create with the key has not finished.
    """
    if first.post_id is None:  # only a reader outside the first create's transaction could see it so
        raise IdempotencyInProgress(
            f"a create with idempotency key {first.key!r} is still running; try again in a moment"
        )
    # Either side's fields: one kept only when set ("queue") differs where the other lacks it.
    differs = [name for name in {**first.request, **request} if first.request.get(name) != request.get(name)]
    if differs:
        raise IdempotencyMismatch(
            f"idempotency key {first.key!r} was used for post {first.post_id} with other content "
            f"({', '.join(differs)} differ); use a new key for a new post, or see `herald post show {first.post_id}`"
        )
    return first.post_id

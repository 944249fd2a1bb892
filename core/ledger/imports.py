"""Posts another system published, recorded by ``herald import`` (§13), and the one rule
that keeps them from ever being sent: an imported post is history, not work.

An imported post is written published – its delivery, its part with the platform's URL,
its publication row – with ``posts.imported_at`` set. Its slot is the time it published
on the other system, which is in the past, exactly the field the scheduler reads as
"when to send". So the marker, not the status, is what stops it: the claim's
compare-and-set and arming both read it (``core.ledger.statements.CAS``,
``core.runtime.arming.Timing``), the reconciler's queries leave it out, and every change
people make (move, cancel, approve, retry, resolve, edit) is refused by
:func:`refuse_imported`, whatever a future path might do to its status.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from core.domain.errors import Conflict
from core.domain.states import DeliveryStatus, PartState, PostStatus
from core.ledger import statements as sql
from core.store.db import inserted_ids
from core.store.models import Approval, Post, SupportAction

#: ``support_actions.action`` of an import: the timeline's first entry for the post.
IMPORTED = "imported"


def refuse_imported(post: Post) -> None:
    """Refuse any change to a post that ``herald import`` recorded.

    Raises:
        Conflict: the post was imported.
    """
    if post.imported_at is None:
        return
    raise Conflict(
        f"post {post.id} was imported: another system published it, and herald keeps only its record, "
        f"which it never sends, moves, retries or edits; to send its text again, make a new post with "
        f"`herald post edit {post.id} --republish` or `herald post create`"
    )


@dataclass(frozen=True)
class ImportedPost:
    """One copy another system published, as its import row gave it."""

    account_id: int
    channel_id: int
    text: str
    #: When it was published there: the post's slot and the part's publication time.
    published_at: datetime
    #: The IANA zone it is shown in.
    zone: str
    url: str
    #: The platform's id of the post, where the row gave one.
    platform_id: str | None
    #: Where the row came from, for the timeline: ``archive.csv, row 12``.
    origin: str


def insert_imported(s: Session, imported: Sequence[ImportedPost], now: datetime) -> list[int]:
    """Record posts another system published: each published on its one channel, with its
    publication row, marked imported, and an ``imported`` entry in its timeline. Returns
    the posts' ids, in order.

    One INSERT per table: a file of thousands of rows is a handful of statements.
    """
    post_ids = inserted_ids(
        s,
        sql.posts,
        [
            {
                "account_id": row.account_id,
                "status": PostStatus.PUBLISHED,
                "scheduled_at": row.published_at,
                "zone": row.zone,
                "parts": [{"text": row.text, "media": []}],
                "channel_texts": None,
                "not_before": None,
                "approval": Approval.NOT_REQUIRED,
                "created_at": now,
                "updated_at": now,
                "imported_at": now,
            }
            for row in imported
        ],
    )
    delivery_ids = inserted_ids(
        s,
        sql.deliveries,
        [
            {
                "post_id": post_id,
                "channel_id": row.channel_id,
                "status": DeliveryStatus.PUBLISHED,
                "confirmed_at": row.published_at,
            }
            for post_id, row in zip(post_ids, imported, strict=True)
        ],
    )
    rows = list(zip(post_ids, delivery_ids, imported, strict=True))
    if not rows:
        return []
    # No key: herald never sent it, so no attempt or read-back of herald's looks for it.
    s.execute(
        insert(sql.parts),
        [
            {
                "delivery_id": delivery_id,
                "idx": 0,
                "text": row.text,
                "media": [],
                "state": PartState.PUBLISHED,
                "platform_id": row.platform_id,
                "url": row.url,
                "published_at": row.published_at,
            }
            for _, delivery_id, row in rows
        ],
    )
    s.execute(
        insert(sql.publications),
        [
            {
                "post_id": post_id,
                "channel_id": row.channel_id,
                "slot": row.published_at,
                "revision": 1,
                "platform_id": row.platform_id or "",
                "url": row.url,
                "created_at": row.published_at,
            }
            for post_id, _, row in rows
        ],
    )
    s.execute(
        insert(cast(Table, SupportAction.__table__)),
        [
            {
                "post_id": post_id,
                "delivery_id": delivery_id,
                "action": IMPORTED,
                "part_idx": None,
                "detail": f"imported from {row.origin}: published by another system at {row.url}",
                "at": now,
            }
            for post_id, delivery_id, row in rows
        ],
    )
    return post_ids

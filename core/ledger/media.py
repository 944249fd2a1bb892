"""A part's attachments on the publish path: the kept files it sends, and their uploads.

An upload's platform id is written under the attempt's fence the moment the platform
answers (§16), so whatever happens after – the worker killed before the post, a retry, a
re-drive by the reconciler – the part attaches that upload and never sends the file again.
Only the part's rows with the same kept file count: an edit that changed the attachment at
a position uploads the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, insert, select, update

from core.domain.errors import Rejected
from core.domain.media import MediaRef
from core.domain.states import Reason, UploadState
from core.ledger.claim import Claim
from core.ledger.results import fenced
from core.plugins.adapter import MediaFile, Uploaded
from core.store import db
from core.store.blobs import Blobs
from core.store.models import Attempt, Media, MediaUpload


@dataclass(frozen=True)
class Upload:
    """An attachment the platform took for one part of one delivery."""

    position: int
    media_id: int
    platform_id: str
    ready: bool


def part_uploads(delivery_id: int, part_idx: int) -> dict[int, Upload]:
    """The uploads recorded for a part, by position."""
    with db.peeking() as conn:
        rows = conn.execute(
            select(MediaUpload.position, MediaUpload.media_id, MediaUpload.platform_id, MediaUpload.state).where(
                MediaUpload.delivery_id == delivery_id, MediaUpload.part_idx == part_idx
            )
        )
        return {r.position: Upload(r.position, r.media_id, r.platform_id, r.state is UploadState.READY) for r in rows}


def media_files(refs: Sequence[MediaRef], store: Blobs, alt_text: bool) -> list[MediaFile]:
    """The kept files of a part's attachments, in order, ready to upload.

    Args:
        alt_text: whether the platform takes alt text; a part's own alt text falls back
            to the file's kept one (``herald media add --alt``).

    Raises:
        Rejected: a file is no longer kept (``media_invalid``, naming it).
    """
    with db.peeking() as conn:
        rows = {r.id: r for r in conn.execute(select(Media.__table__).where(Media.id.in_({r.media_id for r in refs})))}
    files = []
    for ref in refs:
        row = rows.get(ref.media_id)
        if row is None or row.removed_at is not None:
            name = f"{row.filename} (media {ref.media_id})" if row is not None else f"media {ref.media_id}"
            raise Rejected(Reason.MEDIA_INVALID, f"{name} was removed from herald's storage: attach the file again")
        alt = (ref.alt if ref.alt is not None else row.alt) if alt_text else None
        files.append(
            MediaFile(
                digest=row.digest,
                mime=row.mime,
                size=row.size,
                filename=row.filename,
                alt=alt,
                width=row.width,
                height=row.height,
                duration=row.duration,
                read=_reader(store, row.digest, row.filename, ref.media_id),
            )
        )
    return files


def _reader(store: Blobs, digest: str, filename: str, media_id: int) -> Callable[[], bytes]:
    def read() -> bytes:
        try:
            return store.read(digest)
        except FileNotFoundError:
            raise Rejected(
                Reason.MEDIA_INVALID,
                f"{filename} (media {media_id}) is missing from herald's storage: attach the file again",
            ) from None

    return read


def upload_recorded(
    claim: Claim,
    delivery_id: int,
    part_idx: int,
    position: int,
    media_id: int,
    uploaded: Uploaded,
    now: datetime,
    lease: float,
) -> None:
    """Record the platform's id of an upload, under the fence (an earlier upload of another
    file at that position is replaced).

    Raises:
        FencedOut: a newer claim holds the post; nothing is written.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        conn.execute(delete(MediaUpload).where(*_at(delivery_id, part_idx, position)))
        conn.execute(
            insert(MediaUpload).values(
                delivery_id=delivery_id,
                part_idx=part_idx,
                position=position,
                media_id=media_id,
                platform_id=uploaded.platform_id,
                state=UploadState.READY if uploaded.ready else UploadState.PROCESSING,
                uploaded_at=now,
                ready_at=now if uploaded.ready else None,
            )
        )


def upload_ready(claim: Claim, delivery_id: int, part_idx: int, position: int, now: datetime, lease: float) -> None:
    """Record that the platform finished processing an upload, under the fence.

    Raises:
        FencedOut: a newer claim holds the post; nothing is written.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        conn.execute(
            update(MediaUpload)
            .where(*_at(delivery_id, part_idx, position))
            .values(state=UploadState.READY, ready_at=now)
        )


def _at(delivery_id: int, part_idx: int, position: int) -> tuple[ColumnElement[Any], ...]:
    return (MediaUpload.delivery_id == delivery_id, MediaUpload.part_idx == part_idx, MediaUpload.position == position)


def never_posted(claim: Claim, delivery_id: int, part_idx: int, now: datetime, lease: float) -> None:
    """Say in the attempts log that this attempt sends a part afresh: it was ``sending`` (so
    the claim opened a ``recover``), but its uploads were not all done, so no post of it can
    have reached the platform (a part is posted only once they are).

    Raises:
        FencedOut: a newer claim holds the post; nothing is written.
    """
    with fenced(claim.post_id, claim.fence, now, lease) as conn:
        conn.execute(
            update(Attempt)
            .where(
                Attempt.delivery_id == delivery_id,
                Attempt.part_idx == part_idx,
                Attempt.fence == claim.fence,
                Attempt.action == "recover",
            )
            .values(action="send")
        )

"""The sandbox platform's media: which files it takes, and how an upload is processed.

An upload (``POST /api/*/media``) is checked as a platform checks one – its type, how its
bytes start, its size – and stored at once. It is then ``processing`` for the fault
setting ``media_processing_seconds`` as it was at upload, and ends ``ready``, or
``failed`` when ``media_processing_fails`` was drawn for it. A post may attach up to four
uploads of its own strategy once they are ready: one still processing is answered 422
``media_not_ready``, as Mastodon answers for an attachment it has not processed yet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import filetype  # type: ignore[import-untyped]

MB = 1024 * 1024
#: Largest image the platform takes, in bytes.
MAX_IMAGE_BYTES = 8 * MB
#: Largest video the platform takes, in bytes.
MAX_VIDEO_BYTES = 40 * MB
#: Most media on one post.
MAX_ATTACHMENTS = 4
#: Longest alt text of one attachment, in characters.
MAX_ALT_CHARS = 1500

#: The MIME types an upload may have.
MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp", "video/mp4")


@dataclass(frozen=True)
class UploadLimits:
    """Which files a platform takes: their types and sizes."""

    types: tuple[str, ...]
    max_image_bytes: int
    max_video_bytes: int


#: The sandbox's own API's limits.
SANDBOX_LIMITS = UploadLimits(MEDIA_TYPES, MAX_IMAGE_BYTES, MAX_VIDEO_BYTES)


class MediaState(StrEnum):
    """Where an upload's processing is."""

    #: Stored, not yet usable: a post attaching it is answered 422 ``media_not_ready``.
    PROCESSING = "processing"
    #: A post may attach it.
    READY = "ready"
    #: Processing failed: a post attaching it is answered 422 ``media_invalid``.
    FAILED = "failed"


def is_video(mime: str) -> bool:
    return mime.startswith("video/")


def media_url(base_url: str, media_id: str) -> str:
    """Where an upload's bytes are served (``GET /media/{id}``)."""
    return f"{base_url}/media/{media_id}"


def sniffed_type(data: bytes) -> str | None:
    """The MIME type ``data`` starts like, as a platform sniffs it; None when unknown."""
    kind = filetype.guess(data)
    return str(kind.mime) if kind is not None else None


def upload_problem(data: bytes, mime: str, limits: UploadLimits = SANDBOX_LIMITS) -> str | None:
    """Why the platform refuses an upload of ``data`` sent as ``mime``; None when it takes it."""
    if not data:
        return "the file is empty"
    if mime not in limits.types:
        return f"Content-Type {mime or '(none)'!r} is not one the platform takes: {', '.join(limits.types)}"
    sniffed = sniffed_type(data)
    if sniffed != mime:
        return f"the file's bytes are not a {mime} file's ({sniffed or 'unknown type'})"
    kind, limit = ("a video", limits.max_video_bytes) if is_video(mime) else ("an image", limits.max_image_bytes)
    if len(data) > limit:
        return f"the file is {len(data)} bytes; {kind} may have at most {limit} ({limit // MB} MiB)"
    return None


@dataclass(frozen=True)
class StoredMedia:
    """One upload the platform accepted; its bytes are kept beside it by the store."""

    id: str
    strategy: str
    mime: str
    size: int
    #: SHA-256 of its bytes, hex, for the oracle: the file herald sent arrived whole.
    sha256: str
    token: str
    created_at: str
    #: Seconds it stays ``processing`` from its acceptance.
    processing_seconds: float
    #: Whether its processing ends ``failed`` rather than ``ready``.
    fails: bool
    #: ``time.monotonic()`` when it was stored: processing counts from here.
    accepted_at: float = 0.0
    #: Mastodon: the alt text given with the upload (its ``description``).
    description: str | None = None

    def state(self, now: float | None = None) -> MediaState:
        """Its state at monotonic time ``now`` (default: now)."""
        now = time.monotonic() if now is None else now
        if now - self.accepted_at < self.processing_seconds:
            return MediaState.PROCESSING
        return MediaState.FAILED if self.fails else MediaState.READY

    def public_json(self, base_url: str) -> dict[str, Any]:
        """What the platform API answers about it."""
        return {"id": self.id, "state": str(self.state()), "url": media_url(base_url, self.id)}

    def admin_json(self) -> dict[str, Any]:
        """What the oracle (``GET /sandbox/media``) lists."""
        return {
            "id": self.id,
            "strategy": self.strategy,
            "mime": self.mime,
            "size": self.size,
            "sha256": self.sha256,
            "state": str(self.state()),
            "token": self.token,
            "created_at": self.created_at,
        }

    def record(self) -> dict[str, Any]:
        """What the state file keeps: enough to know its state after a restart."""
        data = {name: getattr(self, name) for name in _RECORDED}
        if self.description is not None:
            data["description"] = self.description
        return data

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> StoredMedia:
        """An upload written by :meth:`record`; its processing counts from its creation."""
        created = datetime.fromisoformat(data["created_at"])
        accepted_at = time.monotonic() - max(0.0, (datetime.now(UTC) - created).total_seconds())
        fields = {name: data[name] for name in _RECORDED}
        return cls(**fields, accepted_at=accepted_at, description=data.get("description"))


_RECORDED = (
    "id",
    "strategy",
    "mime",
    "size",
    "sha256",
    "token",
    "created_at",
    "processing_seconds",
    "fails",
)


@dataclass(frozen=True)
class PostMedia:
    """One medium a post carries, in the post's order."""

    id: str
    alt: str | None
    mime: str

    def admin_json(self) -> dict[str, Any]:
        return {"id": self.id, "alt": self.alt, "mime": self.mime}

    def public_json(self, base_url: str) -> dict[str, Any]:
        return {**self.admin_json(), "url": media_url(base_url, self.id)}

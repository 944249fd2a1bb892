"""The parts the kit publishes: a text part, a thread's third part, a part with attachments."""

from __future__ import annotations

import hashlib
import mimetypes
import struct
import zlib
from functools import partial

from core.domain.states import Reason
from core.plugins.adapter import Adapter, MediaFile

#: The delivery key of every part the kit publishes.
KEY = "conformancekey0000000001z"
#: The platform ids a thread part replies to (digits: every platform takes them for ids).
REPLY_TO = "4242424242424242001"
ROOT = "4242424242424242000"
TEXT = "conformance"

#: The parts the kit publishes.
TEXT_PART = "a text part"
THREAD_PART = f"a thread's third part (reply_to={REPLY_TO!r}, root={ROOT!r})"
MEDIA_PART = "a part with attachments"


def refused_part(adapter: Adapter, reason: Reason) -> str | None:
    """The part the platform refuses for ``reason``; None where the adapter takes no such part."""
    if reason is Reason.MEDIA_INVALID:
        return MEDIA_PART if adapter.limits.max_media > 0 else None
    if reason is Reason.THREAD_PARENT_MISSING:
        return THREAD_PART if adapter.limits.threads else None
    return TEXT_PART


def media_files(adapter: Adapter) -> tuple[MediaFile, ...]:
    """Two files (one where the adapter takes one), with alt text where it takes it."""
    limits = adapter.limits
    preferred = ("image/png", "image/jpeg", "image/webp", "image/gif")
    mime = next((t for t in preferred if t in limits.media_types), min(limits.media_types, default="image/png"))
    video = mime.startswith("video/")
    files = []
    for n in range(1, min(2, limits.max_media) + 1):
        data, alt = _png(n), f"conformance-alt-{n}" if limits.alt_text else None
        file = MediaFile(
            digest=hashlib.sha256(data).hexdigest(),
            mime=mime,
            size=len(data),
            filename=f"conformance-{n}{mimetypes.guess_extension(mime) or ''}",
            alt=alt,
            width=1,
            height=1,
            duration=1.0 if video else None,
            read=partial(bytes, data),
        )
        files.append(file)
    return tuple(files)


def _png(shade: int) -> bytes:
    """A one-pixel PNG, a different one for each ``shade``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixel = zlib.compress(bytes([0, shade, 255 - shade, shade]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel) + chunk(b"IEND", b"")

"""Small files the sandbox platform's own HTTP tests upload (their ``server`` and ``client``
fixtures are in tests/integration/conftest.py)."""

from __future__ import annotations

import io

from PIL import Image


def image(kind: str = "PNG", color: str = "red") -> bytes:
    """A 4×4 picture of ``color`` in the format ``kind``."""
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(buffer, kind)
    return buffer.getvalue()


#: Enough of an MP4 for the platform's check of its type: a box size, ``ftyp`` and a brand.
MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2mp41" + b"\x00" * 64

"""Where herald keeps attachment files: content-addressed, behind a small interface (§16).

A file's address is the SHA-256 of its bytes, so the same bytes are kept once however many
times they are added. :class:`FileBlobs` keeps them under herald's home
(``$HERALD_HOME/media/ab/abcdef…``); an object store can replace it by implementing
:class:`Blobs`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol

from core import config

#: Bytes read at a time while hashing and copying a file in.
_CHUNK = 1024 * 1024


class Blobs(Protocol):
    """What herald needs of a storage: put a file in, read it, drop it."""

    def put(self, source: Path) -> tuple[str, Path]:
        """Copy ``source`` in; its digest, and a local path to read it at (for probing)."""
        ...

    def read(self, digest: str) -> bytes:
        """The bytes kept under ``digest``. Raises FileNotFoundError when they are gone."""
        ...

    def delete(self, digest: str) -> None:
        """Forget ``digest``'s bytes (nothing when they are already gone)."""
        ...


class FileBlobs:
    """Files in folders under ``root``, named by their digest."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, source: Path) -> tuple[str, Path]:
        """Hash ``source`` while copying it to a temporary file, then move that into place.

        A crash leaves at most a temporary file, never a half-written blob under a digest.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        hasher = hashlib.sha256()
        fd, temporary = tempfile.mkstemp(dir=self.root, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as out, source.open("rb") as given:
                while chunk := given.read(_CHUNK):
                    hasher.update(chunk)
                    out.write(chunk)
            digest = hasher.hexdigest()
            target = self.path(digest)
            target.parent.mkdir(exist_ok=True)
            os.replace(temporary, target)  # the same bytes again: the same file, replaced
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return digest, target

    def read(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()

    def delete(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(digest).unlink()


def blobs() -> FileBlobs:
    """The storage of this herald: ``media/`` under its home."""
    return FileBlobs(config.settings().home_path / "media")

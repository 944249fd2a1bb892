"""The file the sandbox platform keeps its memory in, so a restart forgets nothing.

A real platform never forgets a post nor reuses an id: after a restart, the URLs herald
stored must still show the posts they named, a new post must get a new id, and a native
key sent again must still be recognised. The sandbox writes each change as one JSON line
appended to the file (an accepted post or upload, a token's state, a reset) and replays
the lines when it starts. An upload's bytes go to a file of their own in a ``media/``
folder beside the state file (``media/<state file's stem>/<id>``, so two state files in
one folder keep apart), written before the line that names it.

Appending is the cheapest write there is (one ``write`` and ``flush`` under the store's
lock, no fsync: a killed process loses nothing the kernel has, and only a machine crash
could cut the last line). A line cut that way is skipped on replay. A reset rewrites the
file as one line holding the id counters, through a temporary file and a rename, so ids
are never reused even then, and removes the uploads' files. A lock file keeps a second
sandbox off the same file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from core.domain.errors import UserError


class Journal:
    """An append-only file of the sandbox's changes, held by one sandbox at a time."""

    def __init__(self, path: Path) -> None:
        """Open (or create) ``path`` and take its lock.

        Raises:
            UserError: another sandbox holds it, or it cannot be written.
        """
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = (path.parent / f"{path.name}.lock").open("a")
        except OSError as exc:
            raise UserError(
                f"cannot keep the sandbox's posts in {path} ({exc.strerror}): give another --state FILE, or --no-state"
            ) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise UserError(
                f"another sandbox keeps its posts in {path}: stop it, or give this one --state FILE or --no-state"
            ) from None
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record written so far, oldest first; a last line cut by a crash is skipped.

        Raises:
            UserError: a line before the last is not a record (the file was edited or damaged).
        """
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines):
                    return  # the write a crash cut short
                raise UserError(
                    f"the sandbox's state file {self.path} is damaged at line {number}: "
                    "move it away to start empty, or give --no-state"
                ) from None
            if isinstance(record, dict):
                yield record

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record (the caller holds the store's lock)."""
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()

    def rewrite(self, record: Mapping[str, Any]) -> None:
        """Replace everything with one record, atomically (a reset), then remove the uploads' files."""
        temporary = self.path.with_name(f"{self.path.name}.tmp")
        temporary.write_text(json.dumps(record, separators=(",", ":")) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)
        self._file.close()
        self._file = self.path.open("a", encoding="utf-8")
        # After the rename: no record names them any more, whatever happens from here.
        if self.media_dir.is_dir():
            for file in self.media_dir.iterdir():
                file.unlink(missing_ok=True)

    @property
    def media_dir(self) -> Path:
        """The folder of the uploads' bytes, one file per upload named by its id."""
        return self.path.parent / "media" / self.path.stem

    def write_media(self, media_id: str, data: bytes) -> None:
        """Keep an upload's bytes; called before the record naming it is appended."""
        self.media_dir.mkdir(parents=True, exist_ok=True)
        (self.media_dir / media_id).write_bytes(data)

    def read_media(self, media_id: str) -> bytes | None:
        """An upload's bytes; None when its file is gone (removed by hand)."""
        try:
            return (self.media_dir / media_id).read_bytes()
        except FileNotFoundError:
            return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        self._lock.close()  # releases the lock

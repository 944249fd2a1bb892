"""What a file is, from its bytes: its type, size, an image's dimensions, a video's length.

The type comes from the bytes (``filetype``), never from the file's name; an image must
open and decode in Pillow, so a truncated or damaged one is refused when it is added, not
when a platform refuses it. A video's length and dimensions come from ``ffprobe`` where it
is installed; without it a video is accepted with an unknown length and the platform
decides.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import filetype  # type: ignore[import-untyped]
from PIL import Image, UnidentifiedImageError

from core import config
from core.domain.errors import UserError

#: Seconds ``ffprobe`` may take on one file.
FFPROBE_TIMEOUT = 30.0


@dataclass(frozen=True)
class Facts:
    """A file's probed facts."""

    mime: str
    size: int
    width: int | None = None
    height: int | None = None
    #: Seconds, for a video ``ffprobe`` could read; None otherwise.
    duration: float | None = None

    @property
    def is_video(self) -> bool:
        return self.mime.startswith("video/")


def probe(path: Path, name: str) -> Facts:
    """The facts of the file at ``path`` (``name`` is how messages call it).

    Raises:
        UserError: the file is empty, not an image or a video, or damaged.
    """
    size = path.stat().st_size
    if size == 0:
        raise UserError(f"{name} is empty: give an image or a video")
    kind = filetype.guess(str(path))
    if kind is None or not kind.mime.startswith(("image/", "video/")):
        what = f"a {kind.mime} file" if kind is not None else "not a type herald knows"
        raise UserError(f"{name} is not an image or a video (its bytes say: {what}), whatever its name says")
    if kind.mime.startswith("image/"):
        width, height = _image_size(path, name, kind.mime)
        return Facts(kind.mime, size, width, height)
    return _video(path, name, kind.mime, size)


def _image_size(path: Path, name: str, mime: str) -> tuple[int, int]:
    """Open and decode the whole image: a cut-off or damaged file fails here."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                size = image.size
                image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UserError(f"{name} is too large an image to check ({mime}): give a smaller one") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise UserError(f"{name} is a damaged {mime} image ({exc}): export it again") from None
    return size


def _video(path: Path, name: str, mime: str, size: int) -> Facts:
    ffprobe = shutil.which(config.settings().ffprobe)
    if ffprobe is None:
        return Facts(mime, size)  # its length is unknown: the platform decides
    try:
        done = subprocess.run(
            [ffprobe, "-v", "error", "-print_format", "json", "-show_format", "-show_streams", str(path)],
            capture_output=True,
            timeout=FFPROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UserError(f"{name}: ffprobe could not read it in {FFPROBE_TIMEOUT:g}s; is it a damaged video?") from None
    try:
        report = json.loads(done.stdout or b"{}")
    except ValueError:
        report = {}
    streams = [s for s in report.get("streams", []) if s.get("codec_type") == "video"]
    duration = _number(report.get("format", {}).get("duration"))
    if done.returncode != 0 or not streams or duration is None:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[-1].replace(str(path), name) if said else "no video stream or length in it"
        raise UserError(f"{name} is a damaged {mime} video ({why}): export it again")
    width, height = streams[0].get("width"), streams[0].get("height")
    return Facts(
        mime, size, width if isinstance(width, int) else None, height if isinstance(height, int) else None, duration
    )


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None

"""Real image and video files for media tests, made on the spot."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image


def png(path: Path, size: tuple[int, int] = (8, 6), color: str = "red") -> Path:
    Image.new("RGB", size, color).save(path, "PNG")
    return path


def jpeg(path: Path, size: tuple[int, int] = (16, 12), color: str = "blue") -> Path:
    Image.new("RGB", size, color).save(path, "JPEG")
    return path


def noise_png(path: Path, megabytes: int) -> Path:
    """A PNG of random pixels (which do not compress) of about ``megabytes`` MiB."""
    side = int((megabytes * 1024 * 1024 / 3) ** 0.5) + 1
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(path, "PNG", compress_level=0)
    return path


def mp4(path: Path, seconds: int = 2) -> Path:
    """A real MP4 video made by ffmpeg (the test is skipped where ffmpeg is not installed)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is not installed (.ci/run installs it)")
    subprocess.run(
        [
            ffmpeg,
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            f"testsrc=duration={seconds}:size=64x48:rate=10",
            "-pix_fmt",
            "yuv420p",
            str(path),
        ],
        check=True,
    )
    return path

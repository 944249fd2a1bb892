"""A part's attachments as its rows store them (``parts[i]["media"]``), and back.

An attachment on a part is a reference to a kept file (``core.services.media``) with the
part's own alt text: ``{"media": 12, "alt": "a red kite over the ridge"}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MediaRef:
    """One attachment of a part: which kept file, with which alt text."""

    media_id: int
    alt: str | None = None

    def row(self) -> dict[str, Any]:
        return {"media": self.media_id, "alt": self.alt}


def refs_of(part: Mapping[str, Any]) -> tuple[MediaRef, ...]:
    """The attachments of one stored part, in order."""
    return refs_in(part.get("media", []))


def refs_in(items: Iterable[Mapping[str, Any]]) -> tuple[MediaRef, ...]:
    """Attachments from a part's stored ``media`` list."""
    return tuple(MediaRef(int(item["media"]), item.get("alt")) for item in items if "media" in item)


def media_ids(parts: Iterable[Mapping[str, Any]]) -> set[int]:
    """Every kept file the parts refer to."""
    return {ref.media_id for part in parts for ref in refs_of(part)}


def rows_of(refs: Sequence[MediaRef]) -> list[dict[str, Any]]:
    return [ref.row() for ref in refs]

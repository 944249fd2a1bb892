"""What a Mastodon instance takes: the defaults the docs give, and one instance's own configuration.

Each instance sets its own limits and says them in ``GET /api/v2/instance``, under
``configuration.statuses`` and ``configuration.media_attachments`` (content/en/methods/
instance.md, content/en/entities/Instance.md; mastodon/documentation). herald reads them
when a channel is added (:meth:`Mastodon.channel_limits`); :data:`DEFAULT_LIMITS` holds
otherwise, taken from the docs' own example of a stock instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.plugins import Limits

#: ``configuration.media_attachments.supported_mime_types`` of the docs' example instance
#: (content/en/methods/instance.md, "View server information"), its images and videos:
#: herald attaches nothing else.
DOCUMENTED_TYPES = frozenset(
    {
        "image/jpeg",
        "image/png",
        "image/gif",
        "image/heic",
        "image/heif",
        "image/webp",
        "image/avif",
        "video/webm",
        "video/mp4",
        "video/quicktime",
        "video/ogg",
        "video/x-ms-asf",
    }
)

#: A stock instance, as content/en/methods/instance.md shows one:
#:
#: * ``statuses.max_characters`` 500, ``max_media_attachments`` 4;
#: * ``media_attachments.image_size_limit`` 16777216 (16 MiB) and ``video_size_limit``
#:   103809024 (99 MiB), as content/en/user/posting.md says: "Images ... up to 16MB",
#:   "Videos ... up to 99MB";
#: * ``description_limit`` 1500, the longest alt text.
#:
#: Mastodon counts a status in grapheme clusters (mastodon/mastodon
#: ``app/validators/status_length_validator.rb``: ``each_grapheme_cluster``), what people
#: see as one character, and every link as ``characters_reserved_per_url`` (23 on a stock
#: instance: "All links count as 23 characters", content/en/user/posting.md), as herald
#: does with ``url_chars``. A mention counts there as ``@name`` without its domain; herald
#: counts the domain too, so it may refuse a text full of remote mentions that Mastodon
#: would take, never the other way round. The docs set no limit on a video's length.
#: Edits are not sent by this adapter.
DEFAULT_LIMITS = Limits(
    max_chars=500,
    text_unit="graphemes",
    url_chars=23,
    threads=True,
    edit=False,
    max_media=4,
    media_types=DOCUMENTED_TYPES,
    max_image_bytes=16777216,
    max_video_bytes=103809024,
    max_video_seconds=None,
    # "Only one video can be attached, per post" (content/en/user/posting.md), and no image beside it.
    max_videos=1,
    video_alone=True,
    alt_text=True,
    max_alt_chars=1500,
)


def instance_limits(instance: Any) -> Limits:
    """The limits an instance's ``GET /api/v2/instance`` answer says, over :data:`DEFAULT_LIMITS`.

    A value the answer leaves out or gives in another shape keeps the default:
    ``description_limit`` came in 4.4.0, the rest in 4.0.0 (content/en/entities/Instance.md).
    """
    configuration = _hash(_hash(instance).get("configuration"))
    statuses = _hash(configuration.get("statuses"))
    media = _hash(configuration.get("media_attachments"))
    found: dict[str, Any] = {
        "max_chars": _count(statuses.get("max_characters")),
        "url_chars": _count(statuses.get("characters_reserved_per_url")),
        "max_media": _count(statuses.get("max_media_attachments")),
        "max_image_bytes": _count(media.get("image_size_limit")),
        "max_video_bytes": _count(media.get("video_size_limit")),
        "max_alt_chars": _count(media.get("description_limit")),
        "media_types": _attachable(media.get("supported_mime_types")),
    }
    return replace(DEFAULT_LIMITS, **{name: value for name, value in found.items() if value is not None})


def _hash(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int | None:
    """A positive Integer of the answer; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _attachable(value: Any) -> frozenset[str] | None:
    """The images and videos among ``supported_mime_types`` ("MIME types that can be uploaded");
    None when the answer lists none (audio alone, or no list)."""
    if not isinstance(value, list):
        return None
    types = frozenset(t for t in value if isinstance(t, str) and t.startswith(("image/", "video/")))
    return types or None

"""A Bluesky post as herald writes it – the ``app.bsky.feed.post`` record – and how herald
names a post it made: its platform id and its link.

Every field comes from the record's lexicon (bluesky-social/atproto, lexicons/app/bsky/
feed/post.json) and the ones it refers to: ``reply`` holds two ``com.atproto.repo.strongRef``
(``uri`` and ``cid``, lexicons/com/atproto/repo/strongRef.json), ``embed`` an
``app.bsky.embed.images`` (lexicons/app/bsky/embed/images.json) of up to four images, each a
blob with its ``alt`` text and ``aspectRatio`` (lexicons/app/bsky/embed/defs.json).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

import httpx

from core.plugins import IMAGE_TYPES, Ambiguous, Attachment, Limits, Published, Reason, Rejected

POST = "app.bsky.feed.post"
IMAGES = "app.bsky.embed.images"

#: images.json: an image "May be up to 2 MB, formerly limited to 1 MB", ``"maxSize": 2000000``
#: (bytes, not MiB); ``"maxLength": 4`` images; ``"accept": ["image/*"]``.
MAX_IMAGE_BYTES = 2_000_000
MAX_IMAGES = 4

#: post.json's ``text``: ``"maxLength": 3000`` (a lexicon string's length counts UTF-8
#: bytes: https://atproto.com/specs/lexicon) and ``"maxGraphemes": 300``.
MAX_TEXT_BYTES = 3000

#: What a post takes. The lexicon sets no length on alt text: herald's default stands.
#: Video (``app.bsky.embed.video``) goes through a separate video service that processes it
#: first; herald does not send it.
POST_LIMITS = Limits(
    max_chars=300,
    text_unit="graphemes",
    max_media=MAX_IMAGES,
    threads=True,
    edit=False,
    media_types=IMAGE_TYPES,
    max_image_bytes=MAX_IMAGE_BYTES,
    alt_text=True,
)

#: Where people see a post: the Bluesky app's link, by the author's handle (or DID) and the
#: record key, as the docs link posts (bluesky-social/bsky-docs: ``https://bsky.app/profile/
#: atproto.com/post/3k5ivi6or4d2r``, blog/2023-09-15-rate-limits-pds-v3/index.md; by DID in
#: blog/2024-10-16-pinned-posts.md).
POST_LINK = "https://bsky.app/profile/{actor}/post/{rkey}"

#: ``at://AUTHORITY/COLLECTION/RKEY`` (https://atproto.com/specs/at-uri-scheme).
_AT_URI = re.compile(r"^at://(?P<repo>[^/\s|]+)/(?P<collection>[^/\s|]+)/(?P<rkey>[A-Za-z0-9._:~-]{1,512})$")
_RKEY = re.compile(r"^[A-Za-z0-9._:~-]{1,512}$")


@dataclass(frozen=True)
class PostRef:
    """A post as another refers to it: its AT URI and, when known, its CID (a strongRef)."""

    uri: str
    cid: str | None

    @property
    def rkey(self) -> str:
        return self.uri.rsplit("/", 1)[1]

    @property
    def repo(self) -> str:
        return self.uri.removeprefix("at://").split("/", 1)[0]

    @property
    def platform_id(self) -> str:
        """How herald stores it: ``at://DID/app.bsky.feed.post/RKEY|CID``. A reply needs both
        (post.json, ``replyRef``), and herald hands a later part only this id."""
        return f"{self.uri}|{self.cid}" if self.cid else self.uri

    def strong_ref(self) -> dict[str, str]:
        if not self.cid:
            raise ValueError(f"{self.uri} has no CID: look it up first")
        return {"uri": self.uri, "cid": self.cid}

    @classmethod
    def parse(cls, platform_id: str, own_repo: str) -> PostRef:
        """Read a platform id: herald's ``URI|CID``, an AT URI alone, or a bare record key (what
        ``herald post resolve ... landed --url https://bsky.app/profile/H/post/RKEY`` records),
        which names a post of ``own_repo``.

        Raises:
            Rejected: THREAD_PARENT_MISSING, it names no post herald can reply to.
        """
        uri, _, cid = platform_id.strip().partition("|")
        if _RKEY.match(uri) and not uri.startswith("at:"):
            return cls(f"at://{own_repo}/{POST}/{uri}", cid or None)
        match = _AT_URI.match(uri)
        if match is None or match["collection"] != POST:
            raise Rejected(
                Reason.THREAD_PARENT_MISSING,
                f"{platform_id!r} names no Bluesky post (expected at://DID/{POST}/RKEY|CID or a record key)",
            )
        return cls(uri, cid or None)


def post_url(actor: str, rkey: str) -> str:
    """The link people open to see the post ``rkey`` of ``actor`` (a handle or a DID)."""
    return POST_LINK.format(actor=actor, rkey=rkey)


def created_at(now: float) -> str:
    """``now`` as the lexicon's ``datetime``: UTC, milliseconds and a ``Z``, as in the docs'
    examples ("Using a trailing "Z" is preferred over the "+00:00" format", posts.md)."""
    return datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_text(text: str) -> None:
    """Refuse a text the lexicon does not take: herald counts its 300 graphemes when the post
    is written, but not its 3000 bytes (an emoji is up to 25 of them).

    Raises:
        Rejected: CONTENT_REJECTED, naming its length in bytes.
    """
    size = len(text.encode())
    if size > MAX_TEXT_BYTES:
        raise Rejected(
            Reason.CONTENT_REJECTED,
            f"the text is {size} bytes of UTF-8; a Bluesky post takes at most {MAX_TEXT_BYTES} (as well as 300 "
            "graphemes): shorten it",
        )


def post_record(
    text: str,
    *,
    created: str,
    facets: list[dict[str, Any]],
    reply: tuple[PostRef, PostRef] | None,
    images: list[dict[str, Any]],
) -> dict[str, Any]:
    """The ``app.bsky.feed.post`` record of one part.

    Args:
        text: the part's text (:func:`check_text`).
        created: its ``createdAt``.
        facets: its links, mentions and hashtags (``adapters.bluesky.facets``).
        reply: ``(root, parent)`` for a part that replies, None for the first.
        images: the ``image`` entries of its ``app.bsky.embed.images`` (:func:`image_entry`).
    """
    record: dict[str, Any] = {"$type": POST, "text": text, "createdAt": created}
    if facets:
        record["facets"] = facets
    if reply is not None:
        root, parent = reply
        record["reply"] = {"root": root.strong_ref(), "parent": parent.strong_ref()}
    if images:
        record["embed"] = {"$type": IMAGES, "images": images}
    return record


def image_entry(attachment: Attachment) -> dict[str, Any]:
    """One image of the embed: the blob :meth:`Bluesky.upload` recorded, its alt text ("The
    ``alt`` field is required for each image. Pass an empty string if there is no alt text
    available", bsky-docs blog/2023-08-11-create-post.md) and its aspect ratio when herald
    probed its size ("If you don't know the image aspect ratio ... it is best to leave the
    ``aspectRatio`` field undefined instead of guessing", posts.md).

    Raises:
        Rejected: MEDIA_INVALID, the recorded upload is not a blob.
    """
    blob = blob_of(attachment.platform_id)
    entry: dict[str, Any] = {"alt": attachment.alt or "", "image": blob}
    file = attachment.file
    if file is not None and file.width and file.height and file.width > 0 and file.height > 0:
        entry["aspectRatio"] = {"width": file.width, "height": file.height}
    return entry


def blob_of(platform_id: str) -> dict[str, Any]:
    """The blob an upload's platform id holds (the JSON uploadBlob answered).

    Raises:
        Rejected: MEDIA_INVALID, it is not one.
    """
    try:
        blob = json.loads(platform_id)
    except ValueError:
        blob = None
    if not is_blob(blob):
        raise Rejected(Reason.MEDIA_INVALID, f"the recorded upload {platform_id[:100]!r} is not a Bluesky blob")
    return dict(blob)


def is_blob(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether ``value`` is a blob as the data model writes it in JSON: ``{"$type": "blob",
    "ref": {"$link": CID}, "mimeType": ..., "size": ...}`` (https://atproto.com/specs/data-model,
    "``blob`` Type": ``size`` "positive, non-zero")."""
    if not isinstance(value, dict) or value.get("$type") != "blob":
        return False
    ref, mime, size = value.get("ref"), value.get("mimeType"), value.get("size")
    return (
        isinstance(ref, dict)
        and isinstance(ref.get("$link"), str)
        and bool(ref["$link"])
        and isinstance(mime, str)
        and isinstance(size, int)
        and not isinstance(size, bool)
        and size > 0
    )


def ref_of(response: httpx.Response) -> PostRef | None:
    """The post a 2xx answer names by its ``uri`` and ``cid``; None without a post's AT URI.
    putRecord's output requires both (lexicons/com/atproto/repo/putRecord.json), getRecord's
    only the ``uri`` (getRecord.json: "required": uri, value)."""
    try:
        body = response.json()
    except ValueError:
        return None
    uri = body.get("uri") if isinstance(body, dict) else None
    cid = body.get("cid") if isinstance(body, dict) else None
    if not isinstance(uri, str) or not (match := _AT_URI.match(uri)) or match["collection"] != POST:
        return None
    return PostRef(uri, cid if isinstance(cid, str) and cid else None)


def read_post(response: httpx.Response, actor: str, *, needs_cid: bool = True) -> Published:
    """The post a 2xx answer names, and its link.

    Args:
        response: putRecord's answer, or getRecord's.
        actor: the account as the channel names it, for the link.
        needs_cid: whether the answer must name the CID (putRecord's does); a post read back
            without one is still that post, and a reply to it looks the CID up.

    Raises:
        Ambiguous: the answer lacks what names the post: it may exist, herald cannot name it.
    """
    ref = ref_of(response)
    if ref is None or (needs_cid and ref.cid is None):
        raise Ambiguous(
            f"Bluesky answered {response.status_code} without the post's uri and cid: {response.text!r}"[:500]
        )
    return Published(platform_id=ref.platform_id, url=post_url(actor, ref.rkey))

"""How the sandbox's PDS checks a post record before it stores it, and what it stores.

``app.bsky.feed.post`` as its lexicon says (lexicons/app/bsky/feed/post.json): ``text`` at
most 300 graphemes and 3000 UTF-8 bytes, ``createdAt`` a datetime, ``langs`` at most 3,
``tags`` at most 8, the record key a TID; ``app.bsky.richtext.facet`` features (mention,
link, tag); ``app.bsky.embed.images`` at most 4 images, each with its ``alt`` and an image
blob of at most 2,000,000 bytes. As the PDS does (``packages/pds/src/repo/prepare.ts``), a
record without ``$type`` gets its collection's, one with another is refused, and
``validate: false`` skips the lexicon – though not what the sandbox needs to store the
post (its reply refs' and images' shape).

Stricter than a PDS, where strictness finds herald's bugs: a facet's byte slice must lie
within the UTF-8 text, start before it ends and cut through no grapheme; a reply's
``root`` and ``parent`` must be posts stored here, at the CID they name; a blob must have
been uploaded here, its ref's type and size those stored (the PDS's ``verifyBlob``); and
only ``app.bsky.embed.images`` embeds are taken.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from adapters.sandbox.atproto import invalid, is_record_key, is_tid, next_tid, record_cid, xrpc_error
from adapters.sandbox.media import PostMedia
from adapters.sandbox.store import StoredPost, StoreWriter, canonical_json
from adapters.sandbox.text import graphemes

PREFIX = "bluesky"
POST = "app.bsky.feed.post"
IMAGES = "app.bsky.embed.images"
#: app.bsky.feed.post: text maxGraphemes and maxLength (UTF-8 bytes).
MAX_GRAPHEMES = 300
MAX_TEXT_BYTES = 3000
#: app.bsky.embed.images: images maxLength, image maxSize.
MAX_IMAGES = 4
MAX_IMAGE_BYTES = 2_000_000
#: The facet features app.bsky.richtext.facet knows, with the field each requires.
FEATURES = {
    "app.bsky.richtext.facet#mention": "did",
    "app.bsky.richtext.facet#link": "uri",
    "app.bsky.richtext.facet#tag": "tag",
}


@dataclass(frozen=True)
class Write:
    """A record to write, checked as far as it can be without the store."""

    uri: str
    rkey: str
    record: dict[str, Any]
    cid: str
    text: str
    parent: dict[str, Any] | None
    root: dict[str, Any] | None
    images: list[dict[str, Any]]


def prepared_write(body: dict[str, Any], did: str, handle: str) -> Write:
    """The write a createRecord or putRecord input asks for, checked as the PDS checks it.

    Raises:
        Refusal: 401 another account's repo; 400 ``InvalidRequest`` for a collection the
            sandbox does not keep, a bad rkey, or a record the lexicon refuses.
    """
    repo, collection, record = body["repo"], body["collection"], body["record"]
    if repo not in (did, handle):
        raise xrpc_error(401, "AuthenticationRequired", "Authentication Required")
    if collection != POST:
        raise invalid(f"the sandbox keeps {POST} records only, not {collection!r}")
    if not isinstance(record, dict):
        raise invalid("Input/record must be an object")
    if record.get("$type", collection) != collection:
        raise invalid(f"Invalid $type: expected {collection}, got {record.get('$type')}")
    record = {**record, "$type": collection}
    rkey = body.get("rkey")
    if rkey is None:
        rkey = next_tid()
    elif not isinstance(rkey, str) or not is_record_key(rkey):
        raise invalid(f"Invalid record key: {rkey}")
    validated = body.get("validate") is not False
    if validated and not is_tid(rkey):
        raise invalid(f"Invalid record key for {POST}: must be a valid TID")
    if validated:
        _check_lexicon(record)
    # What the sandbox needs to store the post is checked even with validate: false.
    reply, embed = record.get("reply"), record.get("embed")
    where = f"Invalid {POST} record: record"
    if reply is not None:
        for end in ("root", "parent"):
            ref = reply.get(end) if isinstance(reply, dict) else None
            if not isinstance(ref, dict) or not isinstance(ref.get("uri"), str) or not isinstance(ref.get("cid"), str):
                raise invalid(f'{where}/reply must have the property "{end}", a strongRef {{uri, cid}}')
    if embed is not None:
        _check_images(embed, where)
    text = record.get("text")
    return Write(
        uri=f"at://{did}/{collection}/{rkey}",
        rkey=rkey,
        record=record,
        cid=record_cid(record),
        text=text if isinstance(text, str) else "",
        parent=reply["parent"] if isinstance(reply, dict) else None,
        root=reply["root"] if isinstance(reply, dict) else None,
        images=list(embed["images"]) if isinstance(embed, dict) else [],
    )


def _check_lexicon(record: dict[str, Any]) -> None:
    """Check an app.bsky.feed.post record's text, dates, facets and lists as its lexicon says.

    Raises:
        Refusal: 400 ``InvalidRequest`` naming what the lexicon refuses.
    """
    where = f"Invalid {POST} record: record"
    text = record.get("text")
    if not isinstance(text, str):
        raise invalid(f'{where} must have the property "text"')
    if len(text.encode()) > MAX_TEXT_BYTES:
        raise invalid(f"{where}/text must not be longer than {MAX_TEXT_BYTES} characters")
    if len(graphemes(text)) > MAX_GRAPHEMES:
        raise invalid(f"{where}/text must not be longer than {MAX_GRAPHEMES} graphemes")
    created = record.get("createdAt")
    if not isinstance(created, str) or not _is_datetime(created):
        raise invalid(f"{where}/createdAt must be an valid atproto datetime (both RFC-3339 and ISO-8601)")
    _check_facets(record.get("facets"), text, where)
    for name, most in (("langs", 3), ("tags", 8)):
        value = record.get(name)
        if value is not None and (not isinstance(value, list) or len(value) > most):
            raise invalid(f"{where}/{name} must be an array of at most {most} items")


def _is_datetime(value: str) -> bool:
    """An RFC 3339 datetime with its time zone (``Z`` or an offset)."""
    if "T" not in value:
        return False
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return moment.tzinfo is not None


def _check_facets(facets: Any, text: str, where: str) -> None:
    """Each facet's byte slice within the UTF-8 text, on grapheme boundaries; its features known.

    Raises:
        Refusal: 400 ``InvalidRequest`` naming the facet and what is wrong with it.
    """
    if facets is None:
        return
    if not isinstance(facets, list):
        raise invalid(f"{where}/facets must be an array")
    size = len(text.encode())
    boundaries = {0}
    offset = 0
    for grapheme in graphemes(text):
        offset += len(grapheme.encode())
        boundaries.add(offset)
    for position, facet in enumerate(facets):
        here = f"{where}/facets/{position}"
        index = facet.get("index") if isinstance(facet, dict) else None
        start = index.get("byteStart") if isinstance(index, dict) else None
        end = index.get("byteEnd") if isinstance(index, dict) else None
        if not _is_count(start) or not _is_count(end):
            raise invalid(f"{here}/index must have byteStart and byteEnd, integers of at least 0")
        assert isinstance(start, int) and isinstance(end, int)
        if not start < end <= size:
            raise invalid(f"{here}/index [{start}, {end}) is not a slice of the text's {size} UTF-8 bytes")
        if start not in boundaries or end not in boundaries:
            raise invalid(f"{here}/index [{start}, {end}) cuts through a character (not on grapheme boundaries)")
        features = facet.get("features")
        if not isinstance(features, list) or not features:
            raise invalid(f"{here}/features must be a non-empty array")
        for feature in features:
            kind = feature.get("$type") if isinstance(feature, dict) else None
            field = FEATURES.get(kind) if isinstance(kind, str) else None
            if field is None or not isinstance(feature.get(field), str):
                raise invalid(f"{here}/features: each must be a mention {{did}}, a link {{uri}} or a tag {{tag}}")
            if field == "did" and not feature["did"].startswith("did:"):
                raise invalid(f"{here}/features: a mention's did must be a DID")
            if field == "tag" and len(graphemes(feature["tag"])) > 64:
                raise invalid(f"{here}/features: a tag has at most 64 graphemes")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_images(embed: Any, where: str) -> None:
    """An app.bsky.embed.images embed: at most 4 images, each an image blob of at most 2 MB, with alt.

    Raises:
        Refusal: 400 ``InvalidRequest`` for another embed or an image the lexicon refuses.
    """
    if not isinstance(embed, dict) or embed.get("$type") != IMAGES:
        kind = embed.get("$type") if isinstance(embed, dict) else None
        raise invalid(f"{where}/embed: the sandbox takes {IMAGES} embeds only, not {kind!r}")
    images = embed.get("images")
    if not isinstance(images, list):
        raise invalid(f'{where}/embed must have the property "images"')
    if len(images) > MAX_IMAGES:
        raise invalid(f"{where}/embed/images must not have more than {MAX_IMAGES} elements")
    for position, image in enumerate(images):
        here = f"{where}/embed/images/{position}"
        if not isinstance(image, dict) or not isinstance(image.get("alt"), str):
            raise invalid(f'{here} must have the property "alt"')
        blob: Any = image.get("image")
        if not _is_blob_ref(blob):
            raise invalid(f"{here}/image should be a blob ref {{$type: blob, ref: {{$link}}, mimeType, size}}")
        if not str(blob["mimeType"]).startswith("image/"):
            raise invalid(f"{here}/image mimeType must be one of image/*, got {blob['mimeType']}")
        if blob["size"] > MAX_IMAGE_BYTES:
            raise invalid(f"{here}/image size must not be greater than {MAX_IMAGE_BYTES} bytes")


def _is_blob_ref(blob: Any) -> bool:
    return (
        isinstance(blob, dict)
        and blob.get("$type") == "blob"
        and isinstance(blob.get("ref"), dict)
        and isinstance(blob["ref"].get("$link"), str)
        and isinstance(blob.get("mimeType"), str)
        and _is_count(blob.get("size"))
    )


def stored_post(writer: StoreWriter, write: Write, token: str, existing: StoredPost | None) -> StoredPost:
    """The post a write stores, its reply refs and blobs checked against the store.

    Raises:
        Refusal: 400 a reply ref that names no post here (or an old version of one), a
            blob never uploaded, or a blob ref whose type or size is not the blob's.
    """
    refs: dict[str, str | None] = {}
    for end, ref in (("root", write.root), ("parent", write.parent)):
        if ref is None:
            refs[end] = None
            continue
        target = writer.post(str(ref["uri"]))
        if target is None or target.strategy != PREFIX or target.cid != ref.get("cid"):
            raise invalid(f"reply {end} {ref['uri']} (cid {ref.get('cid')}) is no post on this PDS")
        refs[end] = target.id
    media: list[PostMedia] = []
    for image in write.images:
        blob = image["image"]
        found = writer.media(blob["ref"]["$link"])
        if found is None or found.strategy != PREFIX:
            raise xrpc_error(400, "BlobNotFound", f"Could not find blob: {blob['ref']['$link']}")
        if blob["mimeType"] != found.mime:
            message = f"Referenced Mimetype does not match stored blob. Expected: {found.mime}, Got: {blob['mimeType']}"
            raise xrpc_error(400, "InvalidMimeType", message)
        if blob["size"] != found.size:
            message = f"Referenced Size does not match stored blob. Expected: {found.size}, Got: {blob['size']}"
            raise xrpc_error(400, "InvalidSize", message)
        media.append(PostMedia(id=found.id, alt=image.get("alt"), mime=found.mime))
    text, record = write.text, canonical_json(write.record)
    reply_to, root = refs["parent"], refs["root"]
    if existing is not None:
        # putRecord overwrote a post: stored, and marked for the tests to see.
        return dataclasses.replace(
            existing,
            text=text,
            reply_to=reply_to,
            root=root,
            media=tuple(media),
            record=record,
            cid=write.cid,
            overwrites=existing.overwrites + 1,
        )
    return StoredPost(
        id=write.uri,
        strategy=PREFIX,
        key=write.rkey,
        idempotency_key=None,
        text=text,
        reply_to=reply_to,
        root=root,
        token=token,
        created_at=datetime.now(UTC).isoformat(),
        accepted_at=writer.now,
        media=tuple(media),
        record=record,
        cid=write.cid,
    )

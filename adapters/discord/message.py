"""A Discord message as herald sends it – text and attachments with alt text – and what
the answer says of the message made.

Both adapters send the same body: the message's JSON alone when it has no attachments,
else a ``multipart/form-data`` body of ``payload_json`` and one ``files[n]`` part per
file, each described in the payload's ``attachments`` with its ``description`` (alt text)
(developers/reference.mdx, "Uploading Files"; developers/resources/message.mdx,
"Attachment Request Structure"; discord/discord-api-docs).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

import httpx

from adapters.discord.ids import is_snowflake, message_url
from core.plugins import MB, Ambiguous, Limits, MediaFile, PublishContext, Published, Reason, Rejected

#: Discord's HTTP API, version 10: an unversioned path goes to the deprecated default
#: (v6) (developers/reference.mdx, "API Versioning").
API = "https://discord.com/api/v10"

#: "Clients using the HTTP API must provide a valid User Agent ... ``DiscordBot ($url,
#: $versionNumber)``"; requests without one may be blocked (developers/reference.mdx,
#: "User Agent").
USER_AGENT = "DiscordBot (herald, 1)"

#: "The maximum request size when sending a message is 25 MiB" (developers/resources/
#: message.mdx, Create Message, "Limitations").
MAX_REQUEST_BYTES = 25 * MB

#: The file types Discord supports natively (developers/reference.mdx, "File Type
#: Filtering": image .png .gif .jpg .jpeg .jfif .webp .avif, video .mp4 .mov .qt .webm),
#: with their extensions, canonical first. Discord reads a file's kind from its name, so a
#: name without a fitting extension gets one.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "image/png": (".png",),
    "image/gif": (".gif",),
    "image/jpeg": (".jpg", ".jpeg", ".jfif"),
    "image/webp": (".webp",),
    "image/avif": (".avif",),
    "video/mp4": (".mp4",),
    "video/quicktime": (".mov", ".qt"),
    "video/webm": (".webm",),
}


#: What a Discord message takes: "Message contents (up to 2000 characters)" (Create
#: Message), "Maximum number of attachments in a message reached (10)" (code 30015,
#: developers/topics/opcodes-and-status-codes.mdx), "The default [upload size] limit is
#: 10 MiB" per file (developers/reference.mdx, "Uploading Files"), alt text as the
#: attachment's ``description`` "(max 1024 characters)" (message.mdx, "Attachment Request
#: Structure"). The docs set no length on a video.
MESSAGE_LIMITS = Limits(
    max_chars=2000,
    max_media=10,
    edit=False,
    media_types=frozenset(EXTENSIONS),
    max_image_bytes=10 * MB,
    max_video_bytes=10 * MB,
    max_video_seconds=None,
    alt_text=True,
    max_alt_chars=1024,
)


def message_payload(ctx: PublishContext) -> dict[str, Any]:
    """The message's JSON: its text, and one ``attachments`` entry per file, in order."""
    payload: dict[str, Any] = {}
    if ctx.text:
        payload["content"] = ctx.text
    if ctx.media:
        payload["attachments"] = [
            # ``id`` "must match the ``n`` in ``files[n]``" for a new attachment.
            {"id": n, "filename": filename(_file(ctx, n), n)} | ({"description": a.alt} if a.alt else {})
            for n, a in enumerate(ctx.media)
        ]
    return payload


def request_body(ctx: PublishContext, payload: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``client.post`` that carry ``payload`` and the part's files.

    Raises:
        Rejected: MEDIA_INVALID, the files together pass the 25 MiB a message may carry.
    """
    if not ctx.media:
        return {"json": payload}
    files: list[tuple[str, tuple[str | None, bytes | str, str]]] = [
        ("payload_json", (None, json.dumps(payload), "application/json"))
    ]
    total = 0
    for n in range(len(ctx.media)):
        file = _file(ctx, n)
        data = file.read()
        total += len(data)
        files.append((f"files[{n}]", (filename(file, n), data, file.mime)))
    if total > MAX_REQUEST_BYTES:
        raise Rejected(
            Reason.MEDIA_INVALID,
            f"the part's {len(ctx.media)} files come to {total / MB:.1f} MiB; a Discord message carries at "
            f"most {MAX_REQUEST_BYTES // MB} MiB in all: take some off, or make them smaller",
        )
    return {"files": files}


def filename(file: MediaFile, n: int) -> str:
    """The file's name as Discord shows it: its own, without folders, ending in an
    extension that fits its type."""
    name = PureWindowsPath(PurePosixPath(file.filename).name).name.strip() or f"attachment{n}"
    extensions = EXTENSIONS.get(file.mime, ())
    if extensions and not name.lower().endswith(extensions):
        name += extensions[0]
    return name


def read_message(response: httpx.Response, *, guild_id: str, channel_id: str | None) -> Published:
    """The message a 2xx answer confirms: its id, and the link to it.

    Raises:
        Ambiguous: the answer confirmed something without a message id: the message may exist.
    """
    try:
        body = response.json()
    except ValueError:
        body = response.text
    message_id = body.get("id") if isinstance(body, dict) else None
    channel = body.get("channel_id") if isinstance(body, dict) else None
    channel = channel if is_snowflake(channel) else channel_id
    if not is_snowflake(message_id) or channel is None:
        raise Ambiguous(f"Discord answered {response.status_code} without the message's id: {body!r}"[:500])
    return Published(platform_id=message_id, url=message_url(guild_id, channel, message_id))


def _file(ctx: PublishContext, n: int) -> MediaFile:
    file = ctx.media[n].file
    if file is None:
        # Files go with the message (uploads_first = False): herald hands each one over.
        raise Rejected(Reason.MEDIA_INVALID, f"attachment {n + 1} of the part came without its file")
    return file

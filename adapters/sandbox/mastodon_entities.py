"""Mastodon's entities as the sandbox shows them: Account, Status, MediaAttachment, Instance.

Each is built as its page in the official docs lists it (github.com/mastodon/documentation,
``content/en/entities/``); the Instance's configuration declares the limits ``mastodon.py``
enforces (methods/instance.md#v2). Every token is an account of its own, its id and
username derived from the token. A status's ``content`` is its text escaped into
paragraphs: the sandbox parses no links, mentions or hashtags.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from adapters.sandbox.exchange import Exchange
from adapters.sandbox.media import PostMedia, StoredMedia, UploadLimits, is_video, media_url
from adapters.sandbox.store import StoredPost

PREFIX = "mastodon"
#: configuration.statuses in the v2 instance (methods/instance.md#v2).
MAX_CHARACTERS = 500
CHARACTERS_RESERVED_PER_URL = 23
MAX_MEDIA_ATTACHMENTS = 4
#: configuration.media_attachments: the docs' defaults; of the supported types, the ones
#: the sandbox can tell from a file's bytes.
DESCRIPTION_LIMIT = 1500
LIMITS = UploadLimits(
    types=("image/jpeg", "image/png", "image/gif", "image/webp", "video/mp4", "video/quicktime", "video/webm"),
    max_image_bytes=16_777_216,
    max_video_bytes=103_809_024,
)


@dataclass(frozen=True)
class Account:
    """The account a token belongs to: each token is an account of its own."""

    id: str
    username: str

    @classmethod
    def of(cls, token: str) -> Account:
        digest = hashlib.sha256(token.encode()).digest()
        # Mastodon's ids are integers sent as strings; this one is stable for the token.
        return cls(id=str(int.from_bytes(digest[:6], "big")), username=f"herald_{digest.hex()[:8]}")


def attachment_type(mime: str) -> str:
    """MediaAttachment's ``type``: Mastodon turns a GIF into a looping video (``gifv``)."""
    if mime == "image/gif":
        return "gifv"
    return "video" if is_video(mime) else "image"


class Views:
    """The entities (Status, Account, MediaAttachment) as one request's answer shows them."""

    def __init__(self, exchange: Exchange) -> None:
        self.root = exchange.base_url()
        self._store = exchange.store
        self._accounts: dict[str, dict[str, Any]] = {}

    def account(self, token: str, *, credential: bool = False) -> dict[str, Any]:
        """The Account entity (entities/Account.md); a CredentialAccount adds ``source``."""
        if token not in self._accounts:
            account = Account.of(token)
            own = [post for post in self._store.posts(PREFIX) if post.token == token]
            self._accounts[token] = {
                "id": account.id,
                "username": account.username,
                "acct": account.username,
                "url": f"{self.root}/{PREFIX}/@{account.username}",
                "uri": f"{self.root}/{PREFIX}/users/{account.username}",
                "display_name": "herald sandbox",
                "note": "",
                "avatar": f"{self.root}/{PREFIX}/avatars/original/missing.png",
                "avatar_static": f"{self.root}/{PREFIX}/avatars/original/missing.png",
                "header": f"{self.root}/{PREFIX}/headers/original/missing.png",
                "header_static": f"{self.root}/{PREFIX}/headers/original/missing.png",
                "locked": False,
                "fields": [],
                "emojis": [],
                "bot": True,
                "group": False,
                "discoverable": False,
                "indexable": False,
                "created_at": "2024-01-01T00:00:00.000Z",
                "last_status_at": own[-1].created_at[:10] if own else None,
                "statuses_count": len(own),
                "followers_count": 0,
                "following_count": 0,
                "roles": [],
            }
        view = dict(self._accounts[token])
        if credential:
            view["source"] = {
                "privacy": "public",
                "sensitive": False,
                "language": "",
                "note": "",
                "fields": [],
                "follow_requests_count": 0,
            }
        return view

    def status(self, post: StoredPost) -> dict[str, Any]:
        """The Status entity (entities/Status.md)."""
        account = self.account(post.token)
        parent = self._store.get(post.reply_to) if post.reply_to is not None else None
        return {
            "id": post.id,
            "uri": f"{account['uri']}/statuses/{post.id}",
            "url": f"{self.root}/p/{post.id}",
            "created_at": timestamp(post.created_at),
            "account": account,
            "content": content(post.text),
            "visibility": post.visibility or "public",
            "sensitive": False,
            "spoiler_text": "",
            "media_attachments": [self._attached(medium) for medium in post.media],
            "application": {"name": "herald", "website": None},
            "mentions": [],
            "tags": [],
            "emojis": [],
            "reblogs_count": 0,
            "favourites_count": 0,
            "quotes_count": 0,
            "replies_count": 0,
            "in_reply_to_id": post.reply_to,
            "in_reply_to_account_id": Account.of(parent.token).id if parent is not None else None,
            "reblog": None,
            "poll": None,
            "card": None,
            "language": None,
            "text": None,
            "edited_at": None,
            "quote": None,
            "favourited": False,
            "reblogged": False,
            "muted": False,
            "bookmarked": False,
            "pinned": False,
        }

    def media(self, media: StoredMedia, *, processed: bool) -> dict[str, Any]:
        """The MediaAttachment entity (entities/MediaAttachment.md); ``url`` null until processed."""
        url = media_url(self.root, media.id)
        return {
            "id": media.id,
            "type": attachment_type(media.mime),
            "url": url if processed else None,
            "preview_url": url,
            "remote_url": None,
            "meta": {},
            "description": media.description,
            "blurhash": None,
        }

    def _attached(self, medium: PostMedia) -> dict[str, Any]:
        url = media_url(self.root, medium.id)
        return {
            "id": medium.id,
            "type": attachment_type(medium.mime),
            "url": url,
            "preview_url": url,
            "remote_url": None,
            "meta": {},
            "description": medium.alt,
            "blurhash": None,
        }


def timestamp(iso: str) -> str:
    """A stored instant as Mastodon writes one: ``2019-12-05T11:34:47.196Z``."""
    moment = datetime.fromisoformat(iso).astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def content(text: str) -> str:
    """The status's HTML: its paragraphs, escaped, line breaks kept."""
    paragraphs = [part for part in re.split(r"\n{2,}", text.strip()) if part]
    return "".join(f"<p>{html.escape(part).replace(chr(10), '<br />')}</p>" for part in paragraphs)


def instance(exchange: Exchange) -> dict[str, Any]:
    """The v2 Instance entity, its configuration as the docs' defaults (methods/instance.md#v2)."""
    root = exchange.base_url()
    return {
        "domain": exchange.headers.get("Host") or "127.0.0.1",
        "title": "herald sandbox (Mastodon)",
        "version": "4.5.0 (compatible; herald sandbox)",
        "source_url": "https://github.com/mastodon/mastodon",
        "description": "The herald sandbox platform, speaking Mastodon's API.",
        "usage": {"users": {"active_month": 0}},
        "thumbnail": {"url": f"{root}/{PREFIX}/thumbnail.png"},
        "icon": [],
        "languages": ["en"],
        "configuration": {
            "urls": {"streaming": None, "status": None},
            "accounts": {"max_featured_tags": 10, "max_pinned_statuses": 5},
            "statuses": {
                "max_characters": MAX_CHARACTERS,
                "max_media_attachments": MAX_MEDIA_ATTACHMENTS,
                "characters_reserved_per_url": CHARACTERS_RESERVED_PER_URL,
            },
            "media_attachments": {
                "description_limit": DESCRIPTION_LIMIT,
                "image_matrix_limit": 33_177_600,
                "image_size_limit": LIMITS.max_image_bytes,
                "supported_mime_types": list(LIMITS.types),
                "video_frame_rate_limit": 120,
                "video_matrix_limit": 8_294_400,
                "video_size_limit": LIMITS.max_video_bytes,
            },
            "polls": {
                "max_options": 4,
                "max_characters_per_option": 50,
                "min_expiration": 300,
                "max_expiration": 2_629_746,
            },
            "translation": {"enabled": False},
            "limited_federation": False,
        },
        "registrations": {"enabled": False, "approval_required": False, "message": None, "url": None},
        "api_versions": {"mastodon": 6},
        "contact": {"email": "", "account": None},
        "rules": [],
    }

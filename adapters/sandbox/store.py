"""The sandbox platform's memory: accepted posts and uploads, remembered keys and token states.

Everything lives in memory behind one lock; the validation a real platform does on a new
post (text length, thread parent, its media, idempotency replay) happens under that lock,
so two requests with the same key can never both create a post on the sandbox's own
native API. The personalities (``mastodon.py``, ``bluesky.py``) check and write under the
same lock through :meth:`PlatformStore.writing`; Mastodon's keys are remembered apart
(:meth:`PlatformStore.remember_key`), after the status exists, as Mastodon does.

Given a state file, every change is also written to it (``journal.py``) and read back at
start, so a restarted platform still has its posts, its uploads, their ids and the keys
it remembers.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.sandbox.faults import APIS
from adapters.sandbox.journal import Journal
from adapters.sandbox.media import (
    MAX_ALT_CHARS,
    MAX_ATTACHMENTS,
    MediaState,
    PostMedia,
    StoredMedia,
    upload_problem,
)
from core.domain.errors import HeraldError

#: Longest text the platform accepts, in characters.
MAX_CHARS = 500
TOKEN_STATES = ("ok", "revoked", "forbidden")
#: The id counter of uploads (``media-N``), kept with the strategies' post counters.
MEDIA_COUNTER = "media"
#: Where a remembered idempotency key applies: (strategy, account, key). The sandbox's own
#: native keys are global (account ``""``); Mastodon's are per account (the token).
KeyScope = tuple[str, str, str]


class Refusal(HeraldError):
    """A platform answer other than success: an HTTP status and a JSON error body.

    The body is the sandbox's own (``{"error", "detail"}``) unless ``body`` gives the one a
    personality words its errors in (Mastodon's ``{"error"}``, XRPC's ``{"error", "message"}``).
    """

    def __init__(self, status: int, error: str, detail: str = "", *, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.body = body if body is not None else {"error": error, "detail": detail} if detail else {"error": error}


def canonical_json(value: Any) -> str:
    """A JSON value spelled one way (keys sorted, no spaces, UTF-8): equal data, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class StoredPost:
    """One post the platform accepted."""

    id: str
    strategy: str
    key: str | None
    idempotency_key: str | None
    text: str
    reply_to: str | None
    root: str | None
    token: str
    created_at: str
    #: ``time.monotonic()`` when it was stored: the search index lags from here.
    accepted_at: float = 0.0
    #: The uploads it carries, in order.
    media: tuple[PostMedia, ...] = ()
    #: Mastodon: the status's visibility (public, unlisted, private, direct).
    visibility: str | None = None
    #: Bluesky: the record as stored (:func:`canonical_json`) and its CID.
    record: str | None = None
    cid: str | None = None
    #: Bluesky: how many times ``putRecord`` replaced the record with a different one.
    #: herald never changes a published post, so anything but 0 is a bug tests should see.
    overwrites: int = 0

    def admin_json(self) -> dict[str, Any]:
        """What the oracle lists (and the state file keeps); a personality's own fields only when set."""
        data: dict[str, Any] = {
            "id": self.id,
            "strategy": self.strategy,
            "key": self.key,
            "idempotency_key": self.idempotency_key,
            "text": self.text,
            "reply_to": self.reply_to,
            "root": self.root,
            "token": self.token,
            "created_at": self.created_at,
            "media": [medium.admin_json() for medium in self.media],
        }
        if self.visibility is not None:
            data["visibility"] = self.visibility
        if self.record is not None:
            data["record"] = json.loads(self.record)
            data["cid"] = self.cid
            data["overwrites"] = self.overwrites
        return data

    @classmethod
    def from_admin_json(cls, data: dict[str, Any]) -> StoredPost:
        """A post written by :meth:`admin_json`; its index lag counts from its creation."""
        created = datetime.fromisoformat(data["created_at"])
        accepted_at = time.monotonic() - max(0.0, (datetime.now(UTC) - created).total_seconds())
        media = tuple(PostMedia(**medium) for medium in data.get("media", ()))
        record = canonical_json(data["record"]) if data.get("record") is not None else None
        return cls(
            **{name: data[name] for name in _STORED},
            accepted_at=accepted_at,
            media=media,
            visibility=data.get("visibility"),
            record=record,
            cid=data.get("cid"),
            overwrites=int(data.get("overwrites", 0)),
        )

    def public_json(self, base_url: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": f"{base_url}/p/{self.id}",
            "key": self.key,
            "text": self.text,
            "reply_to": self.reply_to,
            "root": self.root,
            "created_at": self.created_at,
            "media": [medium.public_json(base_url) for medium in self.media],
        }


_STORED = ("id", "strategy", "key", "idempotency_key", "text", "reply_to", "root", "token", "created_at")


def _attachments(value: object) -> list[tuple[str, str | None]]:
    """The ``media`` of a post's body as (id, alt) pairs, in order; absent, null or [] is none.

    Raises:
        Refusal: 422 ``media_invalid``, it is not a list of at most four ``{"id", "alt"}`` objects.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise Refusal(422, "media_invalid", 'media must be a list of {"id": ..., "alt": ...} objects')
    if len(value) > MAX_ATTACHMENTS:
        raise Refusal(422, "media_invalid", f"a post carries at most {MAX_ATTACHMENTS} media, got {len(value)}")
    pairs: list[tuple[str, str | None]] = []
    for position, item in enumerate(value, 1):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise Refusal(422, "media_invalid", f"media item {position} must be an object with a string id")
        alt = item.get("alt")
        if alt is not None and not isinstance(alt, str):
            raise Refusal(422, "media_invalid", f"the alt of media item {position} must be a string or null")
        if alt is not None and len(alt) > MAX_ALT_CHARS:
            detail = f"the alt of media item {position} is {len(alt)} characters, at most {MAX_ALT_CHARS}"
            raise Refusal(422, "media_invalid", detail)
        pairs.append((item["id"], alt))
    return pairs


class PlatformStore:
    """Posts, uploads, remembered idempotency keys and token states, behind one lock; kept
    in ``state`` too when one is given (None: in memory only, as tests mostly want)."""

    def __init__(self, state: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._posts: dict[str, StoredPost] = {}
        self._media: dict[str, StoredMedia] = {}
        #: upload id → its bytes (a state file keeps them in files too, for a restart)
        self._files: dict[str, bytes] = {}
        #: a remembered idempotency key → (post id, monotonic time it was remembered)
        self._keys: dict[KeyScope, tuple[str, float]] = {}
        self._tokens: dict[str, str] = {}
        # Ids are never reused, not even after a reset: a real platform never reuses them.
        self._counters = dict.fromkeys((*APIS, MEDIA_COUNTER), 0)
        self._journal = Journal(state) if state is not None else None
        if self._journal is not None:
            try:
                for record in self._journal.records():
                    self._replay(record)
            except BaseException:
                self._journal.close()
                raise

    @property
    def state(self) -> Path | None:
        """The file the store is kept in, if any."""
        return self._journal.path if self._journal is not None else None

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()

    def _replay(self, record: dict[str, Any]) -> None:
        if "post" in record:
            post = StoredPost.from_admin_json(record["post"])
            self._remember(post)
        elif "media" in record:
            media = StoredMedia.from_record(record["media"])
            data = self._journal.read_media(media.id) if self._journal is not None else None
            self._count(MEDIA_COUNTER, media.id)  # its id stays given, even when its file is gone
            if data is not None:
                self._remember_media(media, data)
        elif "key" in record:
            entry = record["key"]
            remembered = datetime.fromisoformat(entry["at"])
            ago = max(0.0, (datetime.now(UTC) - remembered).total_seconds())
            scope = (str(entry["scope"][0]), str(entry["scope"][1]), str(entry["scope"][2]))
            self._keys[scope] = (entry["post"], time.monotonic() - ago)
        elif "token" in record:
            self._set_token(record["token"], record["state"])
        elif "reset" in record:
            self._clear()
            for strategy, count in record["reset"].items():
                self._counters[strategy] = max(self._counters.get(strategy, 0), int(count))

    def _remember(self, post: StoredPost) -> None:
        # A post stored again under its id (Bluesky's putRecord) keeps its place in the order.
        self._posts[post.id] = post
        if post.strategy == "native" and post.idempotency_key is not None:
            # The sandbox's native key is stored with its post, atomically; Mastodon's is not
            # (remember_key), so it is replayed from its own record.
            self._keys[("native", "", post.idempotency_key)] = (post.id, post.accepted_at)
        self._count(post.strategy, post.id)

    def _remember_media(self, media: StoredMedia, data: bytes) -> None:
        self._media[media.id] = media
        self._files[media.id] = data
        self._count(MEDIA_COUNTER, media.id)

    def _count(self, counter: str, given_id: str) -> None:
        """Keep ``counter`` at or past the number of an id given already, so it is never given again."""
        number = given_id.rpartition("-")[2]
        if number.isdigit():
            self._counters[counter] = max(self._counters.get(counter, 0), int(number))

    def _write(self, record: dict[str, Any]) -> None:
        if self._journal is not None:
            self._journal.append(record)

    def _add_post(self, post: StoredPost) -> None:
        """Keep a new post (or a post stored again under its id); the caller holds the lock."""
        self._write({"post": post.admin_json()})
        self._remember(post)

    def _add_media(self, media: StoredMedia, data: bytes) -> None:
        """Keep a new upload and its bytes; the caller holds the lock."""
        if self._journal is not None:
            self._journal.write_media(media.id, data)  # before the record that names it
        self._write({"media": media.record()})
        self._remember_media(media, data)

    def _carried(self, media_id: str) -> bool:
        """Whether a stored post carries the upload already; the caller holds the lock."""
        return any(medium.id == media_id for post in self._posts.values() for medium in post.media)

    def _clear(self) -> None:
        self._posts.clear()
        self._media.clear()
        self._files.clear()
        self._keys.clear()
        self._tokens.clear()

    def reset(self) -> None:
        with self._lock:
            self._clear()
            if self._journal is not None:
                self._journal.rewrite({"reset": self._counters})

    def set_token(self, token: str, state: str) -> None:
        with self._lock:
            self._set_token(token, state)
            self._write({"token": token, "state": state})

    def _set_token(self, token: str, state: str) -> None:
        if state == "ok":
            self._tokens.pop(token, None)
        else:
            self._tokens[token] = state

    def token_state(self, token: str) -> str:
        """One of :data:`TOKEN_STATES`: a token never set is ``ok``."""
        with self._lock:
            return self._tokens.get(token, "ok")

    def check_token(self, token: str) -> None:
        """Raises: Refusal: the token is missing, revoked or forbidden."""
        if not token:
            raise Refusal(401, "auth_missing", "send the header 'Authorization: Bearer <token>'")
        state = self.token_state(token)
        if state == "revoked":
            raise Refusal(401, "auth_expired", "the token was revoked")
        if state == "forbidden":
            raise Refusal(403, "permission_denied", "the token may not post")

    def accept(
        self,
        strategy: str,
        body: dict[str, Any],
        token: str,
        idempotency_key: str | None,
        forget_after: float | None,
    ) -> tuple[StoredPost, bool]:
        """Store a post, or find the one an earlier request with the same key stored.

        Returns:
            The post, and whether it was created now (False: a native replay).

        Raises:
            Refusal: the body is invalid (422), replies to an unknown post, or attaches
                media that is unknown, failed (``media_invalid``) or still processing
                (``media_not_ready``).
        """
        text, reply_to, root, key = (body.get(name) for name in ("text", "reply_to", "root", "key"))
        if not isinstance(text, str) or not text.strip():
            raise Refusal(422, "content_rejected", "text must be a non-empty string")
        if len(text) > MAX_CHARS:
            raise Refusal(422, "content_rejected", f"text is {len(text)} characters, at most {MAX_CHARS}")
        for name, value in (("reply_to", reply_to), ("root", root), ("key", key)):
            if value is not None and not isinstance(value, str):
                raise Refusal(422, "content_rejected", f"{name} must be a string or null")
        attachments = _attachments(body.get("media"))
        dedupes = strategy == "native" and bool(idempotency_key)
        scope = ("native", "", idempotency_key or "")
        with self._lock:
            now = time.monotonic()
            if dedupes and scope in self._keys:
                post_id, seen_at = self._keys[scope]
                forgotten = forget_after is not None and now - seen_at > forget_after
                if not forgotten and post_id in self._posts:
                    return self._posts[post_id], False
            parent = self._posts.get(reply_to) if reply_to is not None else None
            if reply_to is not None and (parent is None or parent.strategy != strategy):
                raise Refusal(422, "thread_parent_missing", f"no post {reply_to!r} to reply to")
            media = self._attached(strategy, attachments, now)
            self._counters[strategy] += 1
            post = StoredPost(
                id=f"{strategy}-{self._counters[strategy]}",
                strategy=strategy,
                key=None if strategy == "none" else key,
                idempotency_key=idempotency_key if strategy == "native" else None,
                text=text,
                reply_to=reply_to,
                root=root,
                token=token,
                created_at=datetime.now(UTC).isoformat(),
                accepted_at=now,
                media=media,
            )
            self._add_post(post)
            return post, True

    def _attached(self, strategy: str, attachments: list[tuple[str, str | None]], now: float) -> tuple[PostMedia, ...]:
        """The media a new post carries (the caller holds the lock).

        Raises:
            Refusal: 422 ``media_invalid`` for an upload that is unknown, another strategy's
                or failed; then ``media_not_ready`` for one still processing.
        """
        found: list[tuple[StoredMedia, str | None]] = []
        for media_id, alt in attachments:
            media = self._media.get(media_id)
            if media is None or media.strategy != strategy:
                raise Refusal(422, "media_invalid", f"no media {media_id!r} to attach")
            if media.state(now) is MediaState.FAILED:
                raise Refusal(422, "media_invalid", f"media {media_id!r} could not be processed")
            found.append((media, alt))
        # Refusals for good first: a post that can never be sent is not told to wait.
        processing = [media.id for media, _ in found if media.state(now) is MediaState.PROCESSING]
        if processing:
            raise Refusal(422, "media_not_ready", f"media {', '.join(processing)} still processing: send again later")
        return tuple(PostMedia(id=media.id, alt=alt, mime=media.mime) for media, alt in found)

    def accept_media(
        self, strategy: str, data: bytes, mime: str, token: str, processing_seconds: float, fails: bool
    ) -> StoredMedia:
        """Store an upload; it is ``processing`` for ``processing_seconds``, then ready or, if ``fails``, failed.

        Raises:
            Refusal: 422 ``media_invalid``, the platform does not take the file.
        """
        problem = upload_problem(data, mime)
        if problem is not None:
            raise Refusal(422, "media_invalid", problem)
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._counters[MEDIA_COUNTER] += 1
            media = StoredMedia(
                id=f"media-{self._counters[MEDIA_COUNTER]}",
                strategy=strategy,
                mime=mime,
                size=len(data),
                sha256=digest,
                token=token,
                created_at=datetime.now(UTC).isoformat(),
                processing_seconds=processing_seconds,
                fails=fails,
                accepted_at=time.monotonic(),
            )
            self._add_media(media, data)
            return media

    def media(self, media_id: str) -> StoredMedia | None:
        with self._lock:
            return self._media.get(media_id)

    def attached(self, media_id: str) -> bool:
        """Whether a stored post carries the upload already."""
        with self._lock:
            return self._carried(media_id)

    def media_file(self, media_id: str) -> tuple[StoredMedia, bytes] | None:
        """An upload with its bytes, to serve them."""
        with self._lock:
            media = self._media.get(media_id)
            return (media, self._files[media_id]) if media is not None else None

    def uploads(self) -> list[StoredMedia]:
        """Every accepted upload in acceptance order."""
        with self._lock:
            return list(self._media.values())

    def search(self, strategy: str, key: str, lag: float = 0.0) -> list[StoredPost]:
        """The posts carrying ``key``, leaving out those stored less than ``lag`` seconds ago."""
        with self._lock:
            indexed_before = time.monotonic() - lag
            return [
                post
                for post in self._posts.values()
                if post.strategy == strategy
                and key in (post.key, post.idempotency_key)
                and (lag <= 0 or post.accepted_at <= indexed_before)
            ]

    def get(self, post_id: str) -> StoredPost | None:
        with self._lock:
            return self._posts.get(post_id)

    def keyed_post(self, scope: KeyScope, ttl: float) -> StoredPost | None:
        """The post a key remembered less than ``ttl`` seconds ago names, if any."""
        with self._lock:
            found = self._keys.get(scope)
            if found is None or time.monotonic() - found[1] > ttl:
                return None
            return self._posts.get(found[0])

    def remember_key(self, scope: KeyScope, post_id: str) -> None:
        """Remember a key for the post it created, from now (Mastodon: once the status exists)."""
        with self._lock:
            self._keys[scope] = (post_id, time.monotonic())
            self._write({"key": {"scope": list(scope), "post": post_id, "at": datetime.now(UTC).isoformat()}})

    @contextmanager
    def writing(self) -> Iterator[StoreWriter]:
        """The store under its lock: a personality's checks and writes, none interleaved with another's."""
        with self._lock:
            yield StoreWriter(self)

    def posts(self, strategy: str | None = None) -> list[StoredPost]:
        """Every accepted post in acceptance order (dicts keep insertion order)."""
        with self._lock:
            return [post for post in self._posts.values() if strategy in (None, post.strategy)]


class StoreWriter:
    """What a personality reads and writes while it holds the store's lock (:meth:`PlatformStore.writing`)."""

    def __init__(self, store: PlatformStore) -> None:
        self._store = store
        #: ``time.monotonic()`` when the lock was taken: the instant the checks are made at.
        self.now = time.monotonic()

    def post(self, post_id: str) -> StoredPost | None:
        return self._store._posts.get(post_id)

    def media(self, media_id: str) -> StoredMedia | None:
        return self._store._media.get(media_id)

    def attached(self, media_id: str) -> bool:
        """Whether a stored post carries the upload already."""
        return self._store._carried(media_id)

    def next_number(self, counter: str) -> int:
        """The next number of ``counter`` (a strategy's, or :data:`MEDIA_COUNTER`); never given twice."""
        self._store._counters[counter] = self._store._counters.get(counter, 0) + 1
        return self._store._counters[counter]

    def add(self, post: StoredPost) -> None:
        """Store a post, or store one again under its id (it keeps its place in the order)."""
        self._store._add_post(post)

    def add_media(self, media: StoredMedia, data: bytes) -> None:
        """Store an upload with its bytes."""
        self._store._add_media(media, data)

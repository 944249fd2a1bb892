"""What a platform adapter is: its declaration, the context of one call, and its answer.

An adapter never touches the database. It gets a :class:`PublishContext` holding
everything one platform call needs, returns a :class:`Published` when the platform
confirmed the post, and raises one of the ``core.domain.errors.PublishError`` classes
otherwise, mapped from the platform's answer in one function of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import httpx
import regex  # type: ignore[import-untyped]

from core.domain.states import Strategy
from core.plugins.channel_settings import Setting
from core.plugins.rates import Rate

MB = 1024 * 1024

#: The image types most platforms take.
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


@dataclass(frozen=True)
class Limits:
    """What a platform accepts; checked when a post is created, not when it is sent.

    The media fields are checked against each attachment's probed facts (``herald media
    add``): an adapter that leaves ``max_media`` at 0 takes no attachments at all.
    """

    #: Longest text of one part, counted in ``text_unit``.
    max_chars: int = 500
    #: What ``max_chars`` counts: ``characters`` (code points) or ``graphemes`` (what people
    #: see as one character: an emoji with its modifiers, a letter with its accents).
    text_unit: str = "characters"
    #: What one link (``http://`` or ``https://`` up to the next space) counts, however long
    #: it is (Mastodon: 23, its instance's ``characters_reserved_per_url``); None: a link
    #: counts as it is written.
    url_chars: int | None = None
    #: Most attachments on one part; 0: the platform takes none (the adapter has no ``upload``).
    max_media: int = 0
    #: Whether a post may have several parts replying to each other.
    threads: bool = True
    #: Whether a published post can be edited in place.
    edit: bool = False
    #: The MIME types an attachment may have (``image/png``, ``video/mp4``, ...).
    media_types: frozenset[str] = field(default_factory=frozenset)
    #: Largest image, in bytes.
    max_image_bytes: int = 8 * MB
    #: Largest video, in bytes.
    max_video_bytes: int = 40 * MB
    #: Most videos on one part; None: as ``max_media`` allows.
    max_videos: int | None = None
    #: Whether a video must be a part's only attachment (Mastodon: "4 images or 1 video").
    video_alone: bool = False
    #: Longest video, in seconds; None: no limit. A video whose length herald could not
    #: probe (no ``ffprobe``) is let through, and the platform decides.
    max_video_seconds: float | None = None
    #: Whether an attachment may carry alt text (a description for people who cannot see it).
    alt_text: bool = False
    #: Longest alt text, in characters.
    max_alt_chars: int = 1500
    #: Longest text of a part that carries attachments, where the platform sends it as a
    #: shorter caption (Telegram: 1024); None: ``max_chars`` holds for every part.
    max_chars_with_media: int | None = None


def limits_row(limits: Limits) -> dict[str, Any]:
    """``limits`` as a JSON object (a channel's stored limits)."""
    row = {f.name: getattr(limits, f.name) for f in fields(limits)}
    row["media_types"] = sorted(limits.media_types)
    return row


def limits_of(row: Mapping[str, Any]) -> Limits:
    """Limits from :func:`limits_row`'s object; fields it lacks (stored before they
    existed) keep their defaults."""
    known = {f.name for f in fields(Limits)}
    values = {name: value for name, value in row.items() if name in known}
    if "media_types" in values:
        values["media_types"] = frozenset(values["media_types"])
    return Limits(**values)


#: A link as platforms that count links at a fixed length find one.
_LINK = regex.compile(r"https?://\S+")


def text_length(text: str, unit: str, url_chars: int | None = None) -> int:
    """How long ``text`` is, counted as a platform counts it (``Limits.text_unit``,
    ``Limits.url_chars``)."""
    if url_chars is not None:
        text = _LINK.sub("x" * url_chars, text)
    if unit == "graphemes":
        return len(regex.findall(r"\X", text))
    return len(text)


@dataclass(frozen=True)
class MediaFile:
    """One attachment as an adapter uploads it: herald's stored file and its probed facts."""

    #: The file's content address (SHA-256, hex): the same bytes, the same digest.
    digest: str
    #: Its type, read from its bytes (``image/png``, ``video/mp4``).
    mime: str
    size: int
    #: The name it was added under, for messages.
    filename: str
    #: Its alt text on this part, if any.
    alt: str | None
    width: int | None
    height: int | None
    #: Seconds, for a video whose length was probed; None otherwise.
    duration: float | None
    #: Reads the whole file.
    read: Callable[[], bytes]

    @property
    def is_video(self) -> bool:
        return self.mime.startswith("video/")


@dataclass(frozen=True)
class UploadContext:
    """Everything one upload (or a look at an upload's processing) needs."""

    settings: Mapping[str, str]
    #: The same client as the part's publish: a hard timeout shorter than the lease.
    client: httpx.Client
    file: MediaFile
    #: A natural key of this attachment on this part (the part's key and its position), for
    #: platforms that deduplicate uploads; the same on every retry.
    key: str
    heartbeat: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class Uploaded:
    """The platform took the file: its own id for it, and whether it can be attached yet."""

    platform_id: str
    #: False while the platform is still processing it (video transcoding, say): herald
    #: asks :meth:`Adapter.media_ready` until it is, and sends the part only then.
    ready: bool = True


@dataclass(frozen=True)
class Attachment:
    """One attachment of the part being published, in the part's order."""

    #: The platform's id from :meth:`Adapter.upload`; empty for an adapter that sends the
    #: files with the post (``uploads_first = False``).
    platform_id: str
    alt: str | None
    mime: str
    #: The kept file, for an adapter that sends it with the post itself.
    file: MediaFile | None = None


@dataclass(frozen=True)
class PublishContext:
    """Everything one platform call needs, and nothing from the database."""

    #: The channel's settings from ``herald channel add --set`` (``base_url``, ``token``, ...).
    settings: Mapping[str, str]
    #: One long-lived client with a hard timeout shorter than the lease.
    client: httpx.Client
    #: The natural delivery key of this part (``core.domain.keys``): the same on every retry.
    key: str
    #: The part's text.
    text: str
    #: Index of the part within its thread, 0 for the first.
    part_index: int = 0
    #: The platform id of the part this one replies to, if any.
    reply_to: str | None = None
    #: The platform id of the thread's first part, for platforms that need it.
    root: str | None = None
    #: The part's attachments, uploaded and ready, in order; the post must carry every one.
    media: tuple[Attachment, ...] = ()
    #: Renews the post's lease; long adapters call it between requests.
    heartbeat: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class VerifyContext:
    """What a check of a channel's credentials needs (``herald channel test``)."""

    settings: Mapping[str, str]
    client: httpx.Client


@dataclass(frozen=True)
class Published:
    """The platform confirmed the post: its own id, and where people can see it."""

    platform_id: str
    url: str


class Adapter:
    """Base class of platform adapters; subclasses set the class attributes.

    Attributes:
        name: the platform name used in ``herald channel add --platform``.
        version: the adapter's version, shown by ``herald adapters``.
        strategy: how an attempt in doubt is resolved (§6).
        key_ttl: seconds the platform remembers an idempotency key (``native_key``).
        key_in: where each request of a publish carries the delivery key (``ctx.key``):
            ``header:NAME`` (the header's value is the key, or the key as a quoted RFC 8941
            String: ``"KEY"``), ``query:NAME`` (a query parameter), ``body:FIELD`` (a field
            of the JSON body, of a JSON part of a multipart body, or of a form; dotted for
            a nested one: ``body:meta.nonce``) or ``path`` (a segment of the URL's path).
            The conformance kit checks the key (as :meth:`key_on_wire` gives it) is exactly
            there on every request that makes the post. None (the default): undeclared, and
            the kit only checks that a ``native_key`` or ``read_back`` adapter sends it somewhere.
        limits: what the platform accepts.
        settings: the channel settings it reads (``core.plugins.channel_settings``), which
            ``herald channel add`` checks; None (the default) declares none and checks nothing.
        uploads_first: whether attachments are uploaded before the part (:meth:`upload`,
            :meth:`media_ready`); False: the platform takes the files with the post itself,
            and :meth:`publish` finds each one in ``ctx.media[i].file``.
        rates: every sustained rate the platform enforces on posting (:class:`Rate`), each
            one a budget herald keeps to; empty (the default): herald never paces its sends.
        cheap_find: whether :meth:`find` costs about one light request (a lookup by key,
            not a walk through a timeline). A ``read_back`` adapter that says so has herald
            ask it before every part's first send, to catch a copy something else
            published (``core.domain.precheck``); a channel's ``precheck`` setting
            overrides it either way.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "0"
    strategy: ClassVar[Strategy]
    key_ttl: ClassVar[float | None] = None
    key_in: ClassVar[str | None] = None
    limits: ClassVar[Limits] = Limits()
    settings: ClassVar[tuple[Setting, ...] | None] = None
    uploads_first: ClassVar[bool] = True
    rates: ClassVar[tuple[Rate, ...]] = ()
    cheap_find: ClassVar[bool] = False

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        #: Adapter-wide settings from ``plugins.toml``.
        self.config: Mapping[str, Any] = dict(config or {})

    def key_on_wire(self, key: str) -> str:
        """The delivery key as the platform receives it, at :attr:`key_in`: ``key`` itself
        (the default), or what the adapter derives from it where the platform takes no such
        value as it is (a record key of the platform's own syntax, computed from ``key``).
        It must be the same for the same key on every attempt, or the platform cannot
        deduplicate a resend."""
        return key

    def channel_rates(self, settings: Mapping[str, str]) -> tuple[Rate, ...]:
        """The rates one channel keeps to: :attr:`rates`, and the channel's own ``rate``
        setting, if it has one (``herald channel add --set rate=10/3``), on top.

        Raises:
            ConfigError: the channel's ``rate`` is not ``COUNT/SECONDS``.
        """
        own = (settings.get("rate") or "").strip()
        return (*self.rates, Rate.parse(own)) if own else self.rates

    def publish(self, ctx: PublishContext) -> Published:
        """Send one part; return what the platform confirmed or raise a PublishError."""
        raise NotImplementedError

    def find(self, ctx: PublishContext) -> Published | None:
        """Look the part up by its key (``read_back`` adapters); None when it is not there."""
        raise NotImplementedError

    def upload(self, ctx: UploadContext) -> Uploaded:
        """Upload one attachment; return the platform's id for it, or raise a PublishError
        (``Rejected(Reason.MEDIA_INVALID, ...)`` when the platform refuses the file).

        Adapters whose ``limits.max_media`` is above 0 implement it.
        """
        raise NotImplementedError

    def media_ready(self, ctx: UploadContext, platform_id: str) -> bool:
        """Whether the platform has finished processing an upload :meth:`upload` answered
        as not ready; raise ``Rejected(Reason.MEDIA_INVALID, ...)`` if its processing failed.

        The default says it is ready: a platform that processes synchronously never asks.
        """
        return True

    def find_all(self, ctx: PublishContext) -> list[Published]:
        """Every copy of the part the platform holds under its key (to detect duplicates).

        Adapters whose platform can list several matches override this; the default
        sees at most the one :meth:`find` returns.
        """
        found = self.find(ctx)
        return [] if found is None else [found]

    def verify(self, ctx: VerifyContext) -> str:
        """Check the channel's credentials with one read-only call (``herald channel test``);
        return whom they belong to, in words (``@herald@mastodon.social``).

        Raises:
            AuthExpired: the platform refused them; PublishError: it could not be asked.
        """
        raise NotImplementedError

    def channel_limits(self, ctx: VerifyContext) -> Limits | None:
        """The limits of one channel, where they depend on where it posts (a Mastodon
        instance's configured characters and attachments): asked once, read-only, when the
        channel is added or reconnected, and checked instead of :attr:`limits` for its posts.
        None (the default): the adapter's :attr:`limits`.

        Raises:
            AuthExpired / PublishError: as :meth:`verify`.
        """
        return None

    @property
    def can_verify(self) -> bool:
        """Whether this adapter implements :meth:`verify`."""
        return type(self).verify is not Adapter.verify

    @property
    def can_find(self) -> bool:
        """Whether this adapter implements :meth:`find`."""
        return type(self).find is not Adapter.find

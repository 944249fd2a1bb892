"""What a platform adapter is: its declaration, the context of one call, and its answer.

An adapter never touches the database. It gets a :class:`PublishContext` holding
everything one platform call needs, returns a :class:`Published` when the platform
confirmed the post, and raises one of the ``core.domain.errors.PublishError`` classes
otherwise, mapped from the platform's answer in one function of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from core.domain.states import Strategy
from core.plugins.channel_settings import Setting


@dataclass(frozen=True)
class Limits:
    """What a platform accepts; checked when a post is created, not when it is sent."""

    #: Longest text of one part, in characters.
    max_chars: int = 500
    #: Most attachments on one part.
    max_media: int = 4
    #: Whether a post may have several parts replying to each other.
    threads: bool = True
    #: Whether a published post can be edited in place.
    edit: bool = False


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
    #: Attachment references of the part.
    media: tuple[str, ...] = ()
    #: Renews the post's lease; long adapters call it between requests.
    heartbeat: Callable[[], None] = lambda: None


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
        limits: what the platform accepts.
        settings: the channel settings it reads (``core.plugins.channel_settings``), which
            ``herald channel add`` checks; None (the default) declares none and checks nothing.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "0"
    strategy: ClassVar[Strategy]
    key_ttl: ClassVar[float | None] = None
    limits: ClassVar[Limits] = Limits()
    settings: ClassVar[tuple[Setting, ...] | None] = None

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        #: Adapter-wide settings from ``plugins.toml``.
        self.config: Mapping[str, Any] = dict(config or {})

    def publish(self, ctx: PublishContext) -> Published:
        """Send one part; return what the platform confirmed or raise a PublishError."""
        raise NotImplementedError

    def find(self, ctx: PublishContext) -> Published | None:
        """Look the part up by its key (``read_back`` adapters); None when it is not there."""
        raise NotImplementedError

    def find_all(self, ctx: PublishContext) -> list[Published]:
        """Every copy of the part the platform holds under its key (to detect duplicates).

        Adapters whose platform can list several matches override this; the default
        sees at most the one :meth:`find` returns.
        """
        found = self.find(ctx)
        return [] if found is None else [found]

    @property
    def can_find(self) -> bool:
        """Whether this adapter implements :meth:`find`."""
        return type(self).find is not Adapter.find

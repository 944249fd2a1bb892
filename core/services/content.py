"""What a post says and where it goes, checked the same way at create and at edit.

A post has an authoring copy (its parts, each with its attachments) and, for any of its
channels, text of its own (a one-part version of a thread, a shorter text for a platform
with a lower limit); a channel's part *i* carries the attachments of the post's part *i*.
Each channel's limits are checked against the text and the attachments that channel will
get, when the post is written, never at publish time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from core.domain.errors import NotFound, UserError
from core.domain.media import MediaRef, refs_of, rows_of
from core.plugins import manager as plugins
from core.plugins.adapter import MB, Limits, limits_of, text_length
from core.services.media import MediaView, get_media
from core.store.models import Channel


@dataclass(frozen=True)
class Content:
    """A post's text and channels, as a create asks for them or an edit leaves them."""

    #: Channel names, each once, in the order given.
    channels: tuple[str, ...]
    #: The authoring copy: the text of each part.
    parts: tuple[str, ...]
    #: Channel name → the text of each of its parts, for channels that do not take ``parts``.
    channel_texts: Mapping[str, tuple[str, ...]]
    #: The attachments of each part of ``parts``; None: an edit keeps the post's own.
    media: tuple[tuple[MediaRef, ...], ...] | None = None

    def texts_for(self, channel: str) -> tuple[str, ...]:
        """The text of each part ``channel`` gets."""
        return self.channel_texts.get(channel) or self.parts


def parse_channel_texts(items: Sequence[str], *, resets: bool = False) -> dict[str, tuple[str, ...]]:
    """``--channel-text NAME=TEXT`` options; repeating a name gives that channel's parts in order.

    Args:
        resets: let ``NAME=`` (nothing after ``=``) put the channel back on the post's own
            text (an edit); it maps to an empty tuple.

    Raises:
        UserError: an item without ``=`` or a name, or with no text where no reset is allowed.
    """
    texts: dict[str, list[str]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError(f"--channel-text {item!r}: write NAME=TEXT, e.g. --channel-text x1='a shorter text'")
        if not text.strip() and not (resets and not text):
            raise UserError(f"--channel-text {item!r} has no text: write the text after '='")
        texts.setdefault(name, []).append(text)
    parsed = {}
    for name, parts in texts.items():
        if "" in parts and len(parts) > 1:
            raise UserError(f"--channel-text {name}= puts {name} back on the post's text: give it no other text")
        parsed[name] = tuple(p for p in parts if p)
    return parsed


def checked_texts(texts: Iterable[str], what: str | None = None) -> tuple[str, ...]:
    """``texts`` if there is at least one and none is blank (what any front door sends).

    Args:
        what: whose texts they are, for the message (e.g. "the text for n1"); None: the post's.

    Raises:
        UserError: no text at all, or a blank part (named by its number).
    """
    given = tuple(texts)
    if not given:
        if what is None:
            raise UserError("the post has no text: give --text, or --part for each part of a thread")
        raise UserError(f"{what} has no text: give --text or --part")
    for i, text in enumerate(given, 1):
        if not text.strip():
            whose = f" ({what})" if what else ""
            raise UserError(f"part {i} of {len(given)}{whose} is empty: give it text, or leave it out")
    return given


def checked_channels(
    s: Session,
    content: Content,
    media: Sequence[Sequence[MediaRef]] = (),
    known: Mapping[str, Channel] | None = None,
) -> tuple[int, dict[str, Channel]]:
    """The account the content's channels belong to, and the channels by name, after every check.

    Args:
        media: the attachments of each part of the authoring copy.
        known: every channel that is not removed, by name, read once for many posts (an
            import); None: the content's channels are read here.

    Raises:
        UserError: no channels, per-channel text for a channel the post does not go to,
            channels of different accounts, or text or attachments a channel's platform refuses.
        NotFound: an unknown channel.
    """
    if not content.channels:
        raise UserError("give at least one channel (--channel NAME); `herald channel list` shows them")
    strays = [name for name in content.channel_texts if name not in content.channels]
    if strays:
        raise UserError(
            f"--channel-text names {', '.join(strays)}, which the post does not go to "
            f"(its channels: {', '.join(content.channels)}); add it with --channel, or drop its --channel-text"
        )
    found = (
        {name: known[name] for name in content.channels if name in known}
        if known is not None
        else _live_channels(s, content.channels)
    )
    missing = [n for n in content.channels if n not in found]
    if missing:
        raise NotFound(f"no channel named {', '.join(missing)}; add it with `herald channel add`")
    facts = _media_facts(s, media)
    for name in content.channels:
        check_fits(found[name], content.texts_for(name), media, facts)
    return _one_account(found.values()), found


def channels_account(s: Session, names: Sequence[str]) -> int:
    """The one account the channels ``names`` belong to (a post's files are kept for it).

    Raises:
        NotFound: an unknown channel.
        UserError: channels of different accounts.
    """
    return _one_account(_live_channels(s, names).values())


def _live_channels(s: Session, names: Sequence[str]) -> dict[str, Channel]:
    """The channels named, by name. Raises: NotFound: an unknown (or removed) one."""
    found = {c.name: c for c in s.execute(live_channels().where(Channel.name.in_(names))).scalars()}
    missing = [n for n in names if n not in found]
    if missing:
        raise NotFound(f"no channel named {', '.join(missing)}; add it with `herald channel add`")
    return found


def _one_account(channels: Iterable[Channel]) -> int:
    """Raises: UserError: the channels belong to different accounts."""
    accounts = {c.account_id for c in channels}
    if len(accounts) != 1:
        raise UserError(
            "all channels of one post must belong to the same account; `herald channel list` shows their accounts"
        )
    return accounts.pop()


def live_channels() -> Select[Channel]:
    """The channels posts may go to: every one not removed."""
    return select(Channel).where(Channel.removed_at.is_(None))


def _media_facts(s: Session, media: Sequence[Sequence[MediaRef]]) -> dict[int, MediaView]:
    """The kept files the attachments name, refusing one removed since it was added."""
    facts = get_media(s, [ref.media_id for refs in media for ref in refs])
    gone = sorted(
        {ref.media_id for refs in media for ref in refs if ref.media_id not in facts or facts[ref.media_id].removed}
    )
    if gone:
        raise UserError(f"media {', '.join(map(str, gone))} was removed: add the file again with --media FILE")
    return facts


def channel_limits(channel: Channel) -> Limits:
    """What ``channel`` takes: its own limits where its platform told them, else its adapter's."""
    return limits_of(channel.limits) if channel.limits else plugins.adapter(channel.platform).limits


def check_fits(
    channel: Channel,
    texts: Sequence[str],
    media: Sequence[Sequence[MediaRef]] = (),
    facts: Mapping[int, MediaView] | None = None,
) -> None:
    """Refuse what ``channel``'s platform would refuse: a thread where it has none, a part
    too long, attachments it does not take (their number, type, size, length, alt text).

    Args:
        media: the attachments of each part of the post; the channel's part *i* gets ``media[i]``.
        facts: the kept files those attachments name, by id.

    Raises:
        UserError: the text or an attachment does not fit; the message names the channel
            and the limit.
    """
    limits = channel_limits(channel)
    if len(texts) > 1 and not limits.threads:
        raise UserError(
            f"channel {channel.name} ({channel.platform}) does not support threads: give one part, "
            f"or give that channel a one-part text of its own with --channel-text {channel.name}=TEXT"
        )
    unit = limits.text_unit
    for i, text in enumerate(texts, 1):
        length = text_length(text, unit, limits.url_chars)
        if length > limits.max_chars:
            raise UserError(
                f"part {i} for {channel.name} has {length} {unit}; {channel.platform} allows "
                f"{limits.max_chars}. Shorten it (or give {channel.name} its own with --channel-text)."
            )
        if i <= len(media) and media[i - 1]:
            caption = limits.max_chars_with_media
            if caption is not None and length > caption:
                raise UserError(
                    f"part {i} for {channel.name} has {length} {unit} and attachments; {channel.platform} "
                    f"allows {caption} beside attachments. Shorten it, or give {channel.name} its own with "
                    "--channel-text."
                )
            check_attachments(channel, limits, i, media[i - 1], facts or {})


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"


def check_attachments(
    channel: Channel, limits: Limits, part: int, refs: Sequence[MediaRef], facts: Mapping[int, MediaView]
) -> None:
    """Refuse attachments of part ``part`` (1 for the first) that ``channel``'s platform does not take.

    Raises:
        UserError: naming the file, the channel and the limit.
    """
    where = f"{channel.name} ({channel.platform})"
    if limits.max_media == 0:
        raise UserError(
            f"{where} takes no attachments: send part {part} there without them, or leave {channel.name} out"
        )
    if len(refs) > limits.max_media:
        raise UserError(f"part {part} has {len(refs)} attachments; {where} takes at most {limits.max_media} per part")
    videos = sum(facts[ref.media_id].mime.startswith("video/") for ref in refs)
    if limits.max_videos is not None and videos > limits.max_videos:
        raise UserError(f"part {part} has {videos} videos; {where} takes at most {limits.max_videos} per part")
    if limits.video_alone and videos and len(refs) > 1:
        raise UserError(f"part {part} has a video beside other attachments; {where} takes a video alone")
    for ref in refs:
        file = facts[ref.media_id]
        name = f"{file.filename} (media {file.id})"
        if file.mime not in limits.media_types:
            raise UserError(
                f"{name} is {file.mime}, which {where} does not take; it takes {', '.join(sorted(limits.media_types))}"
            )
        kind, largest = (
            ("video", limits.max_video_bytes) if file.mime.startswith("video/") else ("image", limits.max_image_bytes)
        )
        if file.size > largest:
            raise UserError(f"{name} is {_mb(file.size)}; {where} takes {kind}s up to {_mb(largest)}")
        longest = limits.max_video_seconds
        if kind == "video" and longest is not None and file.duration is not None and file.duration > longest:
            raise UserError(f"{name} is {file.duration:g} s long; {where} takes videos up to {longest:g} s")
        if ref.alt is not None and not limits.alt_text:
            raise UserError(
                f"{where} takes no alt text, and part {part} gives {file.filename} some: "
                f"leave out its --alt, or leave {channel.name} out"
            )
        if ref.alt is not None and len(ref.alt) > limits.max_alt_chars:
            raise UserError(
                f"the alt text of {name} has {len(ref.alt)} characters; {where} takes {limits.max_alt_chars}"
            )


def part_rows(texts: Sequence[str], media: Sequence[Sequence[MediaRef]] = ()) -> list[dict[str, Any]]:
    """Parts as the rows store them; part *i* carries ``media[i]`` (none past its end)."""
    return [{"text": text, "media": rows_of(media[i]) if i < len(media) else []} for i, text in enumerate(texts)]


@dataclass(frozen=True)
class Placed:
    """Content checked against its channels, in the form the rows store it."""

    account_id: int
    #: The channels' ids, in the order named.
    channel_ids: list[int]
    #: The authoring copy.
    parts: list[dict[str, Any]]
    #: Channel id → the parts its delivery gets: its own text where it has one, else ``parts``.
    deliveries: dict[int, list[dict[str, Any]]]
    #: The per-channel text as the post's row stores it (channel id → texts), or None.
    channel_texts: dict[str, list[str]] | None
    #: Channel id → name, for answers that name them.
    names: dict[int, str]


def place(
    s: Session,
    content: Content,
    media_from: Sequence[Mapping[str, Any]] = (),
    known: Mapping[str, Channel] | None = None,
) -> Placed:
    """``content`` checked (:func:`checked_channels`) and laid out as the rows store it.

    Args:
        media_from: the authoring copy being replaced, whose parts' attachments are kept
            unless ``content`` gives its own.
        known: the channels by name, read once for many posts (:func:`checked_channels`).
    """
    media = content.media if content.media is not None else tuple(refs_of(p) for p in media_from)
    media = media[: len(content.parts)]
    account_id, found = checked_channels(s, content, media, known)
    authoring = part_rows(content.parts, media)
    return Placed(
        account_id=account_id,
        channel_ids=[found[name].id for name in content.channels],
        parts=authoring,
        deliveries={
            found[name].id: part_rows(content.channel_texts[name], media)
            if name in content.channel_texts
            else [dict(p) for p in authoring]
            for name in content.channels
        },
        channel_texts={str(found[name].id): list(texts) for name, texts in content.channel_texts.items()} or None,
        names={c.id: c.name for c in found.values()},
    )

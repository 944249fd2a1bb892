"""The Telegram adapter: a bot posts to one chat through the Bot API (https://core.telegram.org/bots/api).

A part is one request: ``sendMessage`` for text, ``sendPhoto`` or ``sendVideo`` for one
attachment with the text as its caption, ``sendMediaGroup`` for an album of 2-10 with the
caption on the first item. Files go in that same request (multipart/form-data), so nothing
is uploaded first. A reply is ``reply_parameters`` naming the parent's message id.

The Bot API has no idempotency key and a bot cannot read a chat's history, so an attempt in
doubt cannot be settled by asking (strategy ``none``): herald holds it for a person.

Every answer goes through :func:`adapters.telegram.answers.raise_for_answer`; httpx transport
errors are left to herald. The token travels in the URL path, as the Bot API requires
(``/bot<token>/METHOD_NAME``): no message of this adapter repeats a URL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from adapters.telegram.answers import raise_for_answer, sent_message
from core.plugins import (
    MB,
    Adapter,
    Ambiguous,
    Attachment,
    ConfigError,
    Limits,
    MediaFile,
    PublishContext,
    Published,
    Rate,
    RateScope,
    Reason,
    Rejected,
    Setting,
    Strategy,
    VerifyContext,
    channel_settings,
    http_url,
)

#: The Bot API's own address; a local Bot API server is given as ``base_url``.
API_URL = "https://api.telegram.org"

#: "The token looks something like 123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
#: (https://core.telegram.org/bots/api#authorizing-your-bot): the bot's id, a colon, a secret.
_TOKEN = re.compile(r"[1-9][0-9]*:[A-Za-z0-9_-]+")
#: "Unique identifier for the target chat or username of the target bot, supergroup or channel
#: in the format @username" (sendMessage's chat_id).
_NUMERIC_CHAT = re.compile(r"-?[1-9][0-9]*")
_USERNAME_CHAT = re.compile(r"@[A-Za-z0-9_]+")

#: sendPhoto: "The photo's width and height must not exceed 10000 in total. Width and height
#: ratio must be at most 20."
_MAX_PHOTO_SIDES = 10000
_MAX_PHOTO_RATIO = 20


def bot_token(value: str) -> str | None:
    """A check: ``value`` has the shape of a bot token (``123456:ABC-DEF...``)."""
    if _TOKEN.fullmatch(value) is None:
        return "is not a bot token: @BotFather gives one like 123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
    return None


def chat_id(value: str) -> str | None:
    """A check: ``value`` is a numeric chat id or an @username."""
    if _NUMERIC_CHAT.fullmatch(value) is None and _USERNAME_CHAT.fullmatch(value) is None:
        return "is neither a numeric chat id (-1001234567890) nor a channel's @username"
    return None


class TelegramBot(Adapter):
    """A Telegram bot posting to one chat: a channel, a group or a private chat."""

    name: ClassVar[str] = "telegram"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NONE
    uploads_first: ClassVar[bool] = False
    # core.telegram.org/bots/faq, "My bot is hitting limits, how do I avoid this?": "your
    # bot will not be able to send more than 20 messages per minute to the same group",
    # "avoid sending more than one message per second" to one chat (short bursts allowed,
    # so the minute's 20 is what a backlog meets), and "not more than about 30 messages
    # per second" from one bot. herald counts parts; an album may count as several messages.
    rates: ClassVar[tuple[Rate, ...]] = (Rate(20, 60), Rate(30, 1, RateScope.PLATFORM))
    limits: ClassVar[Limits] = Limits(
        # sendMessage text: "1-4096 characters after entities parsing"; captions of sendPhoto,
        # sendVideo and InputMediaPhoto/Video: "0-1024 characters after entities parsing".
        # TDLib counts them in code points, as herald does (MessageContent.cpp, utf8_length).
        max_chars=4096,
        max_chars_with_media=1024,
        threads=True,
        # sendMediaGroup: "must include 2-10 items"; one attachment goes by sendPhoto/sendVideo.
        max_media=10,
        # Photos and videos, which an album may mix; the reference names no photo format, and
        # GIFs are animations, which sendMediaGroup does not take. sendVideo: "Telegram
        # clients support MPEG4 videos (other formats may be sent as Document)".
        media_types=frozenset({"image/jpeg", "image/png", "video/mp4"}),
        # "Sending files": multipart/form-data, "10 MB max size for photos, 50 MB for other
        # files" (a local Bot API server takes up to 2000 MB; these are api.telegram.org's).
        max_image_bytes=10 * MB,
        max_video_bytes=50 * MB,
        alt_text=False,
    )
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "bot_token",
            "the bot's token from @BotFather",
            required=True,
            secret=True,
            check=bot_token,
            example="123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
        ),
        Setting(
            "chat_id",
            "where the bot posts: a public channel's or supergroup's @username, or a chat's numeric id",
            required=True,
            check=chat_id,
            example="@mychannel",
        ),
        Setting(
            "base_url",
            f"the Bot API server's address, for a local Bot API server ({API_URL} when left out)",
            check=http_url,
            example="http://127.0.0.1:8081",
        ),
    )

    def publish(self, ctx: PublishContext) -> Published:
        """Send the part as one message (or one album) to the channel's chat."""
        target = _setting(ctx.settings, "chat_id")
        fields: dict[str, Any] = {"chat_id": _chat_value(target)}
        if ctx.reply_to is not None:
            fields["reply_parameters"] = {"message_id": _parent_id(ctx.reply_to)}
        files = [_file_of(attachment, position) for position, attachment in enumerate(ctx.media)]
        if not files:
            url = self.method_url(ctx.settings, "sendMessage")
            response = ctx.client.post(url, json={**fields, "text": ctx.text})
        elif len(files) == 1:
            (file,) = files
            url = self.method_url(ctx.settings, "sendVideo" if file.is_video else "sendPhoto")
            form = {**fields, **_caption(ctx.text), **_video_facts(file)}
            response = ctx.client.post(url, data=_form(form), files=[_part(_kind(file), file)])
        else:
            # Each file is a part of its own, named by "attach://<file_attach_name>" in the array.
            media = [
                {
                    "type": _kind(file),
                    "media": f"attach://file{position}",
                    **(_caption(ctx.text) if position == 0 else {}),
                    **_video_facts(file),
                }
                for position, file in enumerate(files)
            ]
            url = self.method_url(ctx.settings, "sendMediaGroup")
            parts = [_part(f"file{position}", file) for position, file in enumerate(files)]
            response = ctx.client.post(url, data=_form({**fields, "media": media}), files=parts)
        return sent_message(raise_for_answer(response), target)

    def verify(self, ctx: VerifyContext) -> str:
        """getMe ("a simple method for testing your bot's authentication token"): the bot's @username."""
        me = raise_for_answer(ctx.client.get(self.method_url(ctx.settings, "getMe")))
        username = me.get("username") if isinstance(me, Mapping) else None
        if not isinstance(username, str) or not username:  # every bot has one; a User may not
            raise Ambiguous(f"Telegram answered getMe without the bot's username: {me!r}")
        return f"@{username}"

    def method_url(self, settings: Mapping[str, str], method: str) -> str:
        """``{base_url}/bot<token>/METHOD_NAME`` (https://core.telegram.org/bots/api#making-requests)."""
        base_url = (settings.get("base_url") or API_URL).rstrip("/")
        return f"{base_url}/bot{_setting(settings, 'bot_token')}/{method}"


def _setting(settings: Mapping[str, str], name: str) -> str:
    return channel_settings.required(TelegramBot, settings, name)


def _chat_value(target: str) -> int | str:
    """A numeric chat id as the Integer the Bot API documents, an @username as the String."""
    if _NUMERIC_CHAT.fullmatch(target):
        return int(target)
    if _USERNAME_CHAT.fullmatch(target):
        return target
    raise ConfigError(
        f"the telegram channel's chat_id {target!r} is neither a numeric chat id nor an @username; "
        "fix it with `herald channel reconnect CHANNEL --set chat_id=@mychannel`"
    )


def _parent_id(reply_to: str) -> int:
    """The parent's message id: ReplyParameters.message_id is an Integer, herald keeps its str.

    Raises:
        Rejected: ``thread_parent_missing`` before any request, when herald's id for the parent
            is not a Telegram message id (a part recorded by hand with another address).
    """
    if not reply_to.isdecimal():
        raise Rejected(
            Reason.THREAD_PARENT_MISSING,
            f"the part to reply to has the platform id {reply_to!r}, which is not a Telegram message id",
        )
    return int(reply_to)


def _file_of(attachment: Attachment, position: int) -> MediaFile:
    """The attachment's file, checked against the photo rules herald's limits cannot say.

    Raises:
        Rejected: ``media_invalid`` before any request, for a photo Telegram refuses by its sides.
    """
    file = attachment.file
    if file is None:  # herald gives the file to every adapter with uploads_first = False
        raise Rejected(Reason.MEDIA_INVALID, f"attachment {position + 1} came without its file")
    if not file.is_video and file.width and file.height:
        sides = (file.width, file.height)
        if sum(sides) > _MAX_PHOTO_SIDES or max(sides) > _MAX_PHOTO_RATIO * min(sides):
            raise Rejected(
                Reason.MEDIA_INVALID,
                f"{file.filename} is {file.width}x{file.height}: Telegram takes photos whose width and height "
                f"add up to at most {_MAX_PHOTO_SIDES}, the longer at most {_MAX_PHOTO_RATIO} times the shorter",
            )
    return file


def _kind(file: MediaFile) -> str:
    """The Bot API's name for the file: ``video`` (sendVideo, InputMediaVideo) or ``photo``."""
    return "video" if file.is_video else "photo"


def _part(name: str, file: MediaFile) -> tuple[str, tuple[str, bytes, str]]:
    """One file of a multipart/form-data request, read from herald's store."""
    return (name, (file.filename, file.read(), file.mime))


def _caption(text: str) -> dict[str, str]:
    """The part's text as a caption, left out when empty (a caption is optional, 0-1024)."""
    return {"caption": text} if text else {}


def _video_facts(file: MediaFile) -> dict[str, int]:
    """A video's width, height and duration, as sendVideo and InputMediaVideo take them."""
    if not file.is_video:
        return {}
    facts = {"width": file.width, "height": file.height}
    if file.duration is not None:
        facts["duration"] = round(file.duration)
    return {name: value for name, value in facts.items() if value}


def _form(fields: Mapping[str, Any]) -> dict[str, str]:
    """Fields of a multipart/form-data request: objects and arrays JSON-serialized, as the
    Bot API takes them ("A JSON-serialized object...")."""
    return {name: value if isinstance(value, str) else json.dumps(value) for name, value in fields.items()}

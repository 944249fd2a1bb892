"""How the Telegram Bot API answers, read once: its errors mapped to herald's, its messages to links.

Every answer is a JSON object with a Boolean ``ok``; when it is true the call's value is in
``result``, else ``description`` says why, ``error_code`` repeats the HTTP status ("its
contents are subject to change") and some errors carry ``parameters`` (ResponseParameters:
``retry_after``, ``migrate_to_chat_id``). See https://core.telegram.org/bots/api#making-requests
and #responseparameters.

The Bot API answers a refusal (4xx) before anything is sent to the chat; Telegram's own
server (https://github.com/tdlib/telegram-bot-api, ``telegram-bot-api/Client.cpp``) words
the descriptions matched below, with TDLib's (``td/telegram/MessageContent.cpp``,
``DialogManager.cpp``) and Telegram's MTProto error names
(https://core.telegram.org/method/messages.sendMedia#possible-errors) passed through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from core.plugins import Ambiguous, AuthExpired, ConfigError, Published, RateLimited, Reason, Rejected

#: What a 400's description says (lowercased, as a part of it) and the reason it means.
#: Checked in order; a 400 matching none is a refusal of the content.
_REFUSALS: tuple[tuple[str, Reason], ...] = (
    # Client.cpp: fail_query_with_error(..., "MESSAGE_NOT_FOUND", "message to be replied not found")
    ("message to be replied not found", Reason.THREAD_PARENT_MISSING),
    # TDLib: "Not enough rights to send text messages to the chat" (and photos, videos...),
    # "Have no write access to the chat"; MTProto CHAT_WRITE_FORBIDDEN, CHAT_ADMIN_REQUIRED,
    # CHAT_RESTRICTED, CHAT_SEND_*_FORBIDDEN, USER_BANNED_IN_CHANNEL, which the Bot API
    # turns from 403 into 400 (Client.cpp, fail_query_with_error).
    ("not enough rights", Reason.PERMISSION_DENIED),
    ("have no write access", Reason.PERMISSION_DENIED),
    ("chat_write_forbidden", Reason.PERMISSION_DENIED),
    ("chat_admin_required", Reason.PERMISSION_DENIED),
    ("chat_restricted", Reason.PERMISSION_DENIED),
    ("chat_send_", Reason.PERMISSION_DENIED),
    ("user_banned_in_channel", Reason.PERMISSION_DENIED),
    # TDLib: "Message is too long", "Message caption is too long", "Text must be non-empty";
    # MTProto MEDIA_CAPTION_TOO_LONG, MESSAGE_EMPTY.
    ("message is too long", Reason.CONTENT_REJECTED),
    ("caption is too long", Reason.CONTENT_REJECTED),
    ("media_caption_too_long", Reason.CONTENT_REJECTED),
    ("text must be non-empty", Reason.CONTENT_REJECTED),
    ("message_empty", Reason.CONTENT_REJECTED),
    # Client.cpp: "file is too big", MEDIA_GROUPED_INVALID worded "Can't use the media of the
    # specified type in the album"; TDLib "Photo must be non-empty", "Video must be non-empty";
    # MTProto IMAGE_PROCESS_FAILED, PHOTO_EXT_INVALID, PHOTO_INVALID_DIMENSIONS,
    # PHOTO_SAVE_FILE_INVALID, MEDIA_INVALID, MEDIA_EMPTY, VIDEO_CONTENT_TYPE_INVALID,
    # FILE_PARTS_INVALID, INPUT_FILE_INVALID.
    ("file is too big", Reason.MEDIA_INVALID),
    ("in the album", Reason.MEDIA_INVALID),
    ("photo must be non-empty", Reason.MEDIA_INVALID),
    ("video must be non-empty", Reason.MEDIA_INVALID),
    ("image_process_failed", Reason.MEDIA_INVALID),
    ("photo_", Reason.MEDIA_INVALID),
    ("media_invalid", Reason.MEDIA_INVALID),
    ("media_empty", Reason.MEDIA_INVALID),
    ("video_content_type_invalid", Reason.MEDIA_INVALID),
    ("file_parts_invalid", Reason.MEDIA_INVALID),
    ("input_file_invalid", Reason.MEDIA_INVALID),
)

#: Bot API ids of supergroups and channels: -(1000000000000 + the channel's own id), for
#: channel ids 1 to 997852516352 (https://core.telegram.org/api/bots/ids#supergroup-channel-ids).
_CHANNEL_IDS = range(-1997852516352, -1000000000000)
_CHANNEL_OFFSET = 1000000000000


def raise_for_answer(response: httpx.Response) -> Any:
    """Map one answer of the Bot API to herald's publish errors; an ``ok`` answer returns its ``result``.

    The HTTP status decides, as the Bot API sets it to the error's code; a 2xx whose body says
    ``ok: false`` is read by its ``error_code`` instead.

    Raises:
        ConfigError: ``migrate_to_chat_id`` (the group became a supergroup: a new chat_id),
            400 ``chat not found``, 404 and 421 (no such bot at ``base_url``: a wrong address
            or token): the channel's settings cannot work.
        AuthExpired: 401, the token is invalid or was revoked in @BotFather.
        Rejected: 403 (the bot was blocked, kicked or is not a member: permission denied),
            400 (the reason its description names: the replied-to message is gone, the text
            too long, rights missing, a file refused), 413 (a file too large), other 4xx.
        RateLimited: 429, after ``parameters.retry_after`` seconds (else ``Retry-After``).
        Ambiguous: 5xx, any other status, a body that is not the Bot API's, and an ``ok``
            answer without a result: the message may have been sent.
    """
    status = response.status_code
    body = _body(response)
    if 200 <= status < 300:
        if body is None:
            raise Ambiguous(f"Telegram answered {status} without a Bot API body: {response.text[:200]!r}")
        if body.get("ok") is True:
            if "result" not in body:
                raise Ambiguous(f"Telegram answered ok without a result: {body!r}")
            return body["result"]
        code = body.get("error_code")
        if body.get("ok") is not False or not isinstance(code, int) or isinstance(code, bool) or code < 300:
            raise Ambiguous(f"Telegram answered {status} neither ok nor an error: {body!r}")
        status = code  # a 200 saying ok: false is an error of this code
    description = _text(body, "description")
    parameters = body.get("parameters") if body is not None else None
    parameters = parameters if isinstance(parameters, Mapping) else {}
    message = f"Telegram answered {status}: {description or '(no description)'}"
    migrated = parameters.get("migrate_to_chat_id")
    if isinstance(migrated, int) and not isinstance(migrated, bool):
        raise ConfigError(
            f"{message}; the group is now the supergroup {migrated}: "
            f"`herald channel reconnect CHANNEL --set chat_id={migrated}`"
        )
    if status == 401:
        raise AuthExpired(f"{message}; get a new token from @BotFather", status=status)
    if status == 403:
        raise Rejected(Reason.PERMISSION_DENIED, message, status=status)
    if status == 429:
        raise RateLimited(message, retry_after=_retry_after(parameters, response), status=status)
    if status in (404, 421):
        raise ConfigError(
            f"{message}: no such bot at this address; check the channel's bot_token and base_url "
            "(`herald channel reconnect CHANNEL --set bot_token=... --set base_url=https://api.telegram.org`)"
        )
    if status == 400:
        if "chat not found" in description.lower():
            raise ConfigError(
                f"{message}: the bot does not know this chat; add the bot to it, or fix the chat id "
                "(`herald channel reconnect CHANNEL --set chat_id=@channelusername`)"
            )
        raise Rejected(_reason(description), message, status=status)
    if status == 413:
        raise Rejected(Reason.MEDIA_INVALID, message, status=status)
    if 400 <= status < 500:
        raise Rejected(Reason.CONTENT_REJECTED, message, status=status)
    raise Ambiguous(message, status=status)


def sent_message(result: Any, chat_id: str) -> Published:
    """The message Telegram confirmed (the first of an album): its id, and a link to it.

    Args:
        result: an ``ok`` answer's result: a Message, or an array of them (sendMediaGroup).
        chat_id: the channel's ``chat_id`` setting, for a link when the answer names no chat.

    Raises:
        Ambiguous: no usable message id: a message may exist that herald cannot name. Telegram
            answers ``message_id`` 0 for a video message it scheduled until the video is
            re-encoded ("unusable until it is actually sent",
            https://core.telegram.org/bots/api#message).
    """
    message = result[0] if isinstance(result, list) and result else result
    if not isinstance(message, Mapping):
        raise Ambiguous(f"Telegram confirmed the call without a message: {result!r}")
    message_id = message.get("message_id")
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        raise Ambiguous(f"Telegram confirmed a message without its message_id: {result!r}")
    if message_id <= 0:
        raise Ambiguous(
            f"Telegram accepted the message but gave it no id ({message_id}): it schedules a video "
            "message until the video is re-encoded; look in the chat"
        )
    chat = message.get("chat")
    return Published(str(message_id), message_url(chat if isinstance(chat, Mapping) else {}, chat_id, message_id))


def message_url(chat: Mapping[str, Any], chat_id: str, message_id: int) -> str:
    """Where people see a message (https://core.telegram.org/api/links#message-links).

    ``t.me/<username>/<id>`` in a public channel or supergroup, ``t.me/c/<channel>/<id>`` in a
    private one (it opens for its members); Telegram has no link to a message in a private
    chat or a basic group, which get an empty url.
    """
    kind, username, numeric = chat.get("type"), chat.get("username"), chat.get("id")
    if kind in ("channel", "supergroup"):
        if isinstance(username, str) and username:
            return f"https://t.me/{username}/{message_id}"
        if isinstance(numeric, int) and numeric in _CHANNEL_IDS:
            return f"https://t.me/c/{-numeric - _CHANNEL_OFFSET}/{message_id}"
    if not chat and chat_id.startswith("@"):
        return f"https://t.me/{chat_id[1:]}/{message_id}"
    return ""


def _body(response: httpx.Response) -> Mapping[str, Any] | None:
    """The answer's JSON object, None when it is not one."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, Mapping) else None


def _text(body: Mapping[str, Any] | None, name: str) -> str:
    value = body.get(name) if body is not None else None
    return value if isinstance(value, str) else ""


def _reason(description: str) -> Reason:
    """The reason a 400's description names; a refusal of the content when it names none."""
    said = description.lower()
    return next((reason for phrase, reason in _REFUSALS if phrase in said), Reason.CONTENT_REJECTED)


def _retry_after(parameters: Mapping[str, Any], response: httpx.Response) -> float | None:
    """Seconds to wait: ``parameters.retry_after`` ("the number of seconds left to wait before
    the request can be repeated"), else the ``Retry-After`` header the server also sends."""
    seconds = parameters.get("retry_after")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        return max(float(seconds), 0.0)
    try:
        return max(float(response.headers.get("Retry-After", "")), 0.0)
    except ValueError:
        return None

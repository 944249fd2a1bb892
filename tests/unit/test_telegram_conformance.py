"""The Telegram adapter passes the conformance kit, against Bot API answers shaped as its
reference gives them (https://core.telegram.org/bots/api)."""

from __future__ import annotations

from typing import ClassVar

import respx

from adapters.telegram import TelegramBot
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import AdapterContract

TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
#: https://core.telegram.org/bots/api#making-requests: https://api.telegram.org/bot<token>/METHOD_NAME
SEND_MESSAGE = f"https://api.telegram.org/bot{TOKEN}/sendMessage"
#: #sendmediagroup: the kit's part with two attachments is an album.
SEND_MEDIA_GROUP = f"https://api.telegram.org/bot{TOKEN}/sendMediaGroup"
#: #chat: the channel the messages below were sent to.
CHAT = {"id": -1001234567890, "type": "channel", "title": "Herald", "username": "heraldnews"}

#: Each refusal the kit asks for: the method refused, and the 400's (or 403's) description,
#: worded as the Bot API server and TDLib word it (the file each comes from is named).
REFUSALS: dict[Reason, tuple[str, int, str]] = {
    # TDLib, MessageContent.cpp: "Message is too long"; sendMessage text is "1-4096 characters".
    Reason.CONTENT_REJECTED: (SEND_MESSAGE, 400, "Bad Request: message is too long"),
    # Client.cpp: a bot removed from the channel is answered 403 "Forbidden: bot was kicked from the channel chat".
    Reason.PERMISSION_DENIED: (SEND_MESSAGE, 403, "Forbidden: bot was kicked from the channel chat"),
    # Client.cpp, fail_query_with_error: MESSAGE_NOT_FOUND worded "message to be replied not found".
    Reason.THREAD_PARENT_MISSING: (SEND_MESSAGE, 400, "Bad Request: message to be replied not found"),
    # MTProto IMAGE_PROCESS_FAILED (https://core.telegram.org/method/messages.sendMedia#possible-errors).
    Reason.MEDIA_INVALID: (SEND_MEDIA_GROUP, 400, "Bad Request: IMAGE_PROCESS_FAILED"),
}


class TestTelegramConforms(AdapterContract):
    adapter_class: ClassVar[type[Adapter]] = TelegramBot
    settings: ClassVar[dict[str, str]] = {"bot_token": TOKEN, "chat_id": "@heraldnews"}
    refusals: ClassVar[tuple[Reason, ...]] = tuple(REFUSALS)

    def respond_published(self, router: respx.MockRouter) -> None:
        # sendMessage: "On success, the sent Message is returned" (#sendmessage, #message, #chat).
        router.post(SEND_MESSAGE).respond(
            200,
            json={
                "ok": True,
                "result": {
                    "message_id": 42,
                    "date": 1700000000,
                    "chat": CHAT,
                    "text": "conformance",
                },
            },
        )

    def respond_published_with_media(self, router: respx.MockRouter) -> None:
        # sendMediaGroup: "On success, an array of Messages that were sent is returned" (#sendmediagroup).
        album = [
            {"message_id": 43 + n, "date": 1700000000, "chat": CHAT, "media_group_id": "13", "photo": []}
            for n in range(2)
        ]
        router.post(SEND_MEDIA_GROUP).respond(200, json={"ok": True, "result": album})

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # #making-requests: "'ok' equals false and the error is explained in the 'description'";
        # the wording is the Bot API server's (tdlib/telegram-bot-api, Client.cpp).
        router.post(SEND_MESSAGE).respond(401, json={"ok": False, "error_code": 401, "description": "Unauthorized"})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        # #responseparameters: retry_after, "the number of seconds left to wait before the
        # request can be repeated"; the server also sends Retry-After (HttpConnection.cpp).
        router.post(SEND_MESSAGE).respond(
            429,
            json={
                "ok": False,
                "error_code": 429,
                "description": f"Too Many Requests: retry after {retry_after}",
                "parameters": {"retry_after": retry_after},
            },
            headers={"Retry-After": str(retry_after)},
        )

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        method, status, description = REFUSALS[reason]
        router.post(method).respond(status, json={"ok": False, "error_code": status, "description": description})

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # Client.cpp, fail_query_with_error: 500 is prefixed "Internal Server Error".
        router.post(SEND_MESSAGE).respond(
            500, json={"ok": False, "error_code": 500, "description": "Internal Server Error: Request aborted"}
        )

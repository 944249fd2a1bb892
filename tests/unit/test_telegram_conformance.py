"""The Telegram adapter passes the conformance kit, against Bot API answers shaped as its
reference gives them (https://core.telegram.org/bots/api)."""

from __future__ import annotations

from typing import ClassVar

import respx

from adapters.telegram import TelegramBot
from core.plugins.adapter import Adapter
from core.plugins.conformance import AdapterContract

TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
#: https://core.telegram.org/bots/api#making-requests: https://api.telegram.org/bot<token>/METHOD_NAME
SEND_MESSAGE = f"https://api.telegram.org/bot{TOKEN}/sendMessage"


class TestTelegramConforms(AdapterContract):
    adapter_class: ClassVar[type[Adapter]] = TelegramBot
    settings: ClassVar[dict[str, str]] = {"bot_token": TOKEN, "chat_id": "@heraldnews"}

    def respond_published(self, router: respx.MockRouter) -> None:
        # sendMessage: "On success, the sent Message is returned" (#sendmessage, #message, #chat).
        router.post(SEND_MESSAGE).respond(
            200,
            json={
                "ok": True,
                "result": {
                    "message_id": 42,
                    "date": 1700000000,
                    "chat": {"id": -1001234567890, "type": "channel", "title": "Herald", "username": "heraldnews"},
                    "text": "conformance",
                },
            },
        )

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

    def respond_rejected(self, router: respx.MockRouter) -> None:
        # sendMessage text: "1-4096 characters"; TDLib's "Message is too long" (MessageContent.cpp).
        router.post(SEND_MESSAGE).respond(
            400, json={"ok": False, "error_code": 400, "description": "Bad Request: message is too long"}
        )

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # Client.cpp, fail_query_with_error: 500 is prefixed "Internal Server Error".
        router.post(SEND_MESSAGE).respond(
            500, json={"ok": False, "error_code": 500, "description": "Internal Server Error: Request aborted"}
        )

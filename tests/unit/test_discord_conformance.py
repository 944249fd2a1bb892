"""Both Discord adapters pass the conformance kit every adapter passes.

Every answer below is shaped as Discord's API reference shows it (discord/discord-api-docs,
published at https://discord.com/developers/docs/); the file each comes from is named at
its route.
"""

from __future__ import annotations

from typing import Any, ClassVar

import respx

from adapters.discord import DiscordBot, DiscordWebhook
from core.domain.states import Reason
from core.plugins.adapter import Adapter
from core.plugins.conformance import AdapterContract

API = "https://discord.com/api/v10"
CHANNEL = "290926798999357250"  # developers/resources/message.mdx, "Example Message"
GUILD = "199737254929760256"  # developers/resources/webhook.mdx, "Example Incoming Webhook"
WEBHOOK_ID = "347114750880120863"  # developers/topics/oauth2.mdx, "Webhooks" (the example URL)
WEBHOOK_TOKEN = "kKDdjXa1g9tKNs0-_yOwLyALC9gydEWP6gr9sHabuK1vuofjhQDDnlOclJeRIvYK-pj_"

#: developers/resources/message.mdx, "Example Message" (reactions left out).
MESSAGE: dict[str, Any] = {
    "attachments": [],
    "tts": False,
    "embeds": [],
    "timestamp": "2017-07-11T17:27:07.299000+00:00",
    "mention_everyone": False,
    "id": "334385199974967042",
    "pinned": False,
    "edited_timestamp": None,
    "author": {
        "username": "Mason",
        "discriminator": "9999",
        "id": "53908099506183680",
        "avatar": "a_bab14f271d565501444b2ca3be944b25",
    },
    "mention_roles": [],
    "content": "Supa Hot",
    "channel_id": CHANNEL,
    "mentions": [],
    "type": 0,
}


def form_error(name: str, message: str, code: str) -> dict[str, Any]:
    """50035 "Invalid Form Body" naming the key at fault (developers/reference.mdx, "Error Messages";
    the inner code is illustrative: Discord shows the shape only)."""
    return {
        "message": "Invalid Form Body",
        "code": 50035,
        "errors": {name: {"_errors": [{"code": code, "message": message}]}},
    }


#: The refusals both adapters describe, by status and body (developers/topics/opcodes-and-status-codes.mdx,
#: "HTTP Response Codes" and "JSON Error Codes").
REFUSALS: dict[Reason, tuple[int, dict[str, Any]]] = {
    # 50035 on ``content``: Create Message's "Message contents (up to 2000 characters)".
    Reason.CONTENT_REJECTED: (400, form_error("content", "Must be 2000 or fewer in length.", "BASE_TYPE_MAX_LENGTH")),
    # 50013 "You lack permissions to perform that action".
    Reason.PERMISSION_DENIED: (403, {"message": "Missing Permissions", "code": 50013}),
    # 413 "Request entity too large" (40005): the files passed what the server takes.
    Reason.MEDIA_INVALID: (413, {"message": "Request entity too large", "code": 40005}),
    # The message replied to is gone: 50035 on ``message_reference``.
    Reason.THREAD_PARENT_MISSING: (
        400,
        form_error("message_reference", "Unknown message", "MESSAGE_REFERENCE_UNKNOWN"),
    ),
}


def rate_limited(retry_after: int) -> dict[str, Any]:
    """developers/topics/rate-limits.mdx, "Example Exceeded User Rate Limit Response", with the
    seconds the kit asks for."""
    return {
        "status_code": 429,
        "headers": {
            "Retry-After": str(retry_after),
            "X-RateLimit-Limit": "10",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": "1470173023.123",
            "X-RateLimit-Reset-After": str(retry_after),
            "X-RateLimit-Bucket": "abcd1234",
            "X-RateLimit-Scope": "user",
        },
        "json": {"message": "You are being rate limited.", "retry_after": float(retry_after), "global": False},
    }


class TestDiscordBotConforms(AdapterContract):
    """The bot against Create Message (developers/resources/message.mdx)."""

    adapter_class: ClassVar[type[Adapter]] = DiscordBot
    settings: ClassVar[dict[str, str]] = {"token": "bot-token", "channel_id": CHANNEL, "guild_id": GUILD}
    refusals: ClassVar[tuple[Reason, ...]] = tuple(REFUSALS)

    def messages(self, router: respx.MockRouter) -> respx.Route:
        # POST /channels/{channel.id}/messages: developers/resources/message.mdx, "Create Message".
        return router.post(f"{API}/channels/{CHANNEL}/messages")

    def respond_published(self, router: respx.MockRouter) -> None:
        # "Returns a message object": developers/resources/message.mdx, "Create Message".
        self.messages(router).respond(200, json=MESSAGE)

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # 401 "The Authorization header was missing or invalid" with the documented example body:
        # developers/topics/opcodes-and-status-codes.mdx, "HTTP Response Codes", "Example JSON Error Response".
        self.messages(router).respond(401, json={"message": "Invalid authentication token", "code": 50014})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        # developers/topics/rate-limits.mdx, "Exceeding A Rate Limit".
        self.messages(router).respond(**rate_limited(retry_after))

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        status, body = REFUSALS[reason]
        self.messages(router).respond(status, json=body)

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # 5xx "The server had an error processing your request"; code 0 "General error":
        # developers/topics/opcodes-and-status-codes.mdx.
        self.messages(router).respond(500, json={"message": "500: Internal Server Error", "code": 0})


class TestDiscordWebhookConforms(AdapterContract):
    """The webhook against Execute Webhook (developers/resources/webhook.mdx)."""

    adapter_class: ClassVar[type[Adapter]] = DiscordWebhook
    settings: ClassVar[dict[str, str]] = {
        "webhook_url": f"https://discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        "guild_id": GUILD,
    }
    # A webhook cannot reply (threads=False), so no reply target to find missing.
    refusals: ClassVar[tuple[Reason, ...]] = (Reason.CONTENT_REJECTED, Reason.PERMISSION_DENIED, Reason.MEDIA_INVALID)

    def execute(self, router: respx.MockRouter) -> respx.Route:
        # POST /webhooks/{webhook.id}/{webhook.token}?wait=true: developers/resources/webhook.mdx,
        # "Execute Webhook".
        return router.post(f"{API}/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", params={"wait": "true"})

    def respond_published(self, router: respx.MockRouter) -> None:
        # With wait=true it "returns the created message body": developers/resources/webhook.mdx.
        self.execute(router).respond(200, json=MESSAGE | {"webhook_id": WEBHOOK_ID})

    def respond_auth_expired(self, router: respx.MockRouter) -> None:
        # 50027 "Invalid webhook token provided": developers/topics/opcodes-and-status-codes.mdx.
        self.execute(router).respond(401, json={"message": "Invalid Webhook Token", "code": 50027})

    def respond_rate_limited(self, router: respx.MockRouter, retry_after: int) -> None:
        # developers/topics/rate-limits.mdx, "Exceeding A Rate Limit".
        self.execute(router).respond(**rate_limited(retry_after))

    def respond_rejected(self, router: respx.MockRouter, reason: Reason) -> None:
        if reason is Reason.CONTENT_REJECTED:
            # 200000 "Message was blocked by automatic moderation":
            # developers/topics/opcodes-and-status-codes.mdx, "JSON Error Codes".
            body = {"message": "Message was blocked by automatic moderation", "code": 200000}
            self.execute(router).respond(400, json=body)
            return
        status, body = REFUSALS[reason]
        self.execute(router).respond(status, json=body)

    def respond_server_error(self, router: respx.MockRouter) -> None:
        # 502 "There was not a gateway available to process your request":
        # developers/topics/opcodes-and-status-codes.mdx, "HTTP Response Codes".
        self.execute(router).respond(502, text="<html>502 Bad Gateway</html>")

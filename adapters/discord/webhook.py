"""The ``discord-webhook`` adapter: posts through a channel's webhook URL, no bot needed.

Execute Webhook (``POST /webhooks/{webhook.id}/{webhook.token}``, developers/resources/
webhook.mdx) takes no ``nonce`` and no ``message_reference``: nothing deduplicates a
resend and nothing makes a message a reply. So the strategy is ``none`` (an attempt in
doubt waits for a person) and the adapter posts single messages only
(``Limits(threads=False)``). Its ``thread_id`` query parameter posts *into* a thread
channel – here a channel setting, since a forum or media channel requires one – which is
not a chain of replies. ``?wait=true`` makes Discord answer with the message it made
("waits for server confirmation of message send before response, and returns the created
message body"; without it "a message that is not saved does not return an error").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar
from urllib.parse import urlsplit

from adapters.discord.answers import raise_for_answer
from adapters.discord.ids import EXAMPLE_ID, id_setting, is_snowflake, snowflake
from adapters.discord.message import API, MESSAGE_LIMITS, USER_AGENT, message_payload, read_message, request_body
from core.plugins import (
    Adapter,
    Ambiguous,
    ConfigError,
    Limits,
    PublishContext,
    Published,
    Rate,
    Reason,
    Rejected,
    Setting,
    Strategy,
    VerifyContext,
)

#: Hosts a webhook URL copied from Discord may have. The docs show ``discord.com``
#: (developers/topics/oauth2.mdx, "Webhooks": ``https://discord.com/api/webhooks/347114750880120863/
#: kKDdjXa1g9tKNs0-_yOwLyALC9gydEWP6gr9sHabuK1vuofjhQDDnlOclJeRIvYK-pj_``); the test clients
#: (ptb., canary.) and the old domain copy the same webhook under their own names.
WEBHOOK_HOSTS = frozenset({"discord.com", "ptb.discord.com", "canary.discord.com", "discordapp.com"})

#: ``/api[/vN]/webhooks/{webhook.id}/{webhook.token}``.
_WEBHOOK_PATH = re.compile(r"/api(?:/v\d+)?/webhooks/(?P<id>[0-9]+)/(?P<token>[A-Za-z0-9_-]+)/?")

EXAMPLE_WEBHOOK_URL = "https://discord.com/api/webhooks/ID/TOKEN"


def webhook_endpoint(value: str) -> str | None:
    """Execute Webhook's URL for a webhook URL as Discord shows it, on API v10; None when
    ``value`` is not one."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    match = _WEBHOOK_PATH.fullmatch(parts.path)
    if (
        parts.scheme != "https"
        or (parts.hostname or "").lower() not in WEBHOOK_HOSTS
        or parts.port is not None
        or parts.query
        or parts.fragment
        or match is None
        or not is_snowflake(match["id"])
    ):
        return None
    return f"{API}/webhooks/{match['id']}/{match['token']}"


def webhook_url(value: str) -> str | None:
    """A check: ``value`` is a Discord webhook URL (``https://discord.com/api/webhooks/ID/TOKEN``)."""
    try:
        query = urlsplit(value.strip()).query
    except ValueError:
        query = ""
    if "thread_id=" in query:
        return "carries thread_id: give the URL without it, and the thread as --set thread_id=ID"
    if webhook_endpoint(value) is None:
        return (
            "is not a Discord webhook URL (https://discord.com/api/webhooks/ID/TOKEN: channel settings → "
            "Integrations → Webhooks → Copy Webhook URL)"
        )
    return None


#: Single messages, with what a Discord message takes (see ``MESSAGE_LIMITS``).
WEBHOOK_LIMITS = replace(MESSAGE_LIMITS, threads=False)


class DiscordWebhook(Adapter):
    """A channel's incoming webhook: single messages, under the webhook's name."""

    name: ClassVar[str] = "discord-webhook"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NONE
    limits: ClassVar[Limits] = WEBHOOK_LIMITS
    # Execute Webhook takes the files in the same multipart request as the message.
    uploads_first: ClassVar[bool] = False
    # A webhook is a top-level resource of its own in Discord's per-route limits
    # (docs/topics/rate-limits.md); 5 messages in 5 seconds, as for a bot's channel.
    rates: ClassVar[tuple[Rate, ...]] = (Rate(5, 5),)
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "webhook_url",
            "the channel's webhook URL (channel settings → Integrations → Webhooks → Copy Webhook URL); "
            "whoever has it can post as the webhook",
            required=True,
            secret=True,
            check=webhook_url,
            example=EXAMPLE_WEBHOOK_URL,
        ),
        Setting(
            "guild_id",
            "the id of the server the webhook's channel is in, for the links to its messages (right-click the "
            "server → Copy Server ID; `herald channel test` shows it)",
            required=True,
            check=snowflake,
            example=EXAMPLE_ID,
        ),
        Setting(
            "thread_id",
            "the id of a thread of the webhook's channel to post in; needed for a forum or media channel",
            check=snowflake,
            example=EXAMPLE_ID,
        ),
    )

    def publish(self, ctx: PublishContext) -> Published:
        """Execute the webhook with ``?wait=true``, and the thread setting's ``thread_id``."""
        if ctx.reply_to is not None:
            # Not reachable through herald (threads=False refuses a thread when it is written);
            # sending it anyway would drop the reply and post it on its own.
            raise Rejected(
                Reason.CONTENT_REJECTED,
                "a Discord webhook cannot reply to a message: post the thread through a discord (bot) channel",
            )
        endpoint, guild = _endpoint(ctx.settings), id_setting(ctx.settings, "guild_id", self.name)
        thread = _thread(ctx.settings)
        params = {"wait": "true"} | ({"thread_id": thread} if thread else {})
        response = ctx.client.post(
            endpoint,
            params=params,
            headers={"User-Agent": USER_AGENT},
            **request_body(ctx, message_payload(ctx)),
        )
        raise_for_answer(response, via="webhook")
        return read_message(response, guild_id=guild, channel_id=thread)

    def verify(self, ctx: VerifyContext) -> str:
        """Get Webhook with Token (``GET`` on the webhook's URL; "does not require
        authentication"): the webhook's name and where it posts."""
        response = ctx.client.get(_endpoint(ctx.settings), headers={"User-Agent": USER_AGENT})
        raise_for_answer(response, via="webhook")
        try:
            webhook = response.json()
        except ValueError:
            webhook = None
        if not isinstance(webhook, dict) or not is_snowflake(webhook.get("id")):
            raise Ambiguous(f"Discord answered Get Webhook without the webhook: {response.text[:200]!r}")
        name, channel, guild = webhook.get("name"), webhook.get("channel_id"), webhook.get("guild_id")
        given = ctx.settings.get("guild_id", "").strip()
        if is_snowflake(guild) and given and given != guild:
            raise ConfigError(
                f"the webhook posts in server {guild}, not in {given}: give it with "
                f"`herald channel reconnect NAME --set guild_id={guild}`"
            )
        said = f"the Discord webhook {name!r}" if isinstance(name, str) and name else "a Discord webhook"
        if is_snowflake(channel):
            said += f" of channel {channel}"
        if is_snowflake(guild):
            said += f" in server {guild}"
        return said


def _endpoint(settings: Mapping[str, str]) -> str:
    endpoint = webhook_endpoint(settings.get("webhook_url", ""))
    if endpoint is None:
        raise ConfigError(
            "the discord-webhook channel has no valid webhook_url setting; give the channel's webhook URL with "
            f"`herald channel reconnect NAME --set webhook_url={EXAMPLE_WEBHOOK_URL}`"
        )
    return endpoint


def _thread(settings: Mapping[str, str]) -> str | None:
    return id_setting(settings, "thread_id", DiscordWebhook.name) if settings.get("thread_id", "").strip() else None

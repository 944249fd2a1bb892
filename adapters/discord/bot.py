"""The ``discord`` adapter: a bot posts to one channel, deduplicated by the message's nonce.

Create Message (``POST /channels/{channel.id}/messages``, developers/resources/message.mdx)
takes ``nonce`` ("up to 25 characters") and ``enforce_nonce``: "If true and nonce is
present, it will be checked for uniqueness in the past few minutes. If another message was
created by the same author with the same nonce, that message will be returned and no new
message will be created." herald's delivery key is ≤ 25 characters and the same on every
retry, so a resend within that window returns the first message instead of a second one.

There is no read-back (``find``): Get Channel Messages returns message objects whose
``nonce`` is documented only as "used for validating a message was sent", and the nonce
of Create Message "will appear in the Message Create event" – the Gateway's, not the
stored message's. Nothing documented says a message read back carries it, and matching on
text instead would adopt an older post with the same words. Past ``key_ttl`` herald holds
an attempt in doubt for a person (``ambiguous_outcome``) rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

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
    RateScope,
    Setting,
    Strategy,
    VerifyContext,
)

#: Seconds herald counts on Discord remembering a nonce. The docs say "the past few
#: minutes" (developers/resources/message.mdx, ``enforce_nonce``; developers/change-log.mdx,
#: February 12, 2024: "deduped for the same sender within a few minutes"): two minutes is
#: the least those words can mean. Counted from the attempt's start, before Discord made
#: the message, so the real window is longer still.
NONCE_TTL = 120.0


def bot_token(value: str) -> str | None:
    """A check: ``value`` looks like a bot token alone (herald adds ``Bot `` itself)."""
    if value.lower().startswith("bot "):
        return "starts with 'Bot ': give the token alone, herald sends it as 'Bot TOKEN'"
    if any(c.isspace() for c in value):
        return "has spaces in it: copy the token again, alone"
    return None


class DiscordBot(Adapter):
    """A Discord bot posting to one text channel (or thread), replying for threads."""

    name: ClassVar[str] = "discord"
    version: ClassVar[str] = "1"
    strategy: ClassVar[Strategy] = Strategy.NATIVE_KEY
    key_ttl: ClassVar[float | None] = NONCE_TTL
    key_in: ClassVar[str | None] = "body:nonce"
    limits: ClassVar[Limits] = MESSAGE_LIMITS
    # Create Message takes the files in the same multipart request as the message.
    uploads_first: ClassVar[bool] = False
    # Discord's docs give no route's numbers ("should not be hard coded"; the headers say
    # them), but their example bucket, and what libraries have long kept to, is 5 messages
    # in 5 seconds per channel; and "all bots can make up to 50 requests per second"
    # (discord/discord-api-docs, docs/topics/rate-limits.md, Global Rate Limit).
    rates: ClassVar[tuple[Rate, ...]] = (Rate(5, 5), Rate(50, 1, RateScope.PLATFORM))
    settings: ClassVar[tuple[Setting, ...] | None] = (
        Setting(
            "token",
            "the bot's token (Developer Portal → your application → Bot → Reset Token)",
            required=True,
            secret=True,
            check=bot_token,
            example="TOKEN",
        ),
        Setting(
            "channel_id",
            "the id of the text channel (or thread) the bot posts in (right-click it → Copy Channel ID)",
            required=True,
            check=snowflake,
            example=EXAMPLE_ID,
        ),
        Setting(
            "guild_id",
            "the id of the server the channel is in, for the links to its messages (right-click the server → "
            "Copy Server ID)",
            required=True,
            check=snowflake,
            example=EXAMPLE_ID,
        ),
    )

    def publish(self, ctx: PublishContext) -> Published:
        """Create the message, with the part's key as its enforced nonce and, in a thread,
        a ``message_reference`` to the part it replies to."""
        channel = id_setting(ctx.settings, "channel_id", self.name)
        guild = id_setting(ctx.settings, "guild_id", self.name)
        payload = message_payload(ctx) | {"nonce": ctx.key, "enforce_nonce": True}
        if ctx.reply_to is not None:
            # "Replies are created by including a message_reference when sending a message. When
            # sending, only message_id is required" (message.mdx, "Replies"). fail_if_not_exists
            # (default true) keeps a reply to a deleted part from going out as a plain message.
            payload["message_reference"] = {"message_id": ctx.reply_to, "fail_if_not_exists": True}
        response = ctx.client.post(
            f"{API}/channels/{channel}/messages", headers=_headers(ctx.settings), **request_body(ctx, payload)
        )
        raise_for_answer(response, via="bot")
        return read_message(response, guild_id=guild, channel_id=channel)

    def verify(self, ctx: VerifyContext) -> str:
        """Get Current User (``GET /users/@me``, developers/resources/user.mdx): the bot's name."""
        response = ctx.client.get(f"{API}/users/@me", headers=_headers(ctx.settings))
        raise_for_answer(response, via="bot")
        try:
            user = response.json()
        except ValueError:
            user = None
        username = user.get("username") if isinstance(user, dict) else None
        if not isinstance(username, str) or not username:
            raise Ambiguous(f"Discord answered Get Current User without a username: {response.text[:200]!r}")
        discriminator = user.get("discriminator") if isinstance(user, dict) else None
        # Users without a Discord-tag have the discriminator "0".
        tag = f"#{discriminator}" if isinstance(discriminator, str) and discriminator.strip("0") else ""
        user_id = user.get("id") if isinstance(user, dict) else None
        return f"the Discord bot {username}{tag}" + (f" (id {user_id})" if is_snowflake(user_id) else "")


def _headers(settings: Mapping[str, str]) -> dict[str, str]:
    """``Authorization: Bot TOKEN`` (developers/reference.mdx, "Authentication") and the User-Agent."""
    token = settings.get("token", "").strip()
    if not token:
        raise ConfigError(
            "the discord channel has no token setting; give the bot's token with "
            "`herald channel reconnect NAME --set token=TOKEN`"
        )
    return {"Authorization": f"Bot {token}", "User-Agent": USER_AGENT}

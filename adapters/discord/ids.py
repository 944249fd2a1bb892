"""Discord's ids (snowflakes), the check of the settings that hold them, and message links.

Every Discord id is a snowflake: an unsigned 64-bit number, sent as a string of digits
(https://discord.com/developers/docs/reference#snowflakes; discord/discord-api-docs
developers/reference.mdx, "Snowflakes" and "ID Serialization").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

from core.plugins import ConfigError

#: The largest snowflake: ids are up to 64 bits (developers/reference.mdx, "Snowflakes").
MAX_SNOWFLAKE = 2**64 - 1

#: An id to show in examples: the docs' example webhook's (developers/resources/webhook.mdx).
EXAMPLE_ID = "199737254929760256"

#: Where people see a message: server (guild), channel, message. The API's message object
#: carries no guild id (developers/resources/message.mdx, "Message Structure"), so the
#: channel's settings name it. The form is the one of the links in the docs themselves
#: (developers/change-log.mdx: ``https://discord.com/channels/613425648685547541/
#: 697138785317814292/1233463756160503859``; developers/tutorials/hosting-on-cloudflare-
#: workers.mdx: "the Guild ID is the first number").
MESSAGE_LINK = "https://discord.com/channels/{guild}/{channel}/{message}"


def is_snowflake(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a Discord id: a string of digits that fits in 64 bits."""
    return isinstance(value, str) and value.isascii() and value.isdigit() and int(value) <= MAX_SNOWFLAKE


def snowflake(value: str) -> str | None:
    """A check: ``value`` is a Discord id (Developer Mode on, then right-click → Copy ID)."""
    if is_snowflake(value):
        return None
    if value.startswith(("http://", "https://")):
        return "is a link, not an id: give the number alone (Developer Mode on, then right-click → Copy ID)"
    return "is not a Discord id (digits only: turn Developer Mode on, then right-click → Copy ID)"


def message_url(guild_id: str, channel_id: str, message_id: str) -> str:
    """The link people open to see a message."""
    return MESSAGE_LINK.format(guild=guild_id, channel=channel_id, message=message_id)


def id_setting(settings: Mapping[str, str], name: str, platform: str) -> str:
    """A channel setting holding a Discord id, checked before it goes into a URL.

    Raises:
        ConfigError: it is missing or not an id (a channel made before the check), naming the fix.
    """
    value = settings.get(name, "").strip()
    if not is_snowflake(value):
        what = "has no" if not value else "has a wrong"
        raise ConfigError(
            f"the {platform} channel {what} {name} setting (a Discord id: digits only); give it with "
            f"`herald channel reconnect NAME --set {name}=ID`"
        )
    return value

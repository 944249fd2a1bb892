"""Discord: a bot posting to a channel (``discord``), or a channel's webhook (``discord-webhook``).

``bot.py`` and ``webhook.py`` hold the two adapters, ``message.py`` the message both send
(text, files with alt text) and read back, ``answers.py`` the one mapping of Discord's
answers to herald's errors, ``ids.py`` Discord's ids and the links built from them.
Everything is taken from Discord's API reference, the discord/discord-api-docs
repository (https://discord.com/developers/docs/).

Using it
========

**A bot** (``--platform discord``) posts as your application's bot user, deduplicates a
resend by the message's nonce for a couple of minutes, and posts a thread as a chain of
replies. A channel needs:

* ``token`` (secret): the bot's token. In the Developer Portal
  (https://discord.com/developers/applications) make an application, open *Bot*, and
  *Reset Token*; copy it alone (herald sends ``Authorization: Bot TOKEN``). Invite the bot
  to your server (*OAuth2 → URL Generator*, scope ``bot``) with the *Send Messages*,
  *Read Message History* (for threads, which are replies) and *Attach Files* permissions.
* ``channel_id``: the text channel (or thread) to post in. Turn on *Developer Mode*
  (User Settings → Advanced), then right-click the channel → *Copy Channel ID*.
* ``guild_id``: the server the channel is in, for links to the messages: right-click the
  server → *Copy Server ID*.

::

    herald channel add --platform discord --name news \\
        --set token=TOKEN --set channel_id=199737254929760256 --set guild_id=199737254929760256
    herald channel test news    # says which bot the token belongs to

**A webhook** (``--platform discord-webhook``) needs no bot, and posts under the
webhook's name and avatar; it cannot reply, so it takes single posts, not threads, and
Discord cannot tell whether an attempt in doubt landed, so herald asks a person. A channel
needs:

* ``webhook_url`` (secret): in the channel's settings, *Integrations → Webhooks → New
  Webhook → Copy Webhook URL* (``https://discord.com/api/webhooks/ID/TOKEN``).
* ``guild_id``: the server's id, as above (``herald channel test`` shows it).
* ``thread_id`` (optional): a thread of the webhook's channel to post in; a forum or media
  channel needs one.

Both take up to 10 images or videos (PNG, JPEG, GIF, WebP, AVIF, MP4, MOV, WebM) of up to
10 MiB each and 25 MiB together, with alt text of up to 1024 characters, and text of up
to 2000 characters. Servers with more boosts allow bigger files; herald keeps to the
limit every server has.
"""

from __future__ import annotations

from adapters.discord.bot import DiscordBot
from adapters.discord.webhook import DiscordWebhook
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["DiscordBot", "DiscordWebhook", "herald_register_adapters"]

#: Both Discord adapters, in the order they are registered.
DISCORD_ADAPTERS = (DiscordBot, DiscordWebhook)


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the Discord bot adapter and the Discord webhook adapter."""
    for adapter in DISCORD_ADAPTERS:
        register(adapter)

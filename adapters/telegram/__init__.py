"""Telegram: a bot posts each part to one chat (a channel, a group, a private chat).

Using it
--------
A Telegram channel needs a bot and a chat it may post in:

1. Create a bot with @BotFather (``/newbot``) and copy the token it gives, shaped like
   ``123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11``. ``/revoke`` there makes a new one.
2. Add the bot to the chat. In a channel it must be an administrator allowed to post
   messages; in a group, a member allowed to send messages.
3. Name the chat: a public channel or supergroup by its ``@username``, any other chat by its
   numeric id (``-100…`` for channels and supergroups). The bot sees a chat's id in the
   ``chat`` of the updates ``https://api.telegram.org/bot<token>/getUpdates`` answers once
   something is posted there.

::

    herald channel add --platform telegram --name news \\
        --set bot_token=123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11 --set chat_id=@mychannel
    herald channel test news        # getMe: answers the bot's @username

Settings: ``bot_token`` (required, secret), ``chat_id`` (required: ``@username`` or numeric
id), ``base_url`` (optional: a local Bot API server, ``https://api.telegram.org`` when left
out).

What herald does with it:

* A part is one message: text up to 4096 characters, or up to 10 photos (JPEG, PNG, 10 MB)
  and MP4 videos (50 MB) with the text as their caption, up to 1024 characters. There is no
  alt text on Telegram. A thread is a chain of replies.
* Links: ``https://t.me/<username>/<id>`` in a public channel or supergroup,
  ``https://t.me/c/<id>/<id>`` in a private one (for its members). A message in a private
  chat or a basic group has no link: its url is left empty. Its platform id is the message
  id, so ``herald post resolve POST --channel news landed --url https://t.me/mychannel/42``
  records message 42.
* Telegram offers no idempotency key and a bot cannot read a chat's history, so an attempt
  that may have been sent (a timeout, a 5xx) is held ``ambiguous_outcome`` for a person to
  look in the chat and resolve it; ``--set resend_in_doubt=true`` sends it again instead.
* A group upgraded to a supergroup gets a new id: herald holds the channel
  ``channel_misconfigured`` and names the new ``chat_id`` to set.
"""

from __future__ import annotations

from adapters.telegram.adapter import TelegramBot
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["TelegramBot", "herald_register_adapters"]


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the Telegram bot adapter."""
    register(TelegramBot)

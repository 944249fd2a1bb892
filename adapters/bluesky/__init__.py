"""Bluesky: an account posts each part through its PDS, signed in with an app password.

``adapter.py`` holds the adapter and how a resend stays one post, ``record.py`` the post
record and herald's names for a post, ``facets.py`` the links, mentions and hashtags of its
text, ``tid.py`` the record key a delivery key gives, ``session.py`` the sign-in and its
refreshes, ``answers.py`` the one mapping of the PDS's answers to herald's errors.
Everything is taken from the AT Protocol's lexicons and specs (bluesky-social/atproto,
https://atproto.com/specs) and Bluesky's developer docs (bluesky-social/bsky-docs,
https://docs.bsky.app).

Using it
========

A channel posts as one Bluesky account, and needs:

* ``handle``: the account's handle, as shown under its name on its profile, without the
  ``@`` (``alice.bsky.social``, or a domain of its own); its DID (``did:plc:...``) works too.
* ``app_password`` (secret): an app password, never the account's own password. On
  bsky.app open *Settings → Privacy and security → App passwords → Add App Password*,
  give it a name (``herald``) and copy the password it shows once
  (``xxxx-xxxx-xxxx-xxxx``). Deleting it there disconnects herald within minutes (its
  sessions end with it).
* ``service`` (optional): the address of the account's PDS, for an account hosted
  elsewhere than Bluesky; ``https://bsky.social`` when left out.

::

    herald channel add --platform bluesky --name news \\
        --set handle=alice.bsky.social --set app_password=xxxx-xxxx-xxxx-xxxx
    herald channel test news    # signs in: names the account's handle and DID

What herald does with it:

* A part is one post of up to 300 graphemes (what people see as characters: an emoji with
  its modifiers is one) and 3000 bytes. Links (``https://...``), mentions (``@handle``, of an
  account that exists) and hashtags (``#tag``) in it are made clickable.
* Up to 4 images (JPEG, PNG, GIF, WebP) of up to 2 MB (2,000,000 bytes) each, with alt
  text. No video.
* A thread is a chain of replies, each naming the thread's first post and the one before.
* The link of a post is ``https://bsky.app/profile/HANDLE/post/RKEY``; its platform id
  ``at://DID/app.bsky.feed.post/RKEY|CID``. To record a post by hand, ``herald post resolve
  POST --channel news landed --url https://bsky.app/profile/alice.bsky.social/post/RKEY``
  is enough: a later reply looks the post up by its key.
* herald chooses each post's record key from the part's delivery key, so an attempt that
  may have landed is sent again safely, however late: the account holds one post at that
  key at most, and a resend finds it there instead of making another.
* A sign-in lasts while herald runs, and is renewed when it expires; Bluesky limits
  sign-ins to 30 per 5 minutes and 300 a day per account.
"""

from __future__ import annotations

from adapters.bluesky.adapter import Bluesky
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["Bluesky", "herald_register_adapters"]


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the Bluesky adapter."""
    register(Bluesky)

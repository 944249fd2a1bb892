"""Mastodon: an account posts statuses to its own instance (``--platform mastodon``).

``adapter.py`` holds the adapter, ``answers.py`` the one mapping of Mastodon's answers to
herald's errors, ``limits.py`` what an instance takes. Everything is taken from Mastodon's
API documentation, the mastodon/documentation repository (https://docs.joinmastodon.org/).

Using it
========

A Mastodon channel posts as one account, with an access token of that account:

1. On the account's instance, open *Preferences → Development → New application*. Give it
   a name (``herald``), keep the redirect URI as it is, and tick only the scopes
   ``write:statuses``, ``write:media`` and ``read:accounts``. Submit, open the application,
   and copy *Your access token*. (Any OAuth client can make one too: the authorization code
   flow of https://docs.joinmastodon.org/client/authorized/ with those scopes.)
2. Note the instance's address, its root alone: ``https://mastodon.social``.

::

    herald channel add --platform mastodon --name toots \\
        --set base_url=https://mastodon.social --set token=TOKEN --set visibility=unlisted
    herald channel test toots      # verify_credentials: answers @you@mastodon.social

Settings: ``base_url`` (required: the instance's address), ``token`` (required, secret: the
access token), ``visibility`` (optional: ``public``, ``unlisted``, ``private`` – followers
only – or ``direct``; ``public`` when left out).

What herald does with it:

* A part is one status. A stock instance takes 500 characters (counted as people see them,
  each link as 23), 4 images of up to 16 MB or one video of up to 99 MB, and alt text of up
  to 1500 characters; herald reads the instance's own limits when the channel is added, as
  an instance may set others. A thread is a chain of replies.
* Each attempt sends the part's key as ``Idempotency-Key``, which Mastodon keeps for an
  hour: a resend in that hour returns the first status instead of a second one. Past the
  hour an attempt in doubt (a timeout, a 5xx) is held ``ambiguous_outcome``: look at the
  account's profile and ``herald post resolve POST --channel toots landed --url URL`` or
  ``... send-again``.
* A refused token (revoked, or the application deleted) holds the channel
  ``auth_expired``: make a new token and ``herald channel reconnect toots --set token=TOKEN``.
  A token missing a scope is refused as ``permission_denied``, naming the scopes.
"""

from __future__ import annotations

from adapters.mastodon.adapter import Mastodon
from core.plugins import RegisterAdapter, hookimpl

__all__ = ["Mastodon", "herald_register_adapters"]


@hookimpl
def herald_register_adapters(register: RegisterAdapter) -> None:
    """Register the Mastodon adapter."""
    register(Mastodon)

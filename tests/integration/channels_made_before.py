"""Channels as herald stored them before adapters declared their settings (§9): unchecked.

``herald channel add`` now refuses a channel its adapter cannot work with; channels made
before stay in the database, and ``channel_misconfigured`` at publish time is still the
net for them. Tests make such a channel with :func:`add_unchecked_channel`.
"""

from __future__ import annotations

from core.services.channels import DEFAULT_ACCOUNT, insert_channel


def add_unchecked_channel(name: str, platform: str, settings: dict[str, str], account: str = DEFAULT_ACCOUNT) -> int:
    """A channel row written as it is, without checking its settings. Returns its id."""
    return insert_channel(name, platform, settings, account)

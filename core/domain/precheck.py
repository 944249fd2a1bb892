"""The pre-publish check: "is this already on the platform?", asked before a part's first send.

On a ``read_back`` channel the publish job asks the adapter's ``find`` before it sends a
part that no attempt of herald's has sent yet (``core.runtime.job``). A copy found then
was published by something else – another tool, a person, a second herald with a copy of
this database – so the delivery is held ``duplicate_suspected`` for a person, who either
adopts the copy as herald's (``herald post resolve ... adopt``) or publishes anyway
(``... send-again``). Nothing is skipped silently and nothing is overwritten.

The check is on by default where the adapter says its ``find`` is cheap
(``Adapter.cheap_find``); the channel setting ``precheck`` turns it off (or on, for an
adapter whose search is dear): ``core.plugins.channel_settings.precheck_on``.
``native_key`` channels are never checked: the key they send makes the platform refuse a
second copy anyway. ``none`` channels cannot be asked.

This module words the hold's detail, which names the copy found, and reads it back when
a person adopts that copy.
"""

from __future__ import annotations

import re

#: What follows the copy's platform id in the detail; the id is everything before it.
_AFTER = "), found before herald's first send of this part: herald did not send it"
_FOUND = re.compile(
    r"a copy is already on the platform at (?P<url>\S+) \(platform id (?P<platform_id>.+)" + re.escape(_AFTER)
)


def copy_found(url: str, platform_id: str) -> str:
    """The detail of a ``duplicate_suspected`` hold: where the copy is (read back by
    :func:`found_in` when a person adopts it)."""
    return f"a copy is already on the platform at {url} (platform id {platform_id}{_AFTER}"


def found_in(detail: str | None) -> tuple[str, str] | None:
    """The URL and platform id of the copy a ``duplicate_suspected`` hold names, if it does."""
    match = _FOUND.fullmatch(detail or "")
    if match is None:
        return None
    return match["url"], match["platform_id"]

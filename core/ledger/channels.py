"""Whether herald may post with a channel's credentials: the one writer of
``channels.connected``.

The publish path marks a channel disconnected when the platform refuses its
credentials; a person's reconnect marks it connected again. Admission reads the flag.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import Connection, Table, update
from sqlalchemy.orm import Session

from core.store.models import Channel

channels = cast(Table, Channel.__table__)


def set_connected(conn: Connection | Session, channel_id: int, *, connected: bool) -> None:
    """Mark channel ``channel_id`` connected or disconnected, in the caller's transaction."""
    conn.execute(update(channels).where(channels.c.id == channel_id).values(connected=connected))

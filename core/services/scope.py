"""What a key's account may see (§15): one check for the API and the dashboard alike.

Another account's post, channel, alarm, media or key is answered as if it did not exist
(``NotFound``), so a key cannot learn what other accounts hold.
"""

from __future__ import annotations

from sqlalchemy import select

from core.domain.errors import NotFound
from core.store import db
from core.store.models import Alarm, Channel, Media, Post


def own_post(account_id: int, post_id: int) -> None:
    """Raises: NotFound: no post ``post_id`` in the account."""
    with db.reading() as s:
        owner = s.execute(select(Post.account_id).where(Post.id == post_id)).scalar_one_or_none()
    if owner != account_id:
        raise NotFound(f"no post {post_id}")


def own_channel(account_id: int, name: str) -> None:
    """Raises: NotFound: no channel ``name`` in the account."""
    with db.reading() as s:
        owner = s.execute(
            select(Channel.account_id).where(Channel.name == name, Channel.removed_at.is_(None))
        ).scalar_one_or_none()
    if owner != account_id:
        raise NotFound(f"no channel named {name!r}")


def own_alarm(account_id: int, alarm_id: int) -> None:
    """Raises: NotFound: no alarm ``alarm_id`` on the account's channels (a post's
    channels are its account's; a schedule's alarm has no post)."""
    with db.reading() as s:
        owner = s.execute(
            select(Channel.account_id).join(Alarm, Alarm.channel_id == Channel.id).where(Alarm.id == alarm_id)
        ).scalar_one_or_none()
    if owner != account_id:
        raise NotFound(f"no alarm {alarm_id}")


def own_media(account_id: int, media_id: int) -> None:
    """Raises: NotFound: no kept file ``media_id`` in the account."""
    with db.reading() as s:
        owner = s.execute(select(Media.account_id).where(Media.id == media_id)).scalar_one_or_none()
    if owner != account_id:
        raise NotFound(f"no media {media_id}")

"""The API over real SQL and Redis: the integration fixtures, two accounts with a channel,
a post, an alarm, a kept file (the same bytes for both) and a key each, and a key of every
role for the first.

``alpha`` is the key's own account, ``beta`` another one: its rows must answer 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.sandbox.server import SandboxServer
from core.api.app import create_app
from core.config import Settings
from core.domain.roles import Role
from core.runtime.clock import DatabaseClock
from core.services.channels import add_channel
from core.services.keys import create_key
from core.services.media import add_media, media_account
from core.services.posts import submit_post
from core.store import db
from core.store.models import Alarm, AlarmKind, Channel
from tests.integration import conftest as integration
from tests.integration.media_files import png

# The integration tests' fixtures, shared: one database, Redis and sandbox per session.
database_url = integration.database_url
migrated = integration.migrated
redis_url = integration.redis_url
sandbox = integration.sandbox
herald = integration.herald

#: A channel setting the sandbox reads as a secret: no answer may carry it.
SECRET_TOKEN = "t-ok-secret-4f2a9c"


@dataclass(frozen=True)
class Side:
    """One account's rows."""

    account: str
    channel: str
    post: int
    alarm: int
    #: A kept file: the same picture in both accounts, each its own row.
    media: int
    #: A viewer key of the account, that no test request uses to authenticate.
    key: int


@dataclass(frozen=True)
class World:
    own: Side
    other: Side
    #: role → the secret of a key of ``own``'s account acting as it.
    keys: dict[Role, str]

    def auth(self, role: Role) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}"}


def _side(account: str, channel: str, sandbox_url: str, picture: Path) -> Side:
    add_channel(channel, "sandbox-native", {"base_url": sandbox_url, "token": SECRET_TOKEN}, account)
    media = add_media(picture, account_id=media_account(account)).media.id
    key = create_key(account, Role.VIEWER, name="listed, never used").key.id
    now = DatabaseClock(db.engine()).now()
    post = submit_post(channels=[channel], parts=[f"{account}'s post"], at=now + timedelta(days=1)).post_id
    with db.transaction() as s:
        channel_id = s.execute(select(Channel.id).where(Channel.name == channel)).scalar_one()
        alarm = Alarm(
            kind=AlarmKind.MISSED_SLOT,
            post_id=post,
            channel_id=channel_id,
            slot=now,
            detail="a test alarm",
            open_key=f"missed_slot:{post}:{channel_id}",
            opened_at=now,
        )
        s.add(alarm)
        s.flush()
        alarm_id = alarm.id
    return Side(account, channel, post, alarm_id, media, key)


@pytest.fixture
def world(herald: Settings, sandbox: SandboxServer, tmp_path: Path) -> World:
    picture = png(tmp_path / "picture.png")
    own = _side("alpha", "a1", sandbox.url, picture)
    other = _side("beta", "b1", sandbox.url, picture)
    keys = {role: create_key("alpha", role).secret for role in Role}
    return World(own, other, keys)


@pytest.fixture
def client(herald: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(), raise_server_exceptions=False) as test_client:
        yield test_client

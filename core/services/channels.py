"""Accounts and channels: where posts go, and who they belong to."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound, UserError
from core.plugins import manager as plugins
from core.runtime.clock import DatabaseClock
from core.store import db
from core.store.models import Account, Channel

DEFAULT_ACCOUNT = "default"


def account_named(s: Session, name: str, *, create: bool = False) -> Account:
    """The account called ``name`` (created on first use when ``create``)."""
    account = s.execute(select(Account).where(Account.name == name)).scalar_one_or_none()
    if account is None:
        if not create:
            raise NotFound(f"no account named {name!r}")
        account = Account(name=name, created_at=DatabaseClock(db.engine()).now())
        s.add(account)
        s.flush()
    return account


def parse_settings(pairs: list[str]) -> dict[str, str]:
    """``["key=value", ...]`` from ``--set`` options.

    Raises:
        UserError: an item without ``=``.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {pair!r}: write key=value, e.g. --set base_url=http://127.0.0.1:8025")
        out[key.strip()] = value.strip()
    return out


def add_channel(name: str, platform: str, settings: dict[str, str], account: str = DEFAULT_ACCOUNT) -> int:
    """Add a channel on an enabled platform adapter. Returns its id.

    Raises:
        NotFound: the platform has no enabled adapter.
        Conflict: a channel of that name exists.
    """
    plugins.adapter(platform)  # refuse unknown platforms now, not at publish time
    with db.transaction() as s:
        if s.execute(select(Channel.id).where(Channel.name == name)).first():
            raise Conflict(f"a channel named {name!r} exists; pick another name")
        owner = account_named(s, account, create=True)
        channel = Channel(
            name=name,
            platform=platform,
            settings=settings,
            account_id=owner.id,
            created_at=DatabaseClock(db.engine()).now(),
        )
        s.add(channel)
        s.flush()
        return channel.id


def list_channels() -> list[dict[str, Any]]:
    with db.reading() as s:
        rows = s.execute(select(Channel, Account.name).join(Account).order_by(Channel.name)).all()
        return [
            {
                "name": c.name,
                "platform": c.platform,
                "account": account,
                "connected": c.connected,
                "settings": dict(c.settings),
            }
            for c, account in rows
        ]


def reconnect_channel(name: str, settings: dict[str, str] | None = None) -> None:
    """Mark a channel connected again (after new credentials), merging new settings."""
    with db.transaction() as s:
        channel = s.execute(select(Channel).where(Channel.name == name)).scalar_one_or_none()
        if channel is None:
            raise NotFound(f"no channel named {name!r}")
        channel.connected = True
        if settings:
            channel.settings = {**channel.settings, **settings}

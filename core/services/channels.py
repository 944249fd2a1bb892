"""Accounts and channels: where posts go, and who they belong to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound, UserError
from core.domain.states import Reason
from core.ledger import support
from core.ledger.channels import set_connected
from core.plugins import manager as plugins
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock
from core.services.posts import lift_admission_holds
from core.store import db
from core.store.models import Account, Channel

DEFAULT_ACCOUNT = "default"

#: What in a setting's name makes its value a secret (``token``, ``api_key``,
#: ``client_secret``, ``appPassword``...), matched anywhere in the name so ``apikey`` and
#: ``accesstoken`` count too; masking a harmless setting by mistake costs nothing.
_SECRET = re.compile(r"token|passw|secret|key|credential|auth|cookie", re.IGNORECASE)
#: The most of a secret's end shown, to tell two credentials apart.
_SHOWN = 4
MASK = "••••"


@dataclass(frozen=True)
class ChannelView:
    """A channel as `herald channel list` shows it; secrets masked."""

    name: str
    platform: str
    account: str
    #: False once the platform refused its credentials: `herald channel reconnect` it.
    connected: bool
    settings: Mapping[str, str]


@dataclass(frozen=True)
class Reconnected:
    """What `herald channel reconnect` did."""

    channel: ChannelView
    #: The names of the settings the reconnect replaced or added.
    updated_settings: tuple[str, ...]
    #: The posts armed again now that admission may let them through.
    armed: tuple[int, ...]


def is_secret(setting: str) -> bool:
    """Whether a setting called ``setting`` holds a credential (never printed whole)."""
    return _SECRET.search(setting) is not None


def mask(value: str) -> str:
    """``••••`` and the value's last 4 characters at most – a quarter of it for a short
    one – enough to tell two credentials apart, never enough to use one."""
    if not value:
        return ""
    return MASK + value[len(value) - min(_SHOWN, len(value) // 4) :]


def _channel_view(channel: Channel, account: str) -> ChannelView:
    shown = {key: mask(str(value)) if is_secret(key) else str(value) for key, value in sorted(channel.settings.items())}
    return ChannelView(
        name=channel.name,
        platform=channel.platform,
        account=account,
        connected=channel.connected,
        settings=MappingProxyType(shown),
    )


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


def show_channels() -> list[ChannelView]:
    """Every channel, by name, with its settings' secrets masked."""
    with db.reading() as s:
        rows = s.execute(select(Channel, Account.name).join(Account).order_by(Channel.name)).all()
        return [_channel_view(c, account) for c, account in rows]


#: Holds of a channel's deliveries that a reconnect (new credentials or settings) lifts:
#: the refused credentials, the settings that could not work, and the disconnection.
CHANNEL_HOLDS = frozenset({Reason.AUTH_EXPIRED, Reason.CHANNEL_MISCONFIGURED, Reason.CHANNEL_DISCONNECTED})


def reconnect_channel(name: str, settings: dict[str, str] | None = None) -> Reconnected:
    """Mark a channel connected again (after new credentials), merging new settings, and
    re-admit what it held: this channel's deliveries held because its credentials were
    refused or its settings could not work, and every delivery admission held (the
    disconnection among them), go out. This channel's get a fresh attempt budget and a
    line in their timeline (``core.ledger.support``).

    Raises:
        NotFound: no channel of that name.
    """
    with db.transaction() as s:
        row = s.execute(select(Channel, Account.name).join(Account).where(Channel.name == name)).one_or_none()
        if row is None:
            raise NotFound(f"no channel named {name!r}; `herald channel list` shows them")
        channel, account = row
        if settings:
            channel.settings = {**channel.settings, **settings}
        s.flush()
        set_connected(s, channel.id, connected=True)
        s.refresh(channel)
        view = _channel_view(channel, account)
        # Each lifted delivery gets a fresh attempt budget and a line in its timeline.
        own = support.lift_channel_holds(s, channel.id, CHANNEL_HOLDS, DatabaseClock(db.engine()).now())
    for post_id in own:
        arm(post_id)
    armed = sorted({*own, *lift_admission_holds()})
    return Reconnected(channel=view, updated_settings=tuple(sorted(settings or {})), armed=tuple(armed))

"""Accounts and channels: where posts go, and who they belong to."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from core import ledger
from core.domain.errors import AuthExpired, Conflict, NotFound, PublishError, UserError
from core.domain.states import DeliveryStatus, PartState, Reason
from core.ledger import support
from core.ledger.channels import set_connected
from core.plugins import channel_settings
from core.plugins import manager as plugins
from core.plugins.adapter import Adapter
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock
from core.services.posts import lift_admission_holds
from core.store import db
from core.store.models import NAME_LENGTH, Account, Channel, Delivery

log = logging.getLogger(__name__)

DEFAULT_ACCOUNT = "default"

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


def is_secret(setting: str, platform: str | None = None) -> bool:
    """Whether a setting called ``setting`` holds a credential (never printed whole): as the
    platform's adapter declares it, else by its name."""
    adapter = plugins.adapter_class(platform) if platform is not None else None
    return channel_settings.is_secret(adapter, setting)


def mask(value: str) -> str:
    """``••••`` and the value's last 4 characters at most – a quarter of it for a short
    one – enough to tell two credentials apart, never enough to use one."""
    if not value:
        return ""
    return MASK + value[len(value) - min(_SHOWN, len(value) // 4) :]


def _channel_view(channel: Channel, account: str, adapter: type[Adapter] | None = None) -> ChannelView:
    adapter = adapter or plugins.adapter_class(channel.platform)
    shown = {
        key: mask(str(value)) if channel_settings.is_secret(adapter, key) else str(value)
        for key, value in sorted(channel.settings.items())
    }
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
            known = list(s.execute(select(Account.name).order_by(Account.name).limit(10)).scalars())
            listed = f" (accounts: {', '.join(known)})" if known else ""
            raise NotFound(
                f"no account named {name!r}{listed}; an account is made with its first channel: "
                "`herald channel add --account NAME ...`"
            )
        _check_name(name, "account", "--account")
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


def _check_name(name: str, what: str, option: str) -> None:
    """Refuse an account or channel name that is empty, padded or too long.

    Raises:
        UserError: naming the option that fixes it.
    """
    if not name.strip():
        raise UserError(f"a {what} needs a name that is not blank: give {option} NAME")
    if name != name.strip():
        raise UserError(f"{what} name {name!r} starts or ends with a space: give {option} {name.strip()!r}")
    if len(name) > NAME_LENGTH:
        raise UserError(f"{what} name {name[:20]!r}... has {len(name)} characters; give {option} a shorter one")


def add_channel(name: str, platform: str, settings: dict[str, str], account: str = DEFAULT_ACCOUNT) -> int:
    """Add a channel on an enabled platform adapter, its settings checked against what the
    adapter declares (§9). Returns its id.

    Raises:
        UserError: a blank name, or settings the adapter refuses (unknown, invalid, missing).
        NotFound: the platform has no enabled adapter.
        Conflict: a channel of that name exists.
    """
    _check_name(name, "channel", "--name")
    # Refuse unknown platforms and unusable settings now, not at publish time.
    adapter = plugins.adapter(platform)
    channel_settings.check_settings(type(adapter), settings)
    return insert_channel(name, platform, settings, account, limits=_asked_limits(adapter, name, settings))


def _asked_limits(adapter: Adapter, name: str, settings: Mapping[str, str]) -> dict[str, Any] | None:
    """The channel's own limits, from its platform (``Adapter.channel_limits``), as stored;
    None where the adapter's hold, or the platform could not tell now (then the adapter's
    hold until the channel is reconnected)."""
    if type(adapter).channel_limits is Adapter.channel_limits:
        return None  # the adapter's limits hold for every channel: nothing to ask
    from core import config
    from core.plugins.adapter import VerifyContext, limits_row
    from core.plugins.transport import http_client
    from core.runtime.calls import call_adapter

    timeout = config.settings().call_timeout
    try:
        asked = call_adapter(adapter.channel_limits, VerifyContext(settings, http_client(timeout)), timeout)
    except PublishError as exc:
        log.warning("channel %s: %s did not tell its limits (%s); the adapter's hold", name, adapter.name, exc)
        return None
    return limits_row(asked) if asked is not None else None


def _ask_limits_again(name: str) -> None:
    """A reconnected channel's own limits, asked again outside any transaction (the
    platform's answer may take up to a call's deadline)."""
    with db.reading() as s:
        channel = ledger.live_channel(s, name)
        if channel is None:
            return
        channel_id, platform, settings = channel.id, channel.platform, dict(channel.settings)
    try:
        adapter = plugins.adapter(platform)
    except NotFound:
        return
    if type(adapter).channel_limits is Adapter.channel_limits:
        return
    limits = _asked_limits(adapter, name, settings)
    with db.transaction() as s:
        s.execute(update(Channel).where(Channel.id == channel_id).values(limits=limits))


def insert_channel(
    name: str,
    platform: str,
    settings: dict[str, str],
    account: str = DEFAULT_ACCOUNT,
    *,
    limits: dict[str, Any] | None = None,
) -> int:
    """The channel row, its settings taken as they are (:func:`add_channel` checks them
    first). Returns its id.

    Raises:
        Conflict: a channel of that name exists.
    """
    with db.transaction() as s:
        if s.execute(select(Channel.id).where(Channel.name == name)).first():
            raise Conflict(
                f"a channel named {name!r} exists; pick another name, or change it with `herald channel edit`"
            )
        owner = account_named(s, account, create=True)
        channel = Channel(
            name=name,
            platform=platform,
            settings=settings,
            limits=limits,
            account_id=owner.id,
            created_at=DatabaseClock(db.engine()).now(),
        )
        s.add(channel)
        s.flush()
        return channel.id


def show_channels() -> list[ChannelView]:
    """Every channel that has not been removed, by name, with its settings' secrets masked."""
    with db.reading() as s:
        query = select(Channel, Account.name).join(Account).where(Channel.removed_at.is_(None)).order_by(Channel.name)
        rows = s.execute(query).all()
    adapters = {name: cls for name, (cls, _plugin) in plugins.registered().items()}
    return [_channel_view(c, account, adapters.get(c.platform)) for c, account in rows]


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
        UserError: settings its adapter refuses, or that leave it without a required one.
    """
    with db.transaction() as s:
        channel, account = _channel_for_change(s, name)
        merged = {**channel.settings, **(settings or {})}
        _check_change(channel, settings or {}, merged)
        if settings:
            channel.settings = merged
        s.flush()
        set_connected(s, channel.id, connected=True)
        s.refresh(channel)
        view = _channel_view(channel, account)
        # Each lifted delivery gets a fresh attempt budget and a line in its timeline.
        own = support.lift_channel_holds(s, channel.id, CHANNEL_HOLDS, DatabaseClock(db.engine()).now())
    _ask_limits_again(name)
    for post_id in own:
        arm(post_id)
    armed = sorted({*own, *lift_admission_holds()})
    return Reconnected(channel=view, updated_settings=tuple(sorted(settings or {})), armed=tuple(armed))


@dataclass(frozen=True)
class Edited:
    """What `herald channel edit` did."""

    channel: ChannelView
    #: The names of the settings given or changed (their values are in ``channel``, masked).
    updated_settings: tuple[str, ...]
    #: The names of the settings taken away.
    removed_settings: tuple[str, ...]


@dataclass(frozen=True)
class Removed:
    """What `herald channel remove` did."""

    name: str
    #: The posts whose unfinished delivery on the channel was cancelled first (``--cancel-pending``).
    cancelled: tuple[int, ...]
    #: The name the posts' history shows the channel under, when it was kept for that
    #: history (renamed, so the name is free); None when nothing referred to it and it was deleted.
    kept_as: str | None


def _channel_for_change(s: Session, name: str) -> tuple[Channel, str]:
    channel = ledger.live_channel(s, name, for_update=True)
    if channel is None:
        raise NotFound(f"no channel named {name!r}; `herald channel list` shows them")
    return channel, s.get_one(Account, channel.account_id).name


def _adapter_of(channel: Channel) -> type[Adapter]:
    adapter = plugins.adapter_class(channel.platform)
    if adapter is None:
        raise NotFound(
            f"channel {channel.name} is on {channel.platform!r}, which no loaded plugin provides; "
            "install its plugin (see `herald adapters`), or remove the channel"
        )
    return adapter


def _check_change(channel: Channel, given: Mapping[str, str], merged: Mapping[str, object]) -> None:
    adapter = _adapter_of(channel)
    channel_settings.check_values(adapter, given)
    channel_settings.check_complete(adapter, merged)


def edit_channel(name: str, settings: dict[str, str], unset: list[str] | None = None) -> Edited:
    """Change a channel's settings: ``settings`` given or replaced, ``unset`` taken away,
    checked against what its adapter declares (§9). A delivery held because the old
    settings could not work is sent by ``herald channel reconnect``.

    Raises:
        NotFound: no channel of that name.
        UserError: nothing to change, a setting to unset that the channel does not have, or
            settings the adapter refuses or that leave it without a required one.
    """
    unset = list(dict.fromkeys(unset or []))
    if not settings and not unset:
        raise UserError(f"nothing to change: give --set KEY=VALUE or --unset KEY (`herald channel edit {name} --help`)")
    both = sorted(set(settings) & set(unset))
    if both:
        raise UserError(f"{', '.join(both)}: both --set and --unset; give one of them")
    with db.transaction() as s:
        channel, account = _channel_for_change(s, name)
        absent = [key for key in unset if key not in channel.settings]
        if absent:
            has = ", ".join(sorted(channel.settings)) or "none"
            raise UserError(f"--unset {', '.join(absent)}: channel {name} has no such setting (it has: {has})")
        merged = {key: value for key, value in {**channel.settings, **settings}.items() if key not in unset}
        _check_change(channel, settings, merged)
        channel.settings = merged
        s.flush()
        view = _channel_view(channel, account)
    return Edited(channel=view, updated_settings=tuple(sorted(settings)), removed_settings=tuple(sorted(unset)))


def remove_channel(name: str, *, cancel_pending: bool = False) -> Removed:
    """Remove a channel. Refused while any of its deliveries is not finished (pending,
    sending, waiting to retry or held), unless ``cancel_pending`` cancels them first – never
    one that may be on the platform already (a part ``sending``). Finished deliveries keep
    their history: a channel they refer to is kept, renamed and disconnected
    (``core.ledger.channels.remove_channel``).

    Raises:
        NotFound: no channel of that name.
        Conflict: deliveries not finished (without ``cancel_pending``), or one in doubt.
    """
    now = DatabaseClock(db.engine()).now()
    with db.transaction() as s:
        channel, _account = _channel_for_change(s, name)
        unfinished = ledger.unfinished_deliveries(s, channel.id)
        if unfinished and not cancel_pending:
            raise Conflict(
                f"channel {name} has {_count(unfinished)} not finished ({_tally(unfinished)}; {_posts(unfinished)}): "
                f"wait for them, or cancel them with `herald channel remove {name} --cancel-pending`"
            )
        _refuse_in_doubt(name, unfinished)
        cancelled = ledger.cancel_deliveries(s, unfinished, now, f"cancelled: channel {name} was removed")
        kept_as = ledger.remove_channel(s, channel, now)
    return Removed(name=name, cancelled=tuple(cancelled), kept_as=kept_as)


def _refuse_in_doubt(name: str, deliveries: list[Delivery]) -> None:
    for d in deliveries:
        if d.status is DeliveryStatus.SENDING:
            raise Conflict(
                f"post {d.post_id} is being sent on {name} right now; wait for it to finish "
                f"(`herald post show {d.post_id}`), then remove the channel"
            )
        if any(p.state is PartState.SENDING for p in d.parts):
            fix = (
                f"resolve it first: `herald post resolve {d.post_id} --channel {name} landed --url URL` "
                "if it is on the platform, else `send-again`"
                if d.reason is Reason.AMBIGUOUS_OUTCOME
                else f"wait for its next attempt to settle it (`herald post show {d.post_id}`)"
            )
            raise Conflict(
                f"post {d.post_id} has an attempt in doubt on {name} (a part is 'sending', it may be on the "
                f"platform): cancelling cannot take it back; {fix}, then remove the channel"
            )


def _count(deliveries: list[Delivery]) -> str:
    return f"{len(deliveries)} deliver{'y' if len(deliveries) == 1 else 'ies'}"


def _tally(deliveries: list[Delivery]) -> str:
    counts = Counter(str(d.status) for d in deliveries)
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def _posts(deliveries: list[Delivery], shown: int = 5) -> str:
    ids = sorted({d.post_id for d in deliveries})
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"post{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids[:shown]))}{more}"


@dataclass(frozen=True)
class Tested:
    """What `herald channel test` found: the platform took the channel's credentials."""

    name: str
    platform: str
    #: Whom the credentials belong to, in the platform's words.
    who: str


def check_credentials(name: str) -> Tested:
    """Check a channel's credentials with one read-only call to its platform; nothing changes.

    Raises:
        NotFound: no such channel, or its platform's adapter is not loaded.
        UserError: the adapter cannot check credentials, or the platform refused them or
            could not be asked (the message says which, and the fix).
    """
    from core import config
    from core.plugins.adapter import VerifyContext
    from core.plugins.transport import http_client
    from core.runtime.calls import call_adapter

    with db.reading() as s:
        channel = ledger.live_channel(s, name)
        if channel is None:
            raise NotFound(f"no channel named {name!r}; `herald channel list` shows them")
        platform, settings = channel.platform, dict(channel.settings)
    adapter = plugins.adapter(platform)
    if not adapter.can_verify:
        raise UserError(f"the {platform} adapter cannot check credentials; a post to {name} will tell")
    timeout = config.settings().call_timeout
    ctx = VerifyContext(settings=settings, client=http_client(timeout))
    try:
        who = call_adapter(adapter.verify, ctx, timeout)
    except AuthExpired as exc:
        secrets = [s.name for s in channel_settings.declared(type(adapter)) or () if s.secret] or ["token"]
        given = " ".join(f"--set {secret}=..." for secret in secrets)
        raise UserError(
            f"{platform} refused {name}'s credentials ({exc}): give new ones with "
            f"`herald channel reconnect {name} {given}`"
        ) from None
    except PublishError as exc:
        raise UserError(f"{platform} could not be asked about {name}'s credentials ({exc}); try again") from None
    return Tested(name, platform, who)

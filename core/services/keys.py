"""API keys and dashboard logins (§15): made, listed, revoked, and checked on every request.

A key reads ``hk_PREFIX_SECRET``. It is shown once, when it is made; herald keeps the
SHA-256 of its secret part (the secret is 32 random bytes, so a plain hash is enough: no
password-stretching is needed for a value nobody chose). A key belongs to one account and
acts as one role (``core.domain.roles``); it may expire, and it can be revoked.

A one-time login link (``login_link``) lets a person open the dashboard as a key without
pasting it: the link's token works once, for a few minutes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from core.domain.errors import NotFound, Unauthenticated, UserError
from core.domain.roles import Role
from core.runtime.clock import Clock, DatabaseClock
from core.services.channels import account_named
from core.store import db
from core.store.models import NAME_LENGTH, Account, ApiKey, LoginLink

#: How long a login link works.
LOGIN_LINK_TTL = timedelta(minutes=10)
_PREFIX = "hk"


@dataclass(frozen=True)
class KeyView:
    """A key as it is listed: never its secret."""

    id: int
    account: str
    role: Role
    name: str
    #: The key's public part: ``hk_PREFIX_…`` says which key a person holds.
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True)
class CreatedKey:
    key: KeyView
    #: The whole key, shown this once.
    secret: str


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: a key's account and role."""

    key_id: int
    account_id: int
    account: str
    role: Role


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _now(clock: Clock | None) -> datetime:
    return (clock or DatabaseClock(db.engine())).now()


def parse_role(text: str) -> Role:
    try:
        return Role(text)
    except ValueError:
        raise UserError(f"no role {text!r}: one of {', '.join(r.value for r in Role)}") from None


def create_key(
    account: str, role: Role, *, name: str = "", expires_in: timedelta | None = None, clock: Clock | None = None
) -> CreatedKey:
    """Make a key for ``account`` (which must exist) acting as ``role``.

    Raises:
        NotFound: no such account.
        UserError: ``expires_in`` is not positive, or ends past the year 9999; ``name`` is
            longer than a name may be.
    """
    if expires_in is not None and expires_in <= timedelta(0):
        raise UserError("a key's expiry must be in the future: give --expires as a duration such as 30d")
    if len(name) > NAME_LENGTH:
        raise UserError(f"a key's name has {len(name)} characters: give one of up to {NAME_LENGTH}")
    now = _now(clock)
    try:
        expires_at = now + expires_in if expires_in is not None else None
    except OverflowError:
        raise UserError("a key's expiry must end before the year 9999: give a shorter --expires") from None
    prefix, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    with db.transaction() as s:
        owner = account_named(s, account)
        row = ApiKey(
            account_id=owner.id,
            prefix=prefix,
            secret_sha256=_sha256(secret),
            role=role,
            name=name or f"{role.value} key",
            created_at=now,
            expires_at=expires_at,
        )
        s.add(row)
        s.flush()
        view = _view(row, owner.name)
    return CreatedKey(view, f"{_PREFIX}_{prefix}_{secret}")


def list_keys(account: str | None = None) -> list[KeyView]:
    """Every key (of ``account``, when given), newest first; revoked ones included."""
    query = select(ApiKey, Account.name).join(Account, Account.id == ApiKey.account_id).order_by(ApiKey.id.desc())
    if account is not None:
        query = query.where(Account.name == account)
    with db.reading() as s:
        return [_view(key, owner) for key, owner in s.execute(query)]


def revoke_key(key_id: int, *, account_id: int | None = None, clock: Clock | None = None) -> KeyView:
    """Revoke a key at once: every request with it is refused from now on.

    Raises:
        NotFound: no such key (in ``account_id``'s account, when given).
    """
    now = _now(clock)
    with db.transaction() as s:
        found = s.execute(
            select(ApiKey, Account.name).join(Account, Account.id == ApiKey.account_id).where(ApiKey.id == key_id)
        ).one_or_none()
        if found is None or (account_id is not None and found[0].account_id != account_id):
            raise NotFound(f"no key {key_id}: `herald keys list` shows them")
        key, owner = found
        if key.revoked_at is None:
            key.revoked_at = now
        return _view(key, owner)


def authenticate(given: str, *, clock: Clock | None = None) -> Principal:
    """The principal a whole key acts as.

    Raises:
        Unauthenticated: not a key, or unknown, expired or revoked (the message says which,
            never the key).
    """
    parts = given.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != _PREFIX:
        raise Unauthenticated("not an API key: herald's keys read hk_…_…, as `herald keys create` printed it")
    _, prefix, secret = parts
    now = _now(clock)
    with db.reading() as s:
        found = s.execute(
            select(ApiKey, Account.name).join(Account, Account.id == ApiKey.account_id).where(ApiKey.prefix == prefix)
        ).one_or_none()
    if found is None or not hmac.compare_digest(found[0].secret_sha256, _sha256(secret)):
        raise Unauthenticated("unknown API key: make one with `herald keys create --account A --role R`")
    key, owner = found
    _check_usable(key, now)
    # At most one write a minute per key: the last use is for people, not an audit.
    if key.last_used_at is None or now - key.last_used_at > timedelta(minutes=1):
        with db.transaction() as s:
            s.execute(update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now))
    return Principal(key.id, key.account_id, owner, key.role)


def principal_of(key_id: int, *, clock: Clock | None = None) -> Principal:
    """The principal of a key a dashboard session holds, checked again on every request.

    Raises:
        Unauthenticated: the key is gone, expired or revoked since the login.
    """
    now = _now(clock)
    with db.reading() as s:
        found = s.execute(
            select(ApiKey, Account.name).join(Account, Account.id == ApiKey.account_id).where(ApiKey.id == key_id)
        ).one_or_none()
        if found is None:
            raise Unauthenticated("this login's key no longer exists: log in again")
        key, owner = found
        _check_usable(key, now)
        return Principal(key.id, key.account_id, owner, key.role)


def login_link(key_id: int, *, clock: Clock | None = None) -> str:
    """A token that logs the dashboard in as ``key_id`` once, within :data:`LOGIN_LINK_TTL`.

    Raises:
        NotFound: no such key.
    """
    now = _now(clock)
    token = secrets.token_urlsafe(32)
    with db.transaction() as s:
        if s.get(ApiKey, key_id) is None:
            raise NotFound(f"no key {key_id}: `herald keys list` shows them")
        s.add(LoginLink(key_id=key_id, token_sha256=_sha256(token), expires_at=now + LOGIN_LINK_TTL))
    return token


def redeem_login_link(token: str, *, clock: Clock | None = None) -> Principal:
    """The principal a login link opens, once.

    Raises:
        Unauthenticated: unknown, already used or expired link, or its key no longer usable.
    """
    now = _now(clock)
    with db.transaction() as s:
        taken = s.execute(
            update(LoginLink)
            .where(LoginLink.token_sha256 == _sha256(token), LoginLink.used_at.is_(None), LoginLink.expires_at > now)
            .values(used_at=now)
            .returning(LoginLink.key_id)
        ).scalar_one_or_none()
        if taken is None:
            raise Unauthenticated("this login link is unknown, used or expired: ask for a new one")
    return principal_of(taken, clock=clock)


def _check_usable(key: ApiKey, now: datetime) -> None:
    if key.revoked_at is not None:
        raise Unauthenticated(f"API key hk_{key.prefix}_… was revoked: make a new one with `herald keys create`")
    if key.expires_at is not None and key.expires_at <= now:
        raise Unauthenticated(f"API key hk_{key.prefix}_… expired: make a new one with `herald keys create`")


def _view(key: ApiKey, account: str) -> KeyView:
    return KeyView(
        id=key.id,
        account=account,
        role=key.role,
        name=key.name,
        prefix=f"{_PREFIX}_{key.prefix}",
        created_at=key.created_at,
        expires_at=key.expires_at,
        revoked_at=key.revoked_at,
        last_used_at=key.last_used_at,
    )

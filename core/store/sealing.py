"""Channel settings sealed at rest (§9): tokens and passwords never lie in the database in clear.

A channel's settings are stored as one Fernet token (``cryptography``: AES-128-CBC with an
HMAC-SHA256, the well-kept recipe for this) by the :class:`Sealed` column type, and read
back as the plain mapping everything else sees. The key comes from ``HERALD_SECRET_KEY``
(one or more Fernet keys separated by commas, the newest first) or, without it, from the
key file ``$HERALD_HOME/secret.key``, which is made on first use, readable by its owner
only. Losing the key loses the channels' credentials (not the posts): back the file up, or
keep the key in ``HERALD_SECRET_KEY``.

``herald secrets rotate`` seals every channel again under a new key
(``core.services.secrets``).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy import Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from core import config
from core.domain.errors import ConfigError

ENV = "HERALD_SECRET_KEY"


def key_file() -> Path:
    return config.settings().home_path / "secret.key"


def keys_from_env() -> list[bytes] | None:
    given = os.environ.get(ENV, "").strip()
    if not given:
        return None
    return [part.strip().encode() for part in given.split(",") if part.strip()]


def _read_key_file(path: Path, *, create: bool) -> list[bytes]:
    try:
        found = path.stat()
    except FileNotFoundError:
        if not create:
            raise ConfigError(f"no secret key at {path}: `herald init` makes one, or set {ENV}") from None
        path.parent.mkdir(parents=True, exist_ok=True)
        # Owner-only from its creation: never a moment readable by others.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(Fernet.generate_key().decode() + "\n")
        found = path.stat()
    # Every channel read opens its settings: the file is read again only when it changed
    # (a rotation replaces it, so its inode changes too).
    return list(_file_keys(path, (found.st_ino, found.st_mtime_ns, found.st_size)))


@functools.lru_cache(maxsize=8)
def _file_keys(path: Path, version: tuple[int, int, int]) -> tuple[bytes, ...]:
    return tuple(line.strip().encode() for line in path.read_text().splitlines() if line.strip())


def keys(*, create: bool = True) -> list[bytes]:
    """The keys settings are sealed with, the newest first (it seals; all of them open)."""
    from_env = keys_from_env()
    return from_env if from_env is not None else _read_key_file(key_file(), create=create)


@functools.cache
def sealer(keys: tuple[bytes, ...]) -> MultiFernet:
    """Seals with the first of ``keys``, opens with any."""
    try:
        return MultiFernet([Fernet(k) for k in keys])
    except ValueError:
        raise ConfigError(
            f"the secret key ({ENV} or {key_file()}) is not a Fernet key: 32 url-safe base64-encoded bytes, "
            "as `python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` prints"
        ) from None


def fernet() -> MultiFernet:
    return sealer(tuple(keys()))


def seal(values: dict[str, Any]) -> str:
    return fernet().encrypt(json.dumps(values, sort_keys=True).encode()).decode()


@functools.lru_cache(maxsize=4096)
def _opened(token: str, sealer: MultiFernet) -> str:
    return sealer.decrypt(token.encode()).decode()


def unseal(token: str) -> dict[str, Any]:
    """The mapping ``token`` seals.

    Raises:
        ConfigError: it was sealed under another key.
    """
    try:
        opened: dict[str, Any] = json.loads(_opened(token, fernet()))
    except InvalidToken:
        raise ConfigError(
            f"channel settings were sealed with another secret key than this one ({ENV} or {key_file()}): "
            "give the key they were sealed with"
        ) from None
    return opened


class Sealed(TypeDecorator[dict[str, Any]]):
    """A JSON mapping stored as one Fernet token."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: dict[str, Any] | None, dialect: Dialect) -> str | None:
        return None if value is None else seal(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> dict[str, Any] | None:
        return None if value is None else unseal(value)


def rotate_key_file(reseal: Callable[[MultiFernet], int]) -> tuple[Path, int]:
    """Put a new key first in the key file, seal everything again with it
    (``reseal(sealer)`` returns how many rows it sealed), then drop the old keys. Should it
    stop half-way, the file still holds both keys, and every row opens.
    """
    path = key_file()
    old = _read_key_file(path, create=True)
    new = Fernet.generate_key()
    _write_keys(path, [new, *old])
    done = reseal(sealer((new, *old)))
    _write_keys(path, [new])
    _opened.cache_clear()
    return path, done


def _write_keys(path: Path, keys: list[bytes]) -> None:
    temporary = path.with_name(f"{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(k.decode() + "\n" for k in keys))
    os.replace(temporary, path)

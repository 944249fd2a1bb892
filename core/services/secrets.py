"""The key channel settings are sealed with (``core.store.sealing``): where it is, and a rotation."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from cryptography.fernet import InvalidToken, MultiFernet

from core.domain.errors import ConfigError
from core.store import db, sealing

#: The channels table as stored: its settings as the sealed text itself.
_raw = sa.table("channels", sa.column("id", sa.Integer()), sa.column("settings", sa.Text()))


@dataclass(frozen=True)
class Rotated:
    #: Where the key now is (the key file, or ``HERALD_SECRET_KEY``).
    where: str
    #: Channels sealed again under it.
    channels: int
    #: What is left to do, if anything.
    then: str | None = None


def _reseal(sealer: MultiFernet) -> int:
    with db.transaction() as s:
        rows = s.execute(sa.select(_raw.c.id, _raw.c.settings)).all()
        for row in rows:
            try:
                token = sealer.rotate(row.settings.encode()).decode()
            except InvalidToken:
                raise ConfigError(
                    f"channel {row.id}'s settings were sealed with a key that is not among the ones given: "
                    "nothing was changed"
                ) from None
            s.execute(_raw.update().where(_raw.c.id == row.id).values(settings=token))
        return len(rows)


def rotate() -> Rotated:
    """Seal every channel's settings again under a new key.

    With the key file, a new key is made and the old one dropped once every channel is
    sealed with the new one. With ``HERALD_SECRET_KEY`` (``NEW,OLD``), every channel is
    sealed with NEW; dropping OLD from the variable is left to the person.

    Raises:
        ConfigError: ``HERALD_SECRET_KEY`` holds one key only, or a channel was sealed with
            none of the keys given (nothing is changed then).
    """
    given = sealing.keys_from_env()
    if given is not None:
        if len(given) < 2:
            raise ConfigError(
                f"{sealing.ENV} holds one key: put a new one first ({sealing.ENV}=NEW,OLD) and run this again; "
                "then drop OLD"
            )
        done = _reseal(sealing.sealer(tuple(given)))
        return Rotated(
            sealing.ENV, done, f"every channel is sealed with the first key: drop the others from {sealing.ENV}"
        )
    path, done = sealing.rotate_key_file(_reseal)
    return Rotated(str(path), done)

"""What differs between SQLite and PostgreSQL on the publish path, behind one interface.

The ledger's rules (what a claim admits, what a result records, when the lease is given
back) are written once, over a :class:`Dialect`. A dialect only says how its database
runs a few compound steps:

* the claim's compare-and-set, and the read of the post's deliveries and parts after it;
* the claim's writes for every admitted delivery (key and ``sending``, the attempt row);
* a delivery's last part confirmed: the fenced writes, the publication row and the post's
  summary;
* the :class:`Writer` a transaction's statements go through.

PostgreSQL (``core.ledger.postgresql``) joins a step's writes into one statement and sends
a transaction's statements without waiting for each answer; SQLite (``core.ledger.sqlite``),
in the same process and with no data-modifying ``WITH``, runs them one by one. Both store
a summary with the same statement, ``core.ledger.statements.STORE_SUMMARY``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection, Engine
from sqlalchemy.sql import Executable

from core.domain.states import PostStatus

Values = dict[str, Any]


class Writer(Protocol):
    """How a transaction's statements reach the database."""

    def send(self, statement: Executable, values: Values | Sequence[Values]) -> Any:
        """Run (or queue) a statement; its rows are read from the returned handle."""
        ...

    def rows(self, statement: Executable, values: Values) -> list[Any]:
        """Run a statement and return its rows (by name)."""
        ...

    def commit(self) -> None:
        """Commit what was sent; the block must not write after it."""
        ...

    def rollback(self) -> None:
        """Roll back what was sent; the block must not write after it."""
        ...

    def leave(self) -> None:
        """Go on with ordinary statements on the connection, the transaction still open."""
        ...


@dataclass(frozen=True)
class Claimed:
    """What the compare-and-set returned of the post, and the joined rows of its deliveries.

    ``post`` maps the post's columns by name; ``rows`` hold one row per part of every
    delivery (columns of ``core.ledger.statements.DELIVERY_COLUMNS``), none when the post
    has no delivery with parts.
    """

    post: Any
    rows: list[Any]


@dataclass(frozen=True)
class Landed:
    """What a last part's writes did: whether the fence matched, the delivery moved from
    ``sending`` to ``published``, and a new publication row was inserted; and the post's
    summary, stored when the delivery moved."""

    fenced: bool
    moved: bool
    recorded: bool
    status: PostStatus | None


class Dialect(Protocol):
    name: str
    #: Whether a job reads its post's slot before claiming: on SQLite the claim takes the
    #: one write lock, which an early job must not hold only to learn it is early.
    peeks_slot_first: bool

    def writer(self, conn: Connection) -> AbstractContextManager[Writer]:
        """The writer for one transaction on ``conn`` (inside ``core.store.db.writing``)."""
        ...

    def claim(self, writer: Writer, cas: Values) -> Claimed | None:
        """The compare-and-set and the joined read; None when the compare-and-set failed."""
        ...

    def prepare(self, writer: Writer, rows: list[Values]) -> None:
        """Per admitted delivery: the part's key and ``sending`` (when ``b_fresh``), the
        delivery ``sending`` with its attempt count, and the attempt's row."""
        ...

    def last_part_landed(self, conn: Connection, values: Values) -> Landed:
        """A delivery's last part confirmed (inside ``core.store.db.writing``).

        When the fence matches and the delivery moves from ``sending`` to ``published``:
        the part, its attempt closed, the delivery, the publication row (unless one is
        there) and the post's summary, with the lease given back once nothing is sending.
        Otherwise nothing is written but the fence's renewal of the lease. PostgreSQL
        commits it all in one round trip, so the post's row lock is held for no answer
        sent back to the process.
        """
        ...

    def insert_publication(self, conn: Connection, values: Values) -> int | None:
        """The publication row (``core.ledger.statements.PUBLICATION_COLUMNS``), or None
        when one exists for its (post, channel, slot, revision) (§4)."""
        ...


def of(bind: Connection | Engine) -> Dialect:
    """The dialect of ``bind``'s database."""
    if bind.dialect.name == "postgresql":
        from core.ledger.postgresql import POSTGRESQL

        return POSTGRESQL
    from core.ledger.sqlite import SQLITE

    return SQLITE

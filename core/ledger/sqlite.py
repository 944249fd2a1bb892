"""The publish path's compound steps on SQLite: statement by statement, in the process.

SQLite has no server round trips to save and no data-modifying ``WITH``: each step runs
the ledger's ordinary statements one after another on the SQLAlchemy connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import Executable

from core.ledger import statements as sql
from core.ledger.dialect import Claimed, Landed, Values, Writer


class Direct:
    """A transaction's statements run one by one on the SQLAlchemy connection."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def send(self, statement: Executable, values: Values | Sequence[Values]) -> Any:
        return self._conn.execute(statement, values)

    def rows(self, statement: Executable, values: Values) -> list[Any]:
        return list(self._conn.execute(statement, values).all())

    def commit(self) -> None:
        """The SQLAlchemy transaction around the block commits."""

    def rollback(self) -> None:
        self._conn.rollback()

    def leave(self) -> None:
        """Nothing to leave."""


_PUBLICATION = (
    sqlite.insert(sql.publications)
    .values(**sql.PUBLICATION_COLUMNS)
    .on_conflict_do_nothing()
    .returning(sql.publications.c.id)
)


class SQLite:
    name = "sqlite"
    peeks_slot_first = True

    @contextmanager
    def writer(self, conn: Connection) -> Iterator[Writer]:
        yield Direct(conn)

    def claim(self, writer: Writer, cas: Values) -> Claimed | None:
        post = writer.send(sql.CLAIM, cas).one_or_none()
        if post is None:
            return None
        return Claimed(post._mapping, writer.rows(sql.DELIVERY_ROWS, {"b_post": cas["b_post"]}))

    def prepare(self, writer: Writer, rows: list[Values]) -> None:
        # One statement per table, each over every admitted delivery.
        if fresh := [r for r in rows if r["b_fresh"]]:
            writer.send(sql.PART_SENDING, fresh)
        writer.send(sql.DELIVERY_SENDING, rows)
        writer.send(sql.ATTEMPT, rows)

    def last_part_landed(self, conn: Connection, values: Values) -> Landed:
        if not conn.execute(sql.FENCE, values).rowcount:
            return Landed(fenced=False, moved=False, recorded=False, status=None)
        if not conn.execute(sql.DELIVERY_PUBLISHED, values).rowcount:
            return Landed(fenced=True, moved=False, recorded=False, status=None)
        conn.execute(sql.PART_PUBLISHED, values)
        conn.execute(sql.END_ATTEMPT, values)
        recorded = self.insert_publication(conn, values) is not None
        status = conn.execute(sql.STORE_SUMMARY, values).scalar_one()
        return Landed(fenced=True, moved=True, recorded=recorded, status=status)

    def insert_publication(self, conn: Connection, values: Values) -> int | None:
        new_id: int | None = conn.execute(_PUBLICATION, values).scalar()
        return new_id


SQLITE = SQLite()

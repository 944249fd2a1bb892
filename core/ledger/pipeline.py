"""Statements sent to PostgreSQL without waiting for each answer (psycopg's pipeline mode).

A transaction of the publish path is a few statements whose answers are mostly not
needed before the next is sent: BEGIN with the first statement, the last with COMMIT.
Sent one by one, each is a round trip to the server, and on a busy machine a round trip
costs more than the statement. In pipeline mode the driver sends them together and reads
the answers when asked, so the claim and a result each cost two round trips instead of
four to six. SQLAlchemy does not drive the mode, so :class:`Pipeline` runs SQLAlchemy
statements, compiled once, on the driver's own cursor: values go through the columns'
own bind processors and rows come back through their result processors (enums, UTC
instants), as when SQLAlchemy runs them.

It is PostgreSQL's writer (``core.ledger.postgresql``); SQLite's runs the same calls one by
one on the SQLAlchemy connection (``core.ledger.sqlite.Direct``).
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql import ClauseElement, Executable, Select
from sqlalchemy.sql.compiler import SQLCompiler

Values = dict[str, Any]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    #: The statement's own literal values (enum members it compares with, and so on).
    fixed: Values
    #: The column types' bind processors of the caller's values, by name (a naive
    #: instant is refused here as everywhere).
    binders: dict[str, Callable[[Any], Any]]
    row: Callable[..., tuple[Any, ...]] | None
    processors: tuple[Callable[[Any], Any] | None, ...]

    def bind(self, values: Values) -> Values:
        bound = {**self.fixed, **values}
        try:
            for name, process in self.binders.items():
                if name in values:
                    bound[name] = process(values[name])
        except Exception as exc:  # as SQLAlchemy reports a value its type refused
            raise StatementError(str(exc), self.sql, values, exc) from exc
        return bound


@functools.cache
def _compiled(statement: Executable, dialect: Dialect) -> _Compiled:
    assert isinstance(statement, ClauseElement)
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    sql = str(compiled)
    if "POSTCOMPILE" in sql:
        raise ValueError("a pipelined statement cannot use an expanding IN; compare each value")
    binders: dict[str, Callable[[Any], Any]] = {}
    for name, param in compiled.binds.items():
        process = param.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binders[name] = process
    fixed = {
        name: binders[name](value) if name in binders else value
        for name, value in compiled.params.items()
        if not name.startswith("b_")
    }
    if not isinstance(statement, Select):  # writes here return no rows
        return _Compiled(sql, fixed, binders, None, ())
    columns = list(statement.selected_columns)
    row = namedtuple("Row", [c.key for c in columns], rename=True)  # type: ignore[misc]
    processors = tuple(c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns)
    return _Compiled(sql, fixed, binders, row, processors)


class Sent:
    """A statement sent in the pipeline; its rows are read (and waited for) on demand."""

    def __init__(self, pipeline: Pipeline, cursor: Any, compiled: _Compiled) -> None:
        self._pipeline, self._cursor, self._compiled = pipeline, cursor, compiled

    def all(self) -> list[Any]:
        compiled = self._compiled
        assert compiled.row is not None, "the statement returns no rows"
        with self._pipeline.driver_errors():
            fetched = self._cursor.fetchall()
        processors = compiled.processors
        return [compiled.row(*(p(v) if p else v for p, v in zip(processors, r, strict=True))) for r in fetched]

    def one(self) -> Any:
        (row,) = self.all()
        return row


class Pipeline:
    """The statements of one transaction on PostgreSQL, sent without waiting.

    ``send`` queues a statement; reading a sent statement's rows sends everything queued
    and waits for the answers up to it (one round trip). ``commit`` queues COMMIT and
    waits for every answer (one round trip). ``leave`` ends pipeline mode with the
    transaction still open, for a rare path that goes on with ordinary statements.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        #: The driver's connection (psycopg's), typed loosely: SQLAlchemy knows only DBAPI.
        self._raw: Any = conn.connection.dbapi_connection
        self._mode: Any = None

    def send(self, statement: Executable, values: Values | Sequence[Values]) -> Sent:
        compiled = _compiled(statement, self._conn.dialect)
        with self.driver_errors():
            if self._mode is None:
                self._mode = self._raw.pipeline()
                self._mode.__enter__()
            cursor = self._raw.cursor()
            if isinstance(values, dict):
                cursor.execute(compiled.sql, compiled.bind(values))
            else:
                cursor.executemany(compiled.sql, [compiled.bind(v) for v in values])
        return Sent(self, cursor, compiled)

    def rows(self, statement: Executable, values: Values) -> list[Any]:
        return self.send(statement, values).all()

    def commit(self) -> None:
        with self.driver_errors():
            self._raw.commit()  # in pipeline mode: COMMIT and a sync, one round trip
        self.leave()

    def rollback(self) -> None:
        with self.driver_errors():
            self._raw.rollback()  # in pipeline mode: ROLLBACK and a sync, one round trip
        self.leave()

    def leave(self) -> None:
        if self._mode is not None:
            mode, self._mode = self._mode, None
            with self.driver_errors():
                mode.__exit__(None, None, None)

    def abandon(self) -> None:
        """End pipeline mode after an error in the block, which stays the error raised."""
        if self._mode is not None:
            mode, self._mode = self._mode, None
            try:
                mode.__exit__(None, None, None)
            except Exception:  # the connection is in no state to go on with
                if not self._conn.invalidated:
                    self._conn.invalidate()

    @contextmanager
    def driver_errors(self) -> Iterator[None]:
        """Driver errors as SQLAlchemy raises them, a lost connection invalidated, so
        ``core.store.db.once_more_if_disconnected`` and callers see what they always see."""
        dbapi_error = self._conn.dialect.loaded_dbapi.Error
        try:
            yield
        except dbapi_error as exc:
            lost = self._conn.dialect.is_disconnect(exc, self._raw, None)
            if lost:
                self._mode = None
                self._conn.invalidate(exc)
            raise DBAPIError.instance(
                None, None, exc, dbapi_error, connection_invalidated=lost, dialect=self._conn.dialect
            ) from exc

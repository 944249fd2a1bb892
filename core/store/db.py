"""Engine, sessions and the column type every instant is stored in.

SQLite runs in WAL mode with a busy timeout, and every write transaction starts with
``BEGIN IMMEDIATE``: a deferred transaction that reads first and writes later can fail
at once with "database is locked" when another process committed in between, which the
busy timeout cannot wait out.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Connection, DateTime, Dialect, Engine, Table, create_engine, event, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.types import TypeDecorator

from core.config import settings

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC instant; naive values are refused so no local time slips in."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: herald stores only aware instants")
        value = value.astimezone(UTC)
        # SQLite compares the stored text: keep one format, without an offset.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_literal_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:  # type: ignore[override]
        # Only for rendering a statement to read its plan (EXPLAIN in tests).
        return self.process_bind_param(value, dialect)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("herald_read") else "BEGIN IMMEDIATE")


def insert_unless_present(session: Session, table: Any) -> Any:
    """An INSERT of ``table`` that does nothing where a unique key is taken (``ON CONFLICT
    DO NOTHING``), in the dialect of the session's database; chain ``.values(...)``."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing()


def inserted_ids(session: Session, table: Table, rows: list[dict[str, Any]]) -> list[int]:
    """INSERT ``rows`` into ``table`` in one statement (SQLAlchemy sends a long list in
    batches of many rows each) and return their ids, in the order of ``rows``."""
    if not rows:
        return []
    statement = insert(table).returning(table.c.id, sort_by_parameter_order=True)
    return list(session.execute(statement, rows).scalars())


def make_engine(url: str) -> Engine:
    """An engine for ``url`` set up the way herald needs it."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        _sqlite_setup(engine)
        return engine
    # A worker's job threads hold one connection each (``holding``), and every channel of a
    # post beyond its first writes its outcome on a connection of its own, at once: three
    # five-channel posts at a time want 3 + 12 besides the main thread's and the heartbeat's.
    return create_engine(url, pool_pre_ping=True, pool_size=20, max_overflow=20)


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    """The process's one engine (and connection pool) for ``url``."""
    with _engines_lock:
        if url not in _engines:
            _engines[url] = make_engine(url)
        return _engines[url]


def dispose_all() -> None:
    """Close every pooled connection of every engine this process made."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _sessions.cache_clear()


def engine() -> Engine:
    """The process's engine for the configured database."""
    return engine_for(settings().database_url)


@cache
def _sessions(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


@contextmanager
def transaction() -> Iterator[Session]:
    """A write transaction, committed on success and rolled back on error."""
    with _sessions(settings().database_url).begin() as session:
        yield session


@contextmanager
def reading() -> Iterator[Session]:
    """A read-only session (on SQLite it does not take the write lock).

    Closing it detaches the rows read, with what was loaded still readable.
    """
    maker = _sessions(settings().database_url)
    with maker() as session:
        session.connection(execution_options={"herald_read": True})
        yield session


_held = threading.local()

#: This process's SQLite writers, one at a time (see :func:`writing`).
_sqlite_writers = threading.RLock()

#: A held connection idle for longer than this is not trusted without the pool's ping:
#: the database may have restarted during a slow platform call.
HELD_IDLE = 1.0


@contextmanager
def holding() -> Iterator[None]:
    """Keep one pooled connection for this thread while the block runs (a worker's jobs).

    The connection is taken at the block's first :func:`writing` or :func:`peeking`, not
    on entry, so a database that is down fails that statement (inside the job, where
    failures are handled), never the worker around it. It is reused while it was used
    within :data:`HELD_IDLE` seconds, and swapped for a freshly pinged one after that:
    jobs that follow each other quickly check a connection out (and ping it) once, not
    once per transaction or per job.
    """
    if getattr(_held, "active", False):
        yield
        return
    _held.active, _held.conn = True, None
    try:
        yield
    finally:
        _release_held()
        _held.active = False


def _release_held() -> None:
    held: Connection | None = getattr(_held, "conn", None)
    _held.conn = None
    if held is not None:
        held.close()


@contextmanager
def _connection() -> Iterator[Connection]:
    if not getattr(_held, "active", False):
        with engine().connect() as conn:
            yield conn
        return
    held: Connection | None = _held.conn
    if held is not None and held.in_transaction():  # a nested use: a connection of its own
        with engine().connect() as conn:
            yield conn
        return
    if held is None or held.closed or held.invalidated or time.monotonic() - _held.used >= HELD_IDLE:
        _release_held()
        held = _held.conn = engine().connect()
    try:
        yield held
    finally:
        _held.used = time.monotonic()


@contextmanager
def writing() -> Iterator[Connection]:
    """A write transaction on a bare connection, for the publish path's hot statements.

    The ORM's unit of work costs several times a Core statement; the ledger's fenced
    writes know exactly which rows they change, so they skip it.
    """
    with _connection() as conn:
        if conn.dialect.name != "sqlite":
            with conn.begin():
                yield conn
            return
        # SQLite has one writer at a time, and a writer that finds the lock taken sleeps
        # in steps of 1, 2, 5, 10… ms (its busy handler) – far longer than a publish's
        # write holds it. The threads of one process therefore queue here instead, and
        # each starts the moment the one before commits; other processes still wait in
        # the busy handler.
        with _sqlite_writers, conn.begin():
            yield conn


@contextmanager
def peeking() -> Iterator[Connection]:
    """A read on a bare connection, outside any write lock.

    On SQLite it opens a deferred transaction (no write lock); on PostgreSQL it runs
    without one (autocommit), saving the BEGIN and ROLLBACK round trips.
    """
    with _connection() as conn:
        if conn.dialect.name == "sqlite":
            conn.execution_options(herald_read=True)
        else:
            conn.execution_options(isolation_level="AUTOCOMMIT")
        try:
            yield conn
        finally:
            conn.rollback()  # ends the read (a no-op round trip-free under autocommit)
            if conn.dialect.name == "sqlite":
                conn.execution_options(herald_read=False)
            else:
                conn.execution_options(isolation_level=conn.default_isolation_level)


def once_more_if_disconnected(write: Callable[P, T]) -> Callable[P, T]:
    """Run ``write`` a second time, on a new connection, when its connection was dead.

    A held connection is trusted for :data:`HELD_IDLE` seconds without the pool's ping,
    so a database that restarted in that window fails the write with a disconnect. The
    second try gets a pinged connection. It is only for the ledger's fenced writes, which
    may safely run twice: when the first try did commit and only its answer was lost, the
    second finds its work done (a repeated move is refused and logged, nothing changes).
    """

    @functools.wraps(write)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return write(*args, **kwargs)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            log.warning("%s: the database connection was lost (%s); trying once more", write.__name__, exc.orig)
            return write(*args, **kwargs)

    return wrapper

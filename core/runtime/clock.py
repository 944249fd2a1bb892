"""One clock for every deadline: the database's, or one injected by a test.

Workers' own clocks may be skewed; every lease expiry, due time and grace window is
compared against the instant the database reports, so all workers agree.

SQLite has no server: its ``now`` is the clock of the process calling it, which is
this machine's, so :class:`DatabaseClock` reads it directly. PostgreSQL's
``clock_timestamp()`` is read and the offset from the local clock is kept for a few
seconds, so asking the time does not cost a round trip every time. The offset is taken on
the late side (a reading may lag the server by a round trip, never lead it): a slot is
never taken as come before the server says it has.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import ClassVar, Protocol

from sqlalchemy import Engine, text

#: How long a measured offset between this machine and the database server is trusted.
OFFSET_TTL = 10.0
#: Readings of the server's clock per measurement; the one with the quickest round trip counts.
SAMPLES = 3


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...


class DatabaseClock:
    """The database server's clock."""

    _offsets: ClassVar[dict[str, tuple[float, timedelta]]] = {}
    _lock = threading.Lock()

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._local = engine.dialect.name == "sqlite"
        self._key = str(engine.url)

    def now(self) -> datetime:
        local = datetime.now(UTC)
        if self._local:
            return local
        return local + self._offset()

    def _offset(self) -> timedelta:
        """The server's clock minus this machine's, taken so that :meth:`now` is never ahead
        of the server: the server read its clock at some instant between sending the query
        and the answer arriving, and the answer's arrival is taken as that instant. The
        reading lags the server by at most the round trip; of :data:`SAMPLES` readings on one
        connection (after its checkout), the quickest round trip is kept."""
        key = self._key
        with self._lock:
            cached = self._offsets.get(key)
        if cached is not None and time.monotonic() - cached[0] < OFFSET_TTL:
            return cached[1]
        best: tuple[timedelta, timedelta] | None = None
        with self._engine.connect() as conn:
            for _ in range(SAMPLES):
                before = datetime.now(UTC)
                server: datetime = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
                after = datetime.now(UTC)
                if best is None or after - before < best[0]:
                    best = (after - before, server.astimezone(UTC) - after)
        assert best is not None
        with self._lock:
            self._offsets[key] = (time.monotonic(), best[1])
        return best[1]


class ManualClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def set(self, instant: datetime) -> None:
        self._now = instant

"""Every reconciler query is served by an index: the database's own plan says so (§7).

SQLite reports a full scan as ``SCAN <table>`` and an index lookup as ``SEARCH``.
PostgreSQL prefers a sequential scan on small tables whatever the indexes, so the plan
is read with ``enable_seqscan = off``: a ``Seq Scan`` then appears only where no index
can serve the query.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Select, text

from core.config import Settings
from core.store import db
from reconciler import queries

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
QUERIES = {
    "due_posts": queries.due_posts(NOW),
    "stale_leases": queries.stale_leases(NOW),
    "parked_deliveries": queries.parked_deliveries(NOW),
    "overdue_posts": queries.overdue_posts(NOW),
    "active_deliveries": queries.active_deliveries([1, 2, 3]),
    "recent_confirmations": queries.recent_confirmations(NOW, [1, 2]),
    "settling_deliveries": queries.settling_deliveries(NOW, [1, 2]),
    "open_alarms": queries.open_alarms(),
    "oldest_unclaimed_due": queries.oldest_unclaimed_due(NOW),
}
WATCHED = ("posts", "deliveries", "alarms", "attempts")


def plan(statement: Select[object]) -> list[str]:
    engine = db.engine()
    sql = str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return [str(row[3]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
        conn.execute(text("SET enable_seqscan = off"))
        return [str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN {sql}")]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_reconciler_query_uses_an_index_not_a_full_scan(name: str, herald: Settings) -> None:
    lines = plan(QUERIES[name])  # type: ignore[arg-type]
    full_scans = [
        line
        for line in lines
        for table in WATCHED
        if line.startswith(f"SCAN {table}") or f"Seq Scan on {table}" in line
    ]
    assert lines
    assert full_scans == [], "\n".join(lines)

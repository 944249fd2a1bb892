"""Every reconciler query, and `post list`'s, is served by an index: the database's own
plan says so (§7, §15).

SQLite reports a full scan as ``SCAN <table>`` and an index lookup as ``SEARCH``.
PostgreSQL prefers a sequential scan on small tables whatever the indexes, so the plan
is read with ``enable_seqscan = off``: a ``Seq Scan`` then appears only where no index
can serve the query.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Select, text

from core.config import Settings
from core.domain.states import PostStatus
from core.services import finding
from core.services.finding import PostQuery
from core.store import db
from reconciler import queries

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
QUERIES = {
    "due_posts": queries.due_posts(NOW),
    "entering_posts": queries.entering_posts(NOW, NOW),
    "stale_leases": queries.stale_leases(NOW),
    "parked_deliveries": queries.parked_deliveries(NOW),
    "overdue_posts": queries.overdue_posts(NOW),
    "active_deliveries": queries.active_deliveries([1, 2, 3]),
    "recent_confirmations": queries.recent_confirmations(NOW, [1, 2]),
    "settling_deliveries": queries.settling_deliveries(NOW, [1, 2]),
    "open_alarms": queries.open_alarms(),
    "oldest_unclaimed_due": queries.oldest_unclaimed_due(NOW),
    "due_schedules": queries.due_schedules(NOW),
}
WATCHED = ("posts", "deliveries", "alarms", "attempts", "release_schedules")


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


WEEK = PostQuery(start=NOW, end=NOW + timedelta(days=7))
ORDERED = "ix_posts_scheduled_at_id"
#: `post list`'s page of posts under each filter (ids stand for the names it resolves).
LIST_QUERIES = {
    "week": finding.posts_statement(WEEK),
    "next_page": finding.posts_statement(WEEK, after=(NOW + timedelta(hours=5), 42)),
    "no_window": finding.posts_statement(PostQuery()),
    "status": finding.posts_statement(replace(WEEK, status=PostStatus.HELD)),
    "account": finding.posts_statement(WEEK, account_id=1),
    "channel": finding.posts_statement(WEEK, channel_id=1),
    "needs_attention": finding.posts_statement(replace(WEEK, needs_attention=True)),
    "needs_attention_no_window": finding.posts_statement(PostQuery(needs_attention=True)),
    "search": finding.posts_statement(replace(WEEK, search="launch")),
    "every_filter": finding.posts_statement(
        replace(WEEK, status=PostStatus.PUBLISHING, needs_attention=True, search="launch"),
        channel_id=1,
        account_id=1,
        after=(NOW, 42),
    ),
}


@pytest.mark.parametrize("name", sorted([*LIST_QUERIES, "page_deliveries"]))
def test_post_list_query_uses_an_index_not_a_full_scan(name: str, herald: Settings) -> None:
    statement = LIST_QUERIES.get(name, finding.deliveries_statement([1, 2, 3]))
    lines = plan(statement)  # type: ignore[arg-type]
    full_scans = [
        line
        for line in lines
        for table in WATCHED
        if line.startswith(f"SCAN {table}") or f"Seq Scan on {table}" in line
        # With no window, SQLite walks the slot index from its start (its "SCAN"), in
        # order: the limit stops it after one page (the next test shows nothing sorts).
        if not line.startswith(f"SCAN posts USING INDEX {ORDERED}")
    ]
    assert lines
    assert full_scans == [], "\n".join(lines)
    # Hashing every held or failed delivery once per query costs what the table holds.
    assert not [line for line in lines if "hashed SubPlan" in line], "\n".join(lines)


@pytest.mark.parametrize("name", sorted(LIST_QUERIES))
def test_post_list_reads_its_page_in_index_order_and_stops_at_the_limit(name: str, herald: Settings) -> None:
    """No sort of the whole window: the index yields (slot, id) order, so the database
    reads the rows of one page (plus those a filter drops), not every row in the window."""
    lines = plan(LIST_QUERIES[name])  # type: ignore[arg-type]
    # SQLite's "USE TEMP B-TREE FOR ORDER BY", PostgreSQL's Sort node (an Incremental
    # Sort only orders the rows of one slot by id, as they come).
    sorts = [line for line in lines if "FOR ORDER BY" in line or re.match(r"\s*(->\s+)?Sort\b", line)]
    assert sorts == [], "\n".join(lines)

"""The ledger's writers: statements sent to PostgreSQL without waiting (core.ledger.pipeline),
and the same calls run one by one on SQLite (core.ledger.sqlite.Direct) – one contract."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, bindparam, insert, select, text
from sqlalchemy.exc import IntegrityError, StatementError

from core.config import Settings
from core.domain.states import DeliveryStatus
from core.ledger import dialect
from core.ledger import statements as sql
from core.ledger.dialect import Writer
from core.services.posts import create_post
from core.store import db
from core.store.models import Switch

pytestmark = pytest.mark.integration

SWITCH = insert(Switch).values(
    name=bindparam("b_name"), on=bindparam("b_on"), changed_at=datetime(2026, 1, 1, tzinfo=UTC)
)


def pipelined(conn: Connection) -> AbstractContextManager[Writer]:
    return dialect.of(conn).writer(conn)


def test_pipelined_rows_come_back_as_sqlalchemy_gives_them(channels: dict[str, str]) -> None:
    if db.engine().dialect.name != "postgresql":
        pytest.skip("only PostgreSQL's writer has rows of its own; SQLite's are SQLAlchemy's")
    post_id = create_post(channels=list(channels.values()), parts=["one", "two"], at=datetime.now(UTC))
    with db.writing() as conn:
        expected = [tuple(r) for r in conn.execute(sql.DELIVERY_ROWS, {"b_post": post_id})]
        with pipelined(conn) as pipe:
            rows = pipe.rows(sql.DELIVERY_ROWS, {"b_post": post_id})
    assert [tuple(r) for r in rows] == expected
    assert len(rows) == 6  # three deliveries, two parts each
    first = rows[0]
    assert first.status is DeliveryStatus.PENDING  # the enum member, not its text
    assert first.settings["base_url"].startswith("http://")  # JSON, decoded
    assert first.emergency_stop is False


def test_writes_sent_together_commit_together(herald: Settings) -> None:
    with db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(SWITCH, {"b_name": "a", "b_on": True})
        pipe.send(SWITCH, [{"b_name": "b", "b_on": False}, {"b_name": "c", "b_on": True}])
        read = pipe.rows(
            select(Switch.name).where(Switch.on == bindparam("b_on")).order_by(Switch.name), {"b_on": True}
        )
        pipe.commit()
    assert [r.name for r in read] == ["a", "c"]  # the transaction's own writes, read in it
    assert switches() == {"a": True, "b": False, "c": True}


def test_a_failing_statement_raises_sqlalchemys_error_and_nothing_is_written(herald: Settings) -> None:
    with pytest.raises(IntegrityError), db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(SWITCH, {"b_name": "kept?", "b_on": True})
        pipe.send(SWITCH, {"b_name": "kept?", "b_on": False})  # the same primary key
        pipe.commit()
    assert switches() == {}
    with db.writing() as conn:  # the connection is fit for the next transaction
        assert conn.execute(text("SELECT 1")).scalar_one() == 1


def test_leaving_the_pipeline_goes_on_with_ordinary_statements_in_the_same_transaction(herald: Settings) -> None:
    with db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(SWITCH, {"b_name": "piped", "b_on": True})
        pipe.leave()
        conn.execute(SWITCH, {"b_name": "plain", "b_on": False})
        pipe.send(SWITCH, {"b_name": "piped-again", "b_on": True})
        pipe.commit()
    assert switches() == {"piped": True, "plain": False, "piped-again": True}

    with pytest.raises(RuntimeError), db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(SWITCH, {"b_name": "rolled-back", "b_on": True})
        pipe.leave()
        conn.execute(SWITCH, {"b_name": "with-it", "b_on": True})
        raise RuntimeError("the block fails before its commit")
    assert "rolled-back" not in switches() and "with-it" not in switches()


def test_instants_come_back_in_utc(channels: dict[str, str]) -> None:
    slot = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=3)
    post_id = create_post(channels=[channels["native"]], parts=["x"], at=slot)
    with db.writing() as conn:
        if conn.dialect.name == "postgresql":  # the session's zone must not leak in
            conn.execute(text("SET LOCAL TIME ZONE 'America/New_York'"))
        with pipelined(conn) as pipe:
            (row,) = pipe.rows(sql.POST_TIMING, {"b_post": post_id})
    assert row.scheduled_at == slot
    assert row.scheduled_at.utcoffset() == timedelta(0)


def switches() -> dict[str, bool]:
    with db.reading() as s:
        return {name: on for name, on in s.execute(select(Switch.name, Switch.on))}


def test_a_naive_instant_is_refused_as_sqlalchemy_refuses_it(herald: Settings) -> None:
    with pytest.raises(StatementError, match="naive"), db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(sql.POST_STATUS, {"b_post": 1, "b_status": "scheduled", "b_now": datetime(2026, 1, 1)})


def test_a_rollback_writes_nothing_and_the_block_ends_quietly(herald: Settings) -> None:
    with db.writing() as conn, pipelined(conn) as pipe:
        pipe.send(SWITCH, {"b_name": "undone", "b_on": True})
        pipe.rollback()
    assert switches() == {}

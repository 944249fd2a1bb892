"""The publish path's compound steps on PostgreSQL: one statement each, sent in a pipeline.

Each statement is work for a PostgreSQL server and each answer waited for is a round
trip. Here the same statements as SQLite's (``core.ledger.statements``) are joined by
``WITH``: the claim's three writes per delivery, and a last part's four fenced writes
with the publication row. Sub-statements share one snapshot; every write behind a fence
is gated on the fence update having matched, so a fenced-out write changes nothing (and
is rolled back). A read that must see what a lock it waited for protected is a statement
of its own: the claim's read of the deliveries, and a result's summary. The writer is a
:class:`~core.ledger.pipeline.Pipeline`, which sends a transaction's statements without
waiting: a claim costs two round trips, a delivery's last part one, with the post's
summary decided by the server (``statements.STORE_SUMMARY``). A post's deliveries take
its row lock in turn, and none holds it while an answer travels to the process and back.

Plain SQLAlchemy statements without the pipeline would cost a round trip for BEGIN, one
per statement and one for COMMIT (4–6 for a claim); a server-side function would need
admission, written once in Python (``core.domain.admission``), a second time in SQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Boolean, Connection, bindparam, exists, func, select
from sqlalchemy.dialects import postgresql

from core.domain.states import DeliveryStatus
from core.ledger import statements as sql
from core.ledger.dialect import Claimed, Landed, Values, Writer
from core.ledger.pipeline import Pipeline

#: The compare-and-set, returning the post's columns (as CLAIM). The post's deliveries
#: and parts are read by the next statement (DELIVERY_ROWS), sent with it: a statement's
#: reads see the rows as they were when it began, and this one may first wait for the
#: post's row lock – held by a claim that, once it commits, has changed those very rows
#: (a part it set ``sending`` would read as ``unsent``, and be sent a second time).
CLAIMED = select(sql.CAS.returning(*sql.CLAIMED_COLUMNS).cte("claimed"))

#: PART_SENDING (when b_fresh), DELIVERY_SENDING and ATTEMPT, per admitted delivery.
PREPARE = sql.ATTEMPT.add_cte(
    sql.PART_SENDING.where(bindparam("b_fresh", type_=Boolean)).returning(sql.parts.c.id).cte("sending_part"),
    sql.DELIVERY_SENDING.returning(sql.deliveries.c.id).cte("sending_delivery"),
)

_fence = sql.FENCE.returning(sql.posts.c.id).cte("fenced")
_gate = exists(select(_fence.c.id))
_published = sql.DELIVERY_PUBLISHED.where(_gate).returning(sql.deliveries.c.id).cte("published_delivery")
_moved = exists(select(_published.c.id))
_columns = sql.PUBLICATION_COLUMNS
_recorded = (
    postgresql.insert(sql.publications)
    .from_select(list(_columns), select(*_columns.values()).where(_moved))
    .on_conflict_do_nothing()
    .returning(sql.publications.c.id)
    .cte("recorded")
)

#: FENCE, PART_PUBLISHED, END_ATTEMPT, DELIVERY_PUBLISHED and the publication row of a
#: delivery whose last part landed; returns (fenced, moved, recorded). Nothing but the
#: fence is written unless the delivery moved from ``sending``.
LAST_PART_LANDED = select(
    select(func.count()).select_from(_fence).scalar_subquery().label("fenced"),
    select(func.count()).select_from(_published).scalar_subquery().label("moved"),
    select(func.count()).select_from(_recorded).scalar_subquery().label("recorded"),
).add_cte(
    sql.PART_PUBLISHED.where(_moved).returning(sql.parts.c.id).cte("published_part"),
    sql.END_ATTEMPT.where(_moved).returning(sql.attempts.c.id).cte("ended_attempt"),
)

_summary = sql.STORE_SUMMARY.where(
    sql.posts.c.fence == bindparam("b_fence"),
    exists().where(sql.deliveries.c.id == bindparam("b_delivery"), sql.deliveries.c.status == DeliveryStatus.PUBLISHED),
).cte("summary")

#: STORE_SUMMARY after LAST_PART_LANDED, as its own statement (so it sees every other
#: delivery as committed once the fence's row lock was taken), only when that delivery
#: moved: returns the stored status, or no row.
SUMMARY_LANDED = select(_summary.c.status)

_PUBLICATION = (
    postgresql.insert(sql.publications).values(**_columns).on_conflict_do_nothing().returning(sql.publications.c.id)
)


class PostgreSQL:
    name = "postgresql"
    peeks_slot_first = False

    @contextmanager
    def writer(self, conn: Connection) -> Iterator[Writer]:
        pipeline = Pipeline(conn)
        try:
            yield pipeline
        except BaseException:
            pipeline.abandon()
            raise
        pipeline.leave()

    def claim(self, writer: Writer, cas: Values) -> Claimed | None:
        claimed = writer.send(CLAIMED, cas)
        rows = writer.send(sql.DELIVERY_ROWS, {"b_post": cas["b_post"]})
        post = claimed.all()  # with BEGIN and the read: one round trip
        if not post:
            return None
        return Claimed(post[0]._asdict(), rows.all())

    def prepare(self, writer: Writer, rows: list[Values]) -> None:
        writer.send(PREPARE, rows)

    def last_part_landed(self, conn: Connection, values: Values) -> Landed:
        with self.writer(conn) as writer:
            landed = writer.send(LAST_PART_LANDED, values)
            summary = writer.send(SUMMARY_LANDED, values)
            writer.commit()  # BEGIN, the two statements and COMMIT: one round trip
        row = landed.one()
        stored = summary.all()
        status = stored[0].status if stored else None
        return Landed(fenced=bool(row.fenced), moved=bool(row.moved), recorded=bool(row.recorded), status=status)

    def insert_publication(self, conn: Connection, values: Values) -> int | None:
        new_id: int | None = conn.execute(_PUBLICATION, values).scalar()
        return new_id


POSTGRESQL = PostgreSQL()

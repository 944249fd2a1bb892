"""The ledger's contract, run against SQLite and PostgreSQL alike (parametrized).

Each test says what the one writer of publishing state must do, whatever database it
talks to: the claim's compare-and-set and what it commits before any call, the fenced
writes of an attempt, and the edge cases where a second implementation once drifted (a
post with no deliveries was claimed on PostgreSQL – fence bumped, ``publishing``, the
lease never given back – while SQLite cancelled it).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, delete, select, text
from sqlalchemy.exc import DBAPIError, OperationalError

from core import config, ledger
from core.config import Settings
from core.domain.errors import Conflict, FencedOut
from core.domain.states import DeliveryState, DeliveryStatus, PartState, PostStatus, Reason, summarize
from core.ledger import claim as claiming
from core.ledger import moves
from core.plugins.adapter import Published
from core.runtime import job
from core.runtime.clock import ManualClock
from core.store import db, schema
from core.store.models import Account, Approval, Attempt, Channel, Delivery, DeliveryPart, Post, Publication
from tests.integration.conftest import _throwaway_postgres

pytestmark = pytest.mark.integration

LEASE, GRACE = 30.0, 30.0
SLOT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _postgres_url() -> str:
    given = os.environ.get("HERALD_DATABASE_URL", "")
    return given if given.startswith("postgresql") else "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('contract') / 'herald.db'}"
        schema.upgrade(db.engine_for(url))
        yield url
        return
    probe = create_engine(_postgres_url().replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with probe.connect():
            pass
    except OperationalError:
        pytest.skip("no PostgreSQL server to run the contract against")
    finally:
        probe.dispose()
    for url in _throwaway_postgres(_postgres_url()):
        schema.upgrade(db.engine_for(url))
        yield url


@pytest.fixture
def store(backend: str) -> Iterator[str]:
    """Empty tables on ``backend``, and herald's settings pointing at it."""
    engine = db.engine_for(backend)
    with engine.begin() as conn:
        for table in ("publications", "attempts", "delivery_parts", "deliveries", "posts", "channels", "accounts"):
            conn.execute(text(f"DELETE FROM {table}"))
    previous = config.settings()
    config.use(Settings(database_url=backend, lease_seconds=LEASE, grace_seconds=GRACE, call_timeout=10.0))
    job.use_clock(ManualClock(SLOT + timedelta(seconds=1)))
    yield engine.dialect.name
    job.use_clock(None)
    config.use(previous)


def make_post(*, channels: int = 1, parts: int = 1, slot: datetime = SLOT, not_before: datetime | None = None) -> int:
    with db.transaction() as s:
        account = Account(name="default", created_at=SLOT)
        s.add(account)
        s.flush()
        ids = []
        for i in range(channels):
            channel = Channel(
                name=f"c{i}", platform="sandbox-native", settings={}, account_id=account.id, created_at=SLOT
            )
            s.add(channel)
            s.flush()
            ids.append(channel.id)
        post = ledger.insert_post(
            s,
            account_id=account.id,
            channel_ids=ids,
            parts=[{"text": f"part {i}", "media": []} for i in range(parts)],
            scheduled_at=slot,
            zone="UTC",
            not_before=not_before,
            approval=Approval.NOT_REQUIRED,
            now=SLOT,
        )
        return post.id


def row(post_id: int) -> Post:
    with db.reading() as s:
        return s.get_one(Post, post_id)


def deliveries(post_id: int) -> list[Delivery]:
    with db.reading() as s:
        found = s.execute(select(Delivery).where(Delivery.post_id == post_id).order_by(Delivery.id)).scalars()
        return [d for d in found if d.parts is not None]  # parts loaded while the session is open


def parts(post_id: int) -> list[tuple[PartState, str | None]]:
    with db.reading() as s:
        query = (
            select(DeliveryPart.state, DeliveryPart.key)
            .join(Delivery, Delivery.id == DeliveryPart.delivery_id)
            .where(Delivery.post_id == post_id)
            .order_by(Delivery.id, DeliveryPart.idx)
        )
        return [(r.state, r.key) for r in s.execute(query)]


def claim(post_id: int, at: datetime, worker: str = "w1") -> ledger.Claim | None:
    return ledger.claim_post(post_id, worker, at, LEASE, GRACE)


def test_a_post_without_deliveries_is_cancelled_and_its_lease_given_back(store: str) -> None:
    post_id = make_post(channels=0)

    outcome = job.publish_post(post_id)

    assert outcome.result is job.JobResult.NOTHING_DUE
    post = row(post_id)
    assert (post.status, post.lease_owner, post.lease_expires_at, post.fence) == (PostStatus.CANCELLED, None, None, 1)


def test_a_delivery_without_parts_is_not_sent_and_the_lease_is_given_back(store: str) -> None:
    post_id = make_post(channels=1)
    with db.transaction() as s:
        s.execute(delete(DeliveryPart))

    got = claim(post_id, SLOT)

    assert got is not None and got.plans == ()
    ledger.release(got, SLOT, LEASE)
    post = row(post_id)
    assert (post.lease_owner, post.fence) == (None, 1)


def test_the_claim_commits_every_key_and_sending_before_it_returns(store: str) -> None:
    post_id = make_post(channels=2, parts=2)

    got = claim(post_id, SLOT + timedelta(seconds=1))

    assert got is not None and got.fence == 1 and len(got.plans) == 2
    # Read on another connection: committed, before any platform call could be made.
    assert [state for state, _ in parts(post_id)] == [PartState.SENDING, PartState.UNSENT] * 2
    assert all(key for state, key in parts(post_id) if state is PartState.SENDING)
    assert [d.status for d in deliveries(post_id)] == [DeliveryStatus.SENDING] * 2
    assert [d.attempts for d in deliveries(post_id)] == [1, 1]
    with db.reading() as s:
        opened = s.execute(select(Attempt.action, Attempt.ended_at, Attempt.worker)).all()
    assert sorted(opened) == [("send", None, "w1"), ("send", None, "w1")]
    post = row(post_id)
    assert (post.status, post.lease_owner) == (PostStatus.PUBLISHING, "w1")


def test_a_live_lease_is_not_taken_and_a_stale_one_is_with_a_new_fence(store: str) -> None:
    post_id = make_post()
    first = claim(post_id, SLOT)
    assert first is not None

    assert claim(post_id, SLOT + timedelta(seconds=LEASE + GRACE - 1), worker="w2") is None
    second = claim(post_id, SLOT + timedelta(seconds=LEASE + GRACE + 1), worker="w2")

    assert second is not None and second.fence == first.fence + 1
    assert second.plans[0].in_doubt  # the first claim's part may have reached the platform


def test_an_early_job_claims_nothing(store: str) -> None:
    post_id = make_post()

    early = ledger.claim_due_post(post_id, "w1", SLOT - timedelta(seconds=5), LEASE, GRACE)

    assert early == ledger.Early(SLOT)
    post = row(post_id)
    assert (post.fence, post.status, post.lease_owner) == (0, PostStatus.SCHEDULED, None)


def test_a_one_part_result_publishes_records_and_gives_the_lease_back(store: str) -> None:
    post_id = make_post()
    got = claim(post_id, SLOT)
    assert got is not None

    status = ledger.part_published(got, got.plans[0].delivery_id, 0, Published("p1", "u/p1"), SLOT, LEASE)

    assert status is PostStatus.PUBLISHED
    post = row(post_id)
    assert (post.status, post.lease_owner) == (PostStatus.PUBLISHED, None)
    with db.reading() as s:
        (publication,) = s.execute(select(Publication)).scalars()
        (attempt,) = s.execute(select(Attempt)).scalars()
    assert (publication.platform_id, publication.url, publication.slot) == ("p1", "u/p1", SLOT)
    assert (attempt.outcome, attempt.ended_at) == ("published", SLOT)
    (delivery,) = deliveries(post_id)
    assert (delivery.status, delivery.confirmed_at, delivery.first_seen_at) == (DeliveryStatus.PUBLISHED, SLOT, None)


def test_a_thread_sends_part_after_part_and_its_publication_names_the_first(store: str) -> None:
    post_id = make_post(parts=3)
    got = claim(post_id, SLOT)
    assert got is not None
    delivery_id = got.plans[0].delivery_id
    first = Published("t0", "u/t0")

    assert ledger.part_published(got, delivery_id, 0, first, SLOT, LEASE) is None
    assert [s for s, _ in parts(post_id)] == [PartState.PUBLISHED, PartState.SENDING, PartState.UNSENT]
    assert row(post_id).lease_owner == "w1"  # the thread is still being sent
    assert ledger.part_published(got, delivery_id, 1, Published("t1", "u/t1"), SLOT, LEASE, first=first) is None
    last = ledger.part_published(got, delivery_id, 2, Published("t2", "u/t2"), SLOT, LEASE, first=first)

    assert last is PostStatus.PUBLISHED
    with db.reading() as s:
        (publication,) = s.execute(select(Publication)).scalars()
        attempts = s.execute(select(Attempt.part_idx, Attempt.outcome).order_by(Attempt.id)).all()
    assert (publication.platform_id, publication.url) == ("t0", "u/t0")
    assert attempts == [(0, "published"), (1, "published"), (2, "published")]
    assert row(post_id).lease_owner is None


def test_a_publication_already_recorded_keeps_the_first_and_still_publishes(store: str) -> None:
    post_id = make_post()
    got = claim(post_id, SLOT)
    assert got is not None
    with db.writing() as conn:
        ledger.record_publication(conn, post_id, got.plans[0].channel_id, SLOT, 1, "first", "u/first", SLOT)

    status = ledger.part_published(got, got.plans[0].delivery_id, 0, Published("second", "u/second"), SLOT, LEASE)

    assert status is PostStatus.PUBLISHED
    with db.reading() as s:
        assert s.execute(select(Publication.platform_id)).scalars().all() == ["first"]
    assert row(post_id).lease_owner is None


def test_a_write_of_a_superseded_claim_records_nothing(store: str) -> None:
    post_id = make_post()
    old = claim(post_id, SLOT)
    new = claim(post_id, SLOT + timedelta(seconds=LEASE + GRACE + 1), worker="w2")
    assert old is not None and new is not None

    with pytest.raises(FencedOut):
        ledger.part_published(old, old.plans[0].delivery_id, 0, Published("stale", "u"), SLOT, LEASE)
    with pytest.raises(FencedOut):
        ledger.delivery_parked(
            old, old.plans[0].delivery_id, 0, in_doubt=False, next_attempt_at=None, reason=None, detail="x",
            now=SLOT, lease=LEASE,
        )  # fmt: skip

    (delivery,) = deliveries(post_id)
    assert delivery.status is DeliveryStatus.SENDING
    with db.reading() as s:
        assert s.execute(select(Publication)).first() is None
    assert row(post_id).lease_owner == "w2"


@pytest.mark.parametrize(
    ("in_doubt", "exhausted", "status", "reason", "part"),
    [
        (False, Reason.PLATFORM_UNAVAILABLE, DeliveryStatus.FAILED, Reason.PLATFORM_UNAVAILABLE, PartState.UNSENT),
        (False, Reason.ADAPTER_ERROR, DeliveryStatus.FAILED, Reason.ADAPTER_ERROR, PartState.UNSENT),
        (True, Reason.ADAPTER_ERROR, DeliveryStatus.HELD, Reason.AMBIGUOUS_OUTCOME, PartState.SENDING),
    ],
)
def test_retries_exhausted_end_with_a_reason_and_the_lease_given_back(
    store: str, in_doubt: bool, exhausted: Reason, status: DeliveryStatus, reason: Reason, part: PartState
) -> None:
    post_id = make_post()
    got = claim(post_id, SLOT)
    assert got is not None

    ledger.delivery_parked(
        got, got.plans[0].delivery_id, 0, in_doubt=in_doubt, next_attempt_at=None, reason=None,
        detail="AdapterError: boom", now=SLOT, lease=LEASE, exhausted=exhausted,
    )  # fmt: skip

    (delivery,) = deliveries(post_id)
    assert (delivery.status, delivery.reason, delivery.detail) == (status, reason, "AdapterError: boom")
    assert parts(post_id)[0][0] is part
    assert row(post_id).lease_owner is None


def test_an_embargo_on_a_delivery_already_tried_parks_it_through_the_checked_move(store: str) -> None:
    lifts = SLOT + timedelta(hours=1)
    post_id = make_post(not_before=lifts)
    with db.transaction() as s:  # an earlier attempt parked it (the embargo was set since)
        s.execute(text("UPDATE deliveries SET status = 'retry_wait', attempts = 1"))

    got = claim(post_id, SLOT + timedelta(seconds=1))

    assert got is not None and got.plans == ()
    (delivery,) = deliveries(post_id)
    assert (delivery.status, delivery.reason, delivery.next_attempt_at) == (
        DeliveryStatus.RETRY_WAIT,
        Reason.EMBARGOED,
        lifts,
    )


def test_a_claim_whose_answer_was_lost_takes_its_own_lease_and_sends_afresh(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    post_id = make_post()
    real = claiming._claim_once
    calls: list[bool] = []

    def answer_lost(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["recovering"])
        got = real(*args, **kwargs)
        if len(calls) == 1:  # committed; the connection died before the answer came back
            raise DBAPIError(
                "COMMIT", None, ConnectionError("server closed the connection"), connection_invalidated=True
            )
        return got

    monkeypatch.setattr(claiming, "_claim_once", answer_lost)
    got = claim(post_id, SLOT)

    assert calls == [False, True]
    assert got is not None and got.fence == 2 and got.worker == "w1"
    (plan,) = got.plans
    assert not plan.in_doubt  # no call follows a claim before its answer
    assert plan.attempts == 1
    with db.reading() as s:
        attempts = s.execute(select(Attempt.fence, Attempt.outcome, Attempt.action).order_by(Attempt.id)).all()
    assert attempts == [(1, "not_sent", "send"), (2, None, "send")]
    assert row(post_id).lease_owner == "w1"


def test_a_lost_claim_answer_leaves_a_part_that_was_already_in_doubt_in_doubt(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    post_id = make_post()
    assert claim(post_id, SLOT, worker="w0") is not None  # sent, then its worker died: in doubt
    real = claiming._claim_once
    calls: list[bool] = []

    def answer_lost(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["recovering"])
        got = real(*args, **kwargs)
        if len(calls) == 1:
            raise DBAPIError(
                "COMMIT", None, ConnectionError("server closed the connection"), connection_invalidated=True
            )
        return got

    monkeypatch.setattr(claiming, "_claim_once", answer_lost)
    got = claim(post_id, SLOT + timedelta(seconds=LEASE + GRACE + 1))

    assert calls == [False, True]
    assert got is not None and got.worker == "w1"
    (plan,) = got.plans
    # w0's call may have landed: the lost answer of w1's claim changes nothing of that, so
    # the part is settled by the adapter's strategy, never sent afresh.
    assert plan.in_doubt
    assert plan.attempts == 2  # w0's attempt counts; w1's lost one does not
    with db.reading() as s:
        attempts = s.execute(select(Attempt.worker, Attempt.outcome, Attempt.action).order_by(Attempt.id)).all()
    assert attempts == [("w0", None, "send"), ("w1", "not_sent", "recover"), ("w1", None, "recover")]


def _combinations() -> list[tuple[tuple[DeliveryStatus, bool], ...]]:
    """Every post of up to two deliveries, each any status with or without a published
    part, and every three-delivery post of statuses alone: what a summary is decided from."""
    kinds = [(status, published) for status in DeliveryStatus for published in (False, True)]
    posts: list[tuple[tuple[DeliveryStatus, bool], ...]] = [()]
    posts += [(k,) for k in kinds]
    posts += list(itertools.combinations_with_replacement(kinds, 2))
    posts += [tuple((s, False) for s in c) for c in itertools.combinations_with_replacement(DeliveryStatus, 3)]
    return posts


def test_the_stored_summary_is_summarize_of_the_deliveries_rule_for_rule(store: str) -> None:
    # The database decides a claimed post's summary and the lease's release in one
    # statement (statements.STORE_SUMMARY); core.domain.states.summarize is the rule.
    combinations = _combinations()
    with db.transaction() as s:
        account = Account(name="default", created_at=SLOT)
        s.add(account)
        s.flush()
        channels = [
            Channel(name=f"c{i}", platform="sandbox-native", settings={}, account_id=account.id, created_at=SLOT)
            for i in range(3)
        ]
        s.add_all(channels)
        s.flush()
        post_ids = []
        for combination in combinations:
            post = ledger.insert_post(
                s,
                account_id=account.id,
                channel_ids=[c.id for c in channels[: len(combination)]],
                parts=[{"text": "x", "media": []}],
                scheduled_at=SLOT,
                zone="UTC",
                not_before=None,
                approval=Approval.NOT_REQUIRED,
                now=SLOT,
            )
            post.fence, post.lease_owner, post.lease_expires_at = 1, "w1", SLOT
            post_ids.append(post.id)
            s.flush()
            found = s.execute(select(Delivery).where(Delivery.post_id == post.id).order_by(Delivery.id)).scalars()
            for delivery, (status, published) in zip(found, combination, strict=True):
                delivery.status = status
                delivery.parts[0].state = PartState.PUBLISHED if published else PartState.UNSENT

    with db.writing() as conn:
        stored = [moves.finish(conn, post_id, SLOT) for post_id in post_ids]

    for post_id, combination, status in zip(post_ids, combinations, stored, strict=True):
        states = [DeliveryState(s, int(published)) for s, published in combination]
        expected = summarize(states, claimed=True)
        post = row(post_id)
        assert (status, post.status) == (expected, expected), combination
        sending = any(s is DeliveryStatus.SENDING for s, _ in combination)
        assert (post.lease_owner == "w1") is sending, combination
        assert (post.lease_expires_at is not None) is sending, combination
    assert set(stored) == set(PostStatus) - {PostStatus.DRAFT, PostStatus.SCHEDULED}  # every one a claim can leave


def test_the_last_of_a_posts_deliveries_landing_at_once_gives_the_lease_back(store: str) -> None:
    # Five channels' results commit side by side, over and over: whichever commits last
    # sees every other delivery published, answers ``published`` and gives the lease
    # back; each one before it answers ``publishing``.
    for _ in range(10):
        post_id = make_post(channels=5)
        got = claim(post_id, SLOT)
        assert got is not None and len(got.plans) == 5
        start = threading.Barrier(5)
        statuses: list[PostStatus | None] = []
        threads = [threading.Thread(target=_land, args=(got, plan, start, statuses)) for plan in got.plans]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sorted(statuses) == [PostStatus.PUBLISHED] + [PostStatus.PUBLISHING] * 4
        post = row(post_id)
        assert (post.status, post.lease_owner, post.lease_expires_at) == (PostStatus.PUBLISHED, None, None)
        with db.transaction() as s:  # the next round's post makes its own account and channels
            for table in ("publications", "attempts", "delivery_parts", "deliveries", "posts", "channels", "accounts"):
                s.execute(text(f"DELETE FROM {table}"))


def _land(claim: ledger.Claim, plan: ledger.DeliveryPlan, start: threading.Barrier, statuses: list[Any]) -> None:
    start.wait()
    result = Published(f"p{plan.delivery_id}", "u")
    statuses.append(ledger.part_published(claim, plan.delivery_id, 0, result, SLOT, LEASE))


@pytest.mark.parametrize(
    ("meanwhile", "published"),
    [(DeliveryStatus.HELD, True), (DeliveryStatus.CANCELLED, False)],
)
def test_a_last_part_for_a_delivery_no_longer_sending_takes_the_checked_move(
    store: str, meanwhile: DeliveryStatus, published: bool
) -> None:
    post_id = make_post()
    got = claim(post_id, SLOT)
    assert got is not None
    with db.transaction() as s:  # moved while its call was out (as the table allows a person)
        s.execute(text(f"UPDATE deliveries SET status = '{meanwhile}', reason = 'ambiguous_outcome'"))
    landed = Published("p1", "u/p1")

    if published:
        status = ledger.part_published(got, got.plans[0].delivery_id, 0, landed, SLOT, LEASE)
        assert status is PostStatus.PUBLISHED
    else:
        with pytest.raises(Conflict, match="cannot go from cancelled to published"):
            ledger.part_published(got, got.plans[0].delivery_id, 0, landed, SLOT, LEASE)

    (delivery,) = deliveries(post_id)
    assert delivery.status is (DeliveryStatus.PUBLISHED if published else meanwhile)
    assert parts(post_id)[0][0] is (PartState.PUBLISHED if published else PartState.SENDING)
    with db.reading() as s:
        assert len(s.execute(select(Publication)).all()) == int(published)
    if published:
        assert (row(post_id).status, row(post_id).lease_owner) == (PostStatus.PUBLISHED, None)


def test_a_claim_that_waited_for_an_earlier_claims_commit_reads_what_it_committed(store: str) -> None:
    # A claim whose worker stopped before its commit (SIGSTOP, a pause) holds the post's
    # row; a later claim waits for it, and once that commit lands with the part sending
    # and its lease already stale, the later claim takes the post: it must see the part
    # in doubt, never as an unsent part to send a second time.
    post_id = make_post()
    engine = db.engine_for(config.settings().database_url)
    with engine.connect() as held:  # on SQLite, herald's engine begins it IMMEDIATE: the write lock
        held.execute(
            text(
                "UPDATE posts SET fence = 1, status = 'publishing', lease_owner = 'w0', lease_expires_at = :expires "
                "WHERE id = :post"
            ),
            {"post": post_id, "expires": SLOT + timedelta(seconds=LEASE)},
        )
        held.execute(
            text("UPDATE delivery_parts SET state = 'sending', key = 'k0', attempt_started_at = :at"), {"at": SLOT}
        )
        held.execute(text("UPDATE deliveries SET status = 'sending', attempts = 1"))
        later: list[ledger.Claim | None] = []
        waiting = threading.Thread(
            target=lambda: later.append(claim(post_id, SLOT + timedelta(seconds=LEASE + GRACE + 1), worker="w1"))
        )
        waiting.start()
        _until_a_claim_waits(store)
        held.commit()
    waiting.join()

    (got,) = later
    assert got is not None and got.fence == 2
    (plan,) = got.plans
    assert plan.in_doubt
    assert plan.attempts == 2


def _until_a_claim_waits(store: str) -> None:
    """Return once another session waits for a lock (PostgreSQL), or at once: on SQLite
    the held write transaction makes the claim wait whenever it begins."""
    if store != "postgresql":
        return
    with db.reading() as s:
        for _ in range(500):
            # This database only: another test run on the same server may wait for its own locks.
            waits = s.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                )
            ).scalar()
            if waits:
                return
            s.rollback()
            time.sleep(0.01)
    raise AssertionError("the later claim never waited for the held row")

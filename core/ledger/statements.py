"""The publish path's statements, built once.

Building a statement (the expression tree, then its cache key) costs SQLAlchemy several
times what SQLite takes to run it. The statements every publish runs are therefore
built here, at import, over the tables with bound parameters, and only executed with
values on the hot path. Rare paths (holds, retries, failures) build theirs as they go.

Bound parameter names carry a ``b_`` prefix: SQLAlchemy reserves a column's own name
for the SET clause of an UPDATE.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import Boolean, Table, bindparam, exists, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from core.domain.states import DeliveryStatus, PartState, PostStatus
from core.store.models import Account, Attempt, Channel, Delivery, DeliveryPart, Post, Publication, Switch

GLOBAL_STOP = "emergency_stop"

posts = cast(Table, Post.__table__)
deliveries = cast(Table, Delivery.__table__)
parts = cast(Table, DeliveryPart.__table__)
channels = cast(Table, Channel.__table__)
accounts = cast(Table, Account.__table__)
switches = cast(Table, Switch.__table__)
attempts = cast(Table, Attempt.__table__)
publications = cast(Table, Publication.__table__)

# -- reads before a claim ------------------------------------------------------------

#: A job's look at its post's slot before a claim (SQLite only): b_post.
POST_SLOT = select(posts.c.scheduled_at).where(posts.c.id == bindparam("b_post"))

#: What arming reads of a post: b_post.
POST_TIMING = select(
    posts.c.status, posts.c.scheduled_at, posts.c.not_before, posts.c.lease_owner, posts.c.lease_expires_at
).where(posts.c.id == bindparam("b_post"))

#: Its deliveries' times, read only for a post still active: b_post.
DELIVERY_TIMES = select(deliveries.c.status, deliveries.c.next_attempt_at).where(
    deliveries.c.post_id == bindparam("b_post")
)

# -- the claim -----------------------------------------------------------------------

_CAS = (
    update(posts)
    .where(
        posts.c.id == bindparam("b_post"),
        # Not IN (…): an expanding IN is rendered per execution, and core.ledger.pipeline
        # compiles each statement once.
        or_(posts.c.status == PostStatus.SCHEDULED, posts.c.status == PostStatus.PUBLISHING),
        or_(posts.c.lease_owner.is_(None), posts.c.lease_expires_at < bindparam("b_stale_before")),
    )
    .values(
        fence=posts.c.fence + 1,
        lease_owner=bindparam("b_worker"),
        lease_expires_at=bindparam("b_expires"),
        # What the summary usually is once claimed; the claim corrects it when not.
        status=PostStatus.PUBLISHING,
        updated_at=bindparam("b_now"),
    )
)
_CLAIMED_COLUMNS = (
    posts.c.fence,
    posts.c.status,
    posts.c.scheduled_at,
    posts.c.revision,
    posts.c.account_id,
    posts.c.approval,
    posts.c.parts,
    posts.c.not_before,
)

#: The compare-and-set: b_post, b_stale_before, b_worker, b_expires, b_now.
CLAIM = _CAS.returning(*_CLAIMED_COLUMNS)

_DELIVERY_COLUMNS = (
    deliveries.c.id,
    deliveries.c.channel_id,
    deliveries.c.status,
    deliveries.c.next_attempt_at,
    deliveries.c.attempts,
    channels.c.platform,
    channels.c.settings,
    channels.c.connected,
    parts.c.idx,
    parts.c.text,
    parts.c.media,
    parts.c.state,
    parts.c.key,
    parts.c.attempt_started_at,
    parts.c.platform_id,
    # What admission needs besides: the post's account, and the global stop.
    accounts.c.status.label("account_status"),
    accounts.c.emergency_stop,
    select(switches.c.on).where(switches.c.name == GLOBAL_STOP).scalar_subquery().label("global_stop"),
)

#: Every delivery of the post with its channel, one row per part, in order: b_post.
#: Each row also carries the account's standing and the global stop, for admission.
DELIVERY_ROWS = (
    select(*_DELIVERY_COLUMNS)
    .join(channels, channels.c.id == deliveries.c.channel_id)
    .join(parts, parts.c.delivery_id == deliveries.c.id)
    .join(posts, posts.c.id == deliveries.c.post_id)
    .join(accounts, accounts.c.id == posts.c.account_id)
    .where(deliveries.c.post_id == bindparam("b_post"))
    .order_by(deliveries.c.id, parts.c.idx)
)

#: §4: a part's key and ``sending``, before its call: b_delivery, b_idx, b_key, b_now.
PART_SENDING = (
    update(parts)
    .where(parts.c.delivery_id == bindparam("b_delivery"), parts.c.idx == bindparam("b_idx"))
    .values(key=bindparam("b_key"), state=PartState.SENDING, attempt_started_at=bindparam("b_now"))
)

#: An admitted delivery: b_delivery, b_attempts, b_now.
DELIVERY_SENDING = (
    update(deliveries)
    .where(deliveries.c.id == bindparam("b_delivery"))
    .values(
        status=DeliveryStatus.SENDING,
        attempts=bindparam("b_attempts"),
        claimed_at=func.coalesce(deliveries.c.claimed_at, bindparam("b_now", type_=deliveries.c.claimed_at.type)),
    )
)

#: An attempt's row, named by its columns.
ATTEMPT = insert(attempts)

# -- fenced writes -------------------------------------------------------------------

#: Proves the fence and renews the lease: b_post, b_fence, b_expires.
FENCE = (
    update(posts)
    .where(posts.c.id == bindparam("b_post"), posts.c.fence == bindparam("b_fence"))
    .values(lease_expires_at=bindparam("b_expires"))
)

#: The heartbeat: as FENCE, and only while the lease is held.
RENEW = (
    update(posts)
    .where(
        posts.c.id == bindparam("b_post"),
        posts.c.fence == bindparam("b_fence"),
        posts.c.lease_owner.is_not(None),
    )
    .values(lease_expires_at=bindparam("b_expires"))
)

#: b_delivery, b_idx, b_platform_id, b_url, b_now.
PART_PUBLISHED = (
    update(parts)
    .where(parts.c.delivery_id == bindparam("b_delivery"), parts.c.idx == bindparam("b_idx"))
    .values(
        state=PartState.PUBLISHED,
        platform_id=bindparam("b_platform_id"),
        url=bindparam("b_url"),
        published_at=bindparam("b_now"),
    )
)

#: A part back to ``unsent`` or kept ``sending``: b_delivery, b_idx, b_state.
PART_STATE = (
    update(parts)
    .where(parts.c.delivery_id == bindparam("b_delivery"), parts.c.idx == bindparam("b_idx"))
    .values(state=bindparam("b_state"))
)

#: The first part's platform id and address, for a thread's publication row: b_delivery, b_idx.
PART_PLATFORM_ID = select(parts.c.platform_id, parts.c.url).where(
    parts.c.delivery_id == bindparam("b_delivery"), parts.c.idx == bindparam("b_idx")
)

#: Closes the claim's open attempt of a delivery: b_delivery, b_fence, b_now, b_outcome, b_error.
END_ATTEMPT = (
    update(attempts)
    .where(
        attempts.c.delivery_id == bindparam("b_delivery"),
        attempts.c.fence == bindparam("b_fence"),
        attempts.c.ended_at.is_(None),
    )
    .values(ended_at=bindparam("b_now"), outcome=bindparam("b_outcome"), error=bindparam("b_error"))
)

#: A sending delivery confirmed: b_delivery, b_now, b_seen (the read-back sighting, or None).
DELIVERY_PUBLISHED = (
    update(deliveries)
    .where(deliveries.c.id == bindparam("b_delivery"), deliveries.c.status == DeliveryStatus.SENDING)
    .values(
        status=DeliveryStatus.PUBLISHED,
        reason=None,
        detail=None,
        confirmed_at=bindparam("b_now"),
        first_seen_at=func.coalesce(
            deliveries.c.first_seen_at, bindparam("b_seen", type_=deliveries.c.first_seen_at.type)
        ),
    )
)

#: The publication row, a no-op when one exists (§4); named by its columns.
PUBLICATION = {
    "postgresql": postgresql.insert(publications).on_conflict_do_nothing().returning(publications.c.id),
    "sqlite": sqlite.insert(publications).on_conflict_do_nothing().returning(publications.c.id),
}

#: The publication already recorded: b_post, b_channel, b_slot, b_revision.
FIRST_PUBLICATION = select(publications).where(
    publications.c.post_id == bindparam("b_post"),
    publications.c.channel_id == bindparam("b_channel"),
    publications.c.slot == bindparam("b_slot"),
    publications.c.revision == bindparam("b_revision"),
)

#: Every delivery's status and published parts, for ``summarize``: b_post.
DELIVERY_STATES = (
    select(deliveries.c.status, func.count(parts.c.id))
    .outerjoin(parts, (parts.c.delivery_id == deliveries.c.id) & (parts.c.state == PartState.PUBLISHED))
    .where(deliveries.c.post_id == bindparam("b_post"))
    .group_by(deliveries.c.id, deliveries.c.status)
)

#: The post's summary while a delivery is still sending: b_post, b_status, b_now.
POST_STATUS = (
    update(posts)
    .where(posts.c.id == bindparam("b_post"))
    .values(status=bindparam("b_status"), updated_at=bindparam("b_now"))
)

#: The post's summary, with the lease given back: b_post, b_status, b_now.
POST_STATUS_RELEASED = POST_STATUS.values(lease_owner=None, lease_expires_at=None)


# -- PostgreSQL: one round trip where SQLite needs several ---------------------------------
#
# Each statement is work for a PostgreSQL server, and SQLite has no data-modifying WITH.
# These run the same statements as above, joined by WITH: the claim's compare-and-set with
# its read, the claim's three writes per delivery, and a one-part result's four fenced
# writes with its publication row. The sub-statements share one snapshot; every write
# behind a fence is gated on the fence update having matched, so a fenced-out write
# changes nothing (and is rolled back). core.ledger.pipeline sends them with the statements
# around them, a transaction's worth in two round trips.

_claimed = _CAS.returning(posts.c.id, *_CLAIMED_COLUMNS).cte("claimed")

#: CLAIM and DELIVERY_ROWS at once; no row when the compare-and-set failed: as CLAIM.
CLAIM_ROWS_PG = (
    select(*(_claimed.c[c.key].label(f"post_{c.key}") for c in _CLAIMED_COLUMNS), *_DELIVERY_COLUMNS)
    .select_from(
        _claimed.join(deliveries, deliveries.c.post_id == _claimed.c.id)
        .join(channels, channels.c.id == deliveries.c.channel_id)
        .join(parts, parts.c.delivery_id == deliveries.c.id)
        .join(accounts, accounts.c.id == _claimed.c.account_id)
    )
    .order_by(deliveries.c.id, parts.c.idx)
)

#: PART_SENDING (when b_fresh), DELIVERY_SENDING and the attempt row, per admitted delivery:
#: b_delivery, b_idx, b_key, b_fresh, b_attempts, b_now, b_post, b_fence, b_worker, b_action.
PREPARE_PG = (
    insert(attempts)
    .values(
        post_id=bindparam("b_post"),
        delivery_id=bindparam("b_delivery"),
        part_idx=bindparam("b_idx"),
        fence=bindparam("b_fence"),
        worker=bindparam("b_worker"),
        action=bindparam("b_action"),
        started_at=bindparam("b_now"),
    )
    .add_cte(
        PART_SENDING.where(bindparam("b_fresh", type_=Boolean)).returning(parts.c.id).cte("sending_part"),
        DELIVERY_SENDING.returning(deliveries.c.id).cte("sending_delivery"),
    )
)

_fence = FENCE.returning(posts.c.id).cte("fenced")
_gate = exists(select(_fence.c.id))
_published = DELIVERY_PUBLISHED.where(_gate).returning(deliveries.c.id).cte("published_delivery")
_recorded = (
    postgresql.insert(publications)
    .from_select(
        ["post_id", "channel_id", "slot", "revision", "platform_id", "url", "created_at"],
        select(
            bindparam("b_post", type_=publications.c.post_id.type),
            bindparam("b_channel", type_=publications.c.channel_id.type),
            bindparam("b_slot", type_=publications.c.slot.type),
            bindparam("b_revision", type_=publications.c.revision.type),
            func.coalesce(bindparam("b_platform_id", type_=publications.c.platform_id.type), ""),
            func.coalesce(bindparam("b_url", type_=publications.c.url.type), ""),
            bindparam("b_now", type_=publications.c.created_at.type),
        ).where(_gate),
    )
    .on_conflict_do_nothing()
    .returning(publications.c.id)
    .cte("recorded")
)

#: FENCE, PART_PUBLISHED, END_ATTEMPT, DELIVERY_PUBLISHED and the publication row of a
#: delivery whose one part landed; returns (fence matched, delivery moved, publication
#: recorded): their parameters, and b_channel, b_slot, b_revision.
PUBLISHED_PG = select(
    select(func.count()).select_from(_fence).scalar_subquery().label("fenced"),
    select(func.count()).select_from(_published).scalar_subquery().label("moved"),
    select(func.count()).select_from(_recorded).scalar_subquery().label("recorded"),
).add_cte(
    PART_PUBLISHED.where(_gate).returning(parts.c.id).cte("published_part"),
    END_ATTEMPT.where(_gate).returning(attempts.c.id).cte("ended_attempt"),
)

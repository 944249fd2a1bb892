"""The publish path's statements, built once.

Building a statement (the expression tree, then its cache key) costs SQLAlchemy several
times what SQLite takes to run it. The statements every publish runs are therefore
built here, at import, over the tables with bound parameters, and only executed with
values on the hot path. Rare paths (holds, retries, failures) build theirs as they go.

Bound parameter names carry a ``b_`` prefix: SQLAlchemy reserves a column's own name
for the SET clause of an UPDATE.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from sqlalchemy import (
    ColumnElement,
    Exists,
    Table,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    update,
)

from core.domain.states import ACTIVE_DELIVERY, DeliveryStatus, PartState, PostStatus
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
    posts.c.status,
    posts.c.scheduled_at,
    posts.c.not_before,
    posts.c.lease_owner,
    posts.c.lease_expires_at,
    posts.c.imported_at,
).where(posts.c.id == bindparam("b_post"))

#: Its deliveries' times, read only for a post still active: b_post.
DELIVERY_TIMES = select(deliveries.c.status, deliveries.c.next_attempt_at).where(
    deliveries.c.post_id == bindparam("b_post")
)

#: POST_TIMING for many posts at once (the posts entering the arming horizon): b_posts.
POSTS_TIMING = select(posts.c.id, *POST_TIMING.selected_columns).where(
    posts.c.id.in_(bindparam("b_posts", expanding=True))
)

#: DELIVERY_TIMES for many posts at once: b_posts.
DELIVERIES_TIMES = select(deliveries.c.post_id, deliveries.c.status, deliveries.c.next_attempt_at).where(
    deliveries.c.post_id.in_(bindparam("b_posts", expanding=True))
)

# -- the claim -----------------------------------------------------------------------

CAS = (
    update(posts)
    .where(
        posts.c.id == bindparam("b_post"),
        # Not IN (…): an expanding IN is rendered per execution, and core.ledger.pipeline
        # compiles each statement once.
        or_(posts.c.status == PostStatus.SCHEDULED, posts.c.status == PostStatus.PUBLISHING),
        # An imported post (another system published it) is never claimed, whatever its
        # status reads: the marker, not the status, is what keeps its old slot from sending.
        posts.c.imported_at.is_(None),
        or_(
            posts.c.lease_owner.is_(None),
            posts.c.lease_expires_at < bindparam("b_stale_before"),
            # This very claim, asking again after its answer was lost (core.runtime.lease).
            posts.c.lease_owner == bindparam("b_worker"),
        ),
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
CLAIMED_COLUMNS = (
    posts.c.fence,
    posts.c.status,
    posts.c.scheduled_at,
    posts.c.revision,
    posts.c.account_id,
    posts.c.approval,
    posts.c.parts,
    posts.c.not_before,
)

#: The compare-and-set, with the post's columns: b_post, b_stale_before, b_worker, b_expires, b_now.
CLAIM = CAS.returning(*CLAIMED_COLUMNS)

DELIVERY_COLUMNS = (
    deliveries.c.id,
    deliveries.c.channel_id,
    deliveries.c.status,
    deliveries.c.next_attempt_at,
    deliveries.c.attempts,
    deliveries.c.budget_start,
    deliveries.c.resend_attempt,
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
    parts.c.url,
    # What admission needs besides: the post's account, and the global stop.
    accounts.c.status.label("account_status"),
    accounts.c.emergency_stop,
    select(switches.c.on).where(switches.c.name == GLOBAL_STOP).scalar_subquery().label("global_stop"),
)

#: Every delivery of the post with its channel, one row per part, in order: b_post.
#: Each row also carries the account's standing and the global stop, for admission.
DELIVERY_ROWS = (
    select(*DELIVERY_COLUMNS)
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

#: An attempt's row: b_post, b_delivery, b_idx, b_fence, b_worker, b_action, b_now.
ATTEMPT = insert(attempts).values(
    post_id=bindparam("b_post"),
    delivery_id=bindparam("b_delivery"),
    part_idx=bindparam("b_idx"),
    fence=bindparam("b_fence"),
    worker=bindparam("b_worker"),
    action=bindparam("b_action"),
    started_at=bindparam("b_now"),
)

#: The attempts a claim opened and never got to make (its answer was lost): b_post, b_worker.
UNMADE_ATTEMPTS = select(attempts.c.delivery_id, attempts.c.part_idx, attempts.c.action).where(
    attempts.c.post_id == bindparam("b_post"),
    attempts.c.worker == bindparam("b_worker"),
    attempts.c.ended_at.is_(None),
)

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

#: A part back to ``unsent`` as if this attempt had never begun: only the pre-publish check
#: ran, and a part no attempt has sent is checked again on its next one: b_delivery, b_idx.
PART_UNTRIED = (
    update(parts)
    .where(parts.c.delivery_id == bindparam("b_delivery"), parts.c.idx == bindparam("b_idx"))
    .values(state=PartState.UNSENT, attempt_started_at=None)
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

#: The claim's open attempt of a delivery taken back, as no call was made (a part that
#: waits for its turn under the channel's rate): b_delivery, b_fence.
DROP_ATTEMPT = delete(attempts).where(
    attempts.c.delivery_id == bindparam("b_delivery"),
    attempts.c.fence == bindparam("b_fence"),
    attempts.c.ended_at.is_(None),
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

#: A publication row's columns: b_post, b_channel, b_slot, b_revision, b_first_platform_id,
#: b_first_url (the thread's first part: what people open), b_now. Each dialect inserts it
#: with ``ON CONFLICT DO NOTHING`` (§4).
PUBLICATION_COLUMNS = {
    "post_id": bindparam("b_post", type_=publications.c.post_id.type),
    "channel_id": bindparam("b_channel", type_=publications.c.channel_id.type),
    "slot": bindparam("b_slot", type_=publications.c.slot.type),
    "revision": bindparam("b_revision", type_=publications.c.revision.type),
    "platform_id": func.coalesce(bindparam("b_first_platform_id", type_=publications.c.platform_id.type), ""),
    "url": func.coalesce(bindparam("b_first_url", type_=publications.c.url.type), ""),
    "created_at": bindparam("b_now", type_=publications.c.created_at.type),
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
    select(deliveries.c.status, func.count(parts.c.id).label("published"))
    .outerjoin(parts, (parts.c.delivery_id == deliveries.c.id) & (parts.c.state == PartState.PUBLISHED))
    .where(deliveries.c.post_id == bindparam("b_post"))
    .group_by(deliveries.c.id, deliveries.c.status)
)

#: The post's summary, as the claim stores it: b_post, b_status, b_now.
POST_STATUS = (
    update(posts)
    .where(posts.c.id == bindparam("b_post"))
    .values(status=bindparam("b_status"), updated_at=bindparam("b_now"))
)


def _a_delivery(*where: ColumnElement[bool]) -> Exists:
    """Whether the post being updated has a delivery matching ``where``."""
    return exists().where(deliveries.c.post_id == posts.c.id, *where)


def _status_in(statuses: Iterable[DeliveryStatus]) -> ColumnElement[bool]:
    return or_(*(deliveries.c.status == s for s in sorted(statuses)))  # no expanding IN: see pipeline


def _post_status(status: PostStatus) -> ColumnElement[PostStatus]:
    return literal(status, posts.c.status.type)


_A_PART_PUBLISHED = exists().where(
    parts.c.delivery_id == deliveries.c.id, deliveries.c.post_id == posts.c.id, parts.c.state == PartState.PUBLISHED
)
_SENDING = _a_delivery(deliveries.c.status == DeliveryStatus.SENDING)

#: ``core.domain.states.summarize`` of a claimed post's deliveries, rule for rule, in SQL;
#: tests/integration/test_ledger_contract.py holds the two to the same answers.
SUMMARY = case(
    (_a_delivery(_status_in(ACTIVE_DELIVERY)), _post_status(PostStatus.PUBLISHING)),
    (_a_delivery(deliveries.c.status == DeliveryStatus.HELD), _post_status(PostStatus.HELD)),
    (
        _a_delivery() & ~_a_delivery(deliveries.c.status != DeliveryStatus.PUBLISHED),
        _post_status(PostStatus.PUBLISHED),
    ),
    (
        _a_delivery(deliveries.c.status == DeliveryStatus.PUBLISHED) | _A_PART_PUBLISHED,
        _post_status(PostStatus.PARTIALLY_PUBLISHED),
    ),
    (~_a_delivery(deliveries.c.status != DeliveryStatus.CANCELLED), _post_status(PostStatus.CANCELLED)),
    else_=_post_status(PostStatus.FAILED),
)

#: The post's summary decided and stored by the database in one statement, from the
#: deliveries as they are when it runs, and the lease given back once none is sending;
#: returns the status: b_post, b_now.
STORE_SUMMARY = (
    update(posts)
    .where(posts.c.id == bindparam("b_post"))
    .values(
        status=SUMMARY,
        updated_at=bindparam("b_now"),
        lease_owner=case((_SENDING, posts.c.lease_owner), else_=null()),
        lease_expires_at=case((_SENDING, posts.c.lease_expires_at), else_=null()),
    )
    .returning(posts.c.status)
)

"""Rows people create and change (API, CLI): posts with their deliveries and parts,
idempotency keys of creates, edits and drafts, rescheduling, cancelling, approval,
lifting holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from core.domain.errors import Conflict, NotFound
from core.domain.media import media_ids
from core.domain.states import DeliveryStatus, PartState, PostStatus, Reason, summarize
from core.ledger import statements as sql
from core.ledger.imports import refuse_imported
from core.ledger.moves import delivery_state, delivery_states, move
from core.store.db import insert_unless_present, inserted_ids
from core.store.models import Approval, Attempt, Delivery, DeliveryPart, IdempotencyKey, Post, PostMedia


@dataclass(frozen=True)
class NewPost:
    """A post to write (:func:`insert_posts`), its content checked and laid out as the rows
    store it (``core.services.content.place``)."""

    account_id: int
    channel_ids: list[int]
    #: The authoring copy.
    parts: list[dict[str, Any]]
    scheduled_at: datetime
    zone: str
    not_before: datetime | None
    approval: Approval
    #: Channel id → its own parts, for a channel that does not take ``parts``.
    own_parts: Mapping[int, list[dict[str, Any]]] | None = None
    channel_texts: dict[str, list[str]] | None = None
    draft: bool = False


def insert_post(
    s: Session,
    *,
    account_id: int,
    channel_ids: list[int],
    parts: list[dict[str, Any]],
    scheduled_at: datetime,
    zone: str,
    not_before: datetime | None,
    approval: Approval,
    now: datetime,
    own_parts: Mapping[int, list[dict[str, Any]]] | None = None,
    channel_texts: dict[str, list[str]] | None = None,
    draft: bool = False,
) -> Post:
    """A new scheduled post (or a draft, never armed) with one pending delivery per channel
    and its parts: the channel's ``own_parts`` where it has text of its own, else ``parts``."""
    new = NewPost(
        account_id, channel_ids, parts, scheduled_at, zone, not_before, approval, own_parts, channel_texts, draft
    )
    (post_id,) = insert_posts(s, [new], now)
    return s.get_one(Post, post_id)


def insert_posts(s: Session, new: Sequence[NewPost], now: datetime) -> list[int]:
    """:func:`insert_post` for many posts at once (``herald import``): one INSERT per table,
    not three round trips per post. Returns the posts' ids, in order."""
    post_ids = inserted_ids(
        s,
        sql.posts,
        [
            {
                "account_id": n.account_id,
                "status": PostStatus.DRAFT if n.draft else PostStatus.SCHEDULED,
                "scheduled_at": n.scheduled_at,
                "zone": n.zone,
                "parts": n.parts,
                "channel_texts": n.channel_texts,
                "not_before": n.not_before,
                "approval": n.approval,
                "created_at": now,
                "updated_at": now,
            }
            for n in new
        ],
    )
    per_delivery = [
        (post_id, channel_id, n) for post_id, n in zip(post_ids, new, strict=True) for channel_id in n.channel_ids
    ]
    delivery_ids = inserted_ids(
        s,
        sql.deliveries,
        [
            {"post_id": post_id, "channel_id": channel_id, "status": DeliveryStatus.PENDING}
            for post_id, channel_id, _ in per_delivery
        ],
    )
    part_rows = [
        {
            "delivery_id": delivery_id,
            "idx": i,
            "text": p["text"],
            "media": list(p.get("media", [])),
            "state": PartState.UNSENT,
        }
        for delivery_id, (_, channel_id, n) in zip(delivery_ids, per_delivery, strict=True)
        for i, p in enumerate((n.own_parts or {}).get(channel_id, n.parts))
    ]
    # A new post has no links yet: only the files its parts carry are added.
    links = [
        {"post_id": post_id, "media_id": media_id}
        for post_id, n in zip(post_ids, new, strict=True)
        for media_id in sorted(media_ids(n.parts))
    ]
    for table, rows in ((sql.parts, part_rows), (cast(Table, PostMedia.__table__), links)):
        if rows:
            s.execute(insert(table), rows)
    return post_ids


def _link_media(s: Session, post_id: int, parts: list[dict[str, Any]]) -> None:
    """Record which kept files the post carries (a file is removed only when no unfinished
    post does); a channel's own parts carry the post's parts' attachments, so these are all."""
    s.execute(delete(PostMedia).where(PostMedia.post_id == post_id))
    s.add_all(PostMedia(post_id=post_id, media_id=media_id) for media_id in sorted(media_ids(parts)))


def _part_rows(parts: list[dict[str, Any]], start: int = 0) -> list[DeliveryPart]:
    return [
        DeliveryPart(idx=i, text=p["text"], media=list(p.get("media", [])), state=PartState.UNSENT)
        for i, p in enumerate(parts[start:], start)
    ]


def _locked(s: Session, post_id: int) -> Post:
    post = s.get(Post, post_id, with_for_update=True)  # SQLite: its write lock, taken at BEGIN
    if post is None:
        raise NotFound(f"no post {post_id}; `herald post list` shows the posts")
    return post


def _post_for_change(s: Session, post_id: int) -> Post:
    """The post, locked, for a change people make (move, cancel, approve, schedule).

    Raises:
        NotFound: no such post.
        Conflict: the post was imported (another system published it).
    """
    post = _locked(s, post_id)
    refuse_imported(post)
    return post


def reschedule_post(s: Session, post_id: int, at: datetime, zone: str, now: datetime) -> Post:
    """Move a post that has not started publishing to a new slot."""
    post = _post_for_change(s, post_id)
    if post.status not in (PostStatus.SCHEDULED, PostStatus.HELD, PostStatus.DRAFT) or post.fence > 0:
        raise Conflict(f"post {post_id} is {post.status}: only a post that has not started publishing can be moved")
    post.scheduled_at = at
    post.zone = zone
    post.updated_at = now
    return post


#: The delivery statuses a cancel stops: nothing of them is on its way to the platform. A
#: failed one is among them: cancelling it is how a person gives up on it, so it no longer
#: waits for one (``post retry`` is the other way out).
CANCELLABLE = frozenset({DeliveryStatus.PENDING, DeliveryStatus.RETRY_WAIT, DeliveryStatus.HELD, DeliveryStatus.FAILED})


@dataclass(frozen=True)
class Cancelled:
    """What a cancel did: the post, and the deliveries it stopped."""

    post: Post
    deliveries: list[Delivery]


def cancel_post(s: Session, post_id: int, now: datetime) -> Cancelled:
    """Cancel every delivery that has not published, and the rest of a thread that has
    published some parts; what published stays.

    Raises:
        Conflict: an attempt is in doubt, or no delivery is left to stop (the post
            published, was cancelled already, or is being sent right now).
    """
    post = _post_for_change(s, post_id)
    deliveries = list(post.deliveries)
    if any(p.state is PartState.SENDING for d in deliveries for p in d.parts):
        raise Conflict(f"post {post_id} has an attempt in doubt (a part is 'sending'); resolve it before cancelling")
    stopped = [d for d in deliveries if d.status in CANCELLABLE]
    if not stopped:
        raise Conflict(_nothing_to_cancel(post))
    for d in stopped:
        move(d, DeliveryStatus.CANCELLED)
    post.status = summarize((delivery_state(d) for d in deliveries), claimed=post.fence > 0)
    post.updated_at = now
    return Cancelled(post, stopped)


def _nothing_to_cancel(post: Post) -> str:
    show = f"`herald post show {post.id}`"
    if post.status is PostStatus.CANCELLED:
        return f"post {post.id} is already cancelled: there is nothing left to cancel"
    if post.status is PostStatus.PUBLISHED:
        return (
            f"post {post.id} is already published on every channel: there is nothing left to cancel "
            "(herald does not delete published posts; remove it on the platform)"
        )
    if post.status is PostStatus.PUBLISHING:
        return f"post {post.id} is being sent right now, so nothing waits to be cancelled; {show} shows how it ends"
    return f"post {post.id} is {post.status}: no channel is waiting to be sent, so there is nothing to cancel ({show})"


def set_approval(s: Session, post_id: int, approval: Approval, now: datetime) -> Post:
    """Record a reviewer's decision on a post that waits for one.

    Raises:
        Conflict: the post needs no approval, already has this one, or was cancelled.
    """
    post = _post_for_change(s, post_id)
    if post.approval is Approval.NOT_REQUIRED:
        raise Conflict(
            f"post {post_id} needs no approval (it was created without --needs-approval): "
            f"nothing to approve; it goes out at its slot (`herald post show {post_id}`)"
        )
    if post.approval is approval:
        raise Conflict(f"post {post_id} is already {approval}: nothing to do (`herald post show {post_id}`)")
    if post.status is PostStatus.CANCELLED:
        raise Conflict(
            f"post {post_id} is cancelled: approving it would send nothing; create it again with `herald post create`"
        )
    post.approval = approval
    post.updated_at = now
    return post


def lift_holds(
    s: Session,
    reasons: frozenset[Reason],
    now: datetime,
    post_id: int | None = None,
    channel_id: int | None = None,
) -> list[int]:
    """Put deliveries held for ``reasons`` back to pending; admission asks again at the claim.

    A part left ``sending`` by the attempt that was held stays so: the next claim settles
    it by the adapter's strategy, as any attempt in doubt.

    Returns:
        The ids of the posts to arm again.
    """
    query = select(Delivery).where(Delivery.status == DeliveryStatus.HELD, Delivery.reason.in_(reasons))
    if post_id is not None:
        query = query.where(Delivery.post_id == post_id)
    if channel_id is not None:
        query = query.where(Delivery.channel_id == channel_id)
    touched: set[int] = set()
    for d in s.execute(query).scalars():
        move(d, DeliveryStatus.PENDING)
        d.reason = None
        d.detail = None
        touched.add(d.post_id)
    for pid in touched:
        post = s.get_one(Post, pid)
        post.status = summarize(delivery_states(s, pid), claimed=post.fence > 0)
        post.updated_at = now
    return sorted(touched)


def take_idempotency_key(
    s: Session, account_id: int, key: str, request: dict[str, Any], now: datetime
) -> IdempotencyKey | None:
    """Take ``key`` for a create, or return its first use.

    ``ON CONFLICT DO NOTHING`` on the unique (account, key) index: a second create with
    the key waits for the first one's transaction and, once it committed, finds its row.

    Returns:
        None when this create took the key (bind the post with :func:`bind_idempotency_key`
        in the same transaction); else the row of the create that took it first.
    """
    table = IdempotencyKey.__table__
    taken = s.execute(
        insert_unless_present(s, table)
        .values(account_id=account_id, key=key, request=request, created_at=now)
        .returning(IdempotencyKey.id)
    ).scalar()
    if taken is not None:
        return None
    return s.execute(
        select(IdempotencyKey).where(IdempotencyKey.account_id == account_id, IdempotencyKey.key == key)
    ).scalar_one()


def bind_idempotency_key(s: Session, account_id: int, key: str, post_id: int) -> None:
    """The post a create that took ``key`` made."""
    s.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.account_id == account_id, IdempotencyKey.key == key)
        .values(post_id=post_id)
    )


def record_idempotency_keys(s: Session, keys: Sequence[tuple[int, str, dict[str, Any], int]], now: datetime) -> None:
    """Keys taken by posts made at once (``herald import``): (account, key, request, post)
    each. One INSERT; the unique (account, key) index refuses a key taken meanwhile, and
    with it the whole transaction.

    Raises:
        Conflict: another create took one of the keys since it was checked.
    """
    if not keys:
        return
    rows = [
        {"account_id": account_id, "key": key, "request": request, "post_id": post_id, "created_at": now}
        for account_id, key, request, post_id in keys
    ]
    try:
        s.execute(insert(cast(Table, IdempotencyKey.__table__)), rows)
    except IntegrityError as exc:
        raise Conflict(
            "another import made some of these posts at the same moment; nothing was written: "
            "run the import again with --dry-run to see which rows herald holds now"
        ) from exc


def post_for_edit(s: Session, post_id: int) -> Post:
    """The post, locked for an edit, when an edit may change it at all.

    Raises:
        NotFound: no such post.
        Conflict: the post is cancelled, or an attempt of it is in flight or in doubt (a
            part ``sending``: the platform may have its copy, and an edit would change the
            key a resend or a read-back looks for).
    """
    # An imported post may be read for ``republish`` (a new post of its content);
    # revise_post refuses to change it.
    post = _locked(s, post_id)
    if post.status is PostStatus.CANCELLED:
        raise Conflict(f"post {post_id} is cancelled and cannot be edited; create a new post with `herald post create`")
    for d in post.deliveries:
        name = d.channel.name
        if d.status is DeliveryStatus.SENDING:
            raise Conflict(
                f"post {post_id} is being sent to {name} right now; wait for the attempt to end "
                f"(`herald post show {post_id}`), then edit"
            )
        doubt = next((p for p in d.parts if p.state is PartState.SENDING), None)
        if doubt is not None:
            raise Conflict(
                f"post {post_id} has an attempt in doubt on {name} (part {doubt.idx + 1} is 'sending': it may be on "
                f"the platform); resolve it first: `herald post resolve {post_id} --channel {name} landed --url URL` "
                f"if it is there, else `herald post resolve {post_id} --channel {name} send-again`; then edit"
            )
    return post


@dataclass(frozen=True)
class Revision:
    """What an edit leaves a post with."""

    #: The authoring copy.
    parts: list[dict[str, Any]]
    #: The post's per-channel text, as the row stores it (channel id → texts), or None.
    channel_texts: dict[str, list[str]] | None
    #: Every channel the post goes to after the edit (by id) → the parts its delivery gets.
    deliveries: Mapping[int, list[dict[str, Any]]]
    scheduled_at: datetime
    zone: str


@dataclass(frozen=True)
class Revised:
    """What :func:`revise_post` did, by channel id."""

    revision: int
    status: PostStatus
    added: tuple[int, ...]
    #: Channels taken off whose delivery had never been tried: gone, as if never chosen.
    removed: tuple[int, ...]
    #: Channels taken off whose delivery had been tried: cancelled, its attempts kept.
    cancelled: tuple[int, ...]


def revise_post(s: Session, post: Post, revision: Revision, now: datetime) -> Revised:
    """Store a new revision of a post locked by :func:`post_for_edit`.

    The revision goes up, so every key computed from now on differs from every earlier
    one (§4, §13). A delivery's published parts are left as they are (they are what the
    platform has); the rest are written afresh, with no key. Channels taken off go away
    when their delivery was never tried (no attempt row: nothing about it ever left
    herald, and a cancelled row would make the post read "partly published" once the rest
    is out); a tried one is cancelled, so the timeline keeps its attempts. A draft stays
    a draft.

    Raises:
        Conflict: the post was imported (its record is another system's: ``republish``
            makes a new post of it instead), a channel taken off has parts on its platform,
            one added was cancelled on this post before, or a thread part-way out would
            have no part left to send.
    """
    refuse_imported(post)
    post.revision += 1
    post.parts = revision.parts
    _link_media(s, post.id, revision.parts)
    post.channel_texts = revision.channel_texts
    post.scheduled_at = revision.scheduled_at
    post.zone = revision.zone
    post.updated_at = now
    removed: list[int] = []
    cancelled: list[int] = []
    by_channel = {d.channel_id: d for d in post.deliveries}
    for channel_id, d in by_channel.items():
        landed = sum(p.state is PartState.PUBLISHED for p in d.parts)
        wanted = revision.deliveries.get(channel_id)
        if wanted is None:
            if d.status is DeliveryStatus.CANCELLED:
                continue
            if landed:
                raise Conflict(
                    f"post {post.id} has published on {d.channel.name}, so that channel cannot be taken off "
                    f"(its copy stays on the record): keep {d.channel.name} among the --channel options"
                )
            if _tried(s, d):
                move(d, DeliveryStatus.CANCELLED)
                cancelled.append(channel_id)
            else:
                s.execute(delete(DeliveryPart).where(DeliveryPart.delivery_id == d.id))
                s.execute(delete(Delivery).where(Delivery.id == d.id))
                removed.append(channel_id)
        elif d.status is DeliveryStatus.CANCELLED:
            raise Conflict(
                f"channel {d.channel.name} was cancelled on post {post.id} and cannot be added back; "
                f"make a new post with `herald post create`, or edit with --republish"
            )
        elif d.status is not DeliveryStatus.PUBLISHED:
            if len(wanted) <= landed:
                raise Conflict(
                    f"{d.channel.name} has {landed} part(s) of post {post.id} published already; the corrected "
                    f"thread must have more than {landed} part(s) for it (the rest is sent from part {landed + 1})"
                )
            s.execute(delete(DeliveryPart).where(DeliveryPart.delivery_id == d.id, DeliveryPart.idx >= landed))
            for part in _part_rows(wanted, landed):
                part.delivery_id = d.id
                s.add(part)
    added = [channel_id for channel_id in revision.deliveries if channel_id not in by_channel]
    for channel_id in added:
        delivery = Delivery(post_id=post.id, channel_id=channel_id, status=DeliveryStatus.PENDING)
        delivery.parts = _part_rows(revision.deliveries[channel_id])
        s.add(delivery)
    s.flush()
    s.expire(post, ["deliveries"])
    for d in post.deliveries:
        s.expire(d, ["parts"])
    if post.status is not PostStatus.DRAFT:
        post.status = summarize((delivery_state(d) for d in post.deliveries), claimed=post.fence > 0)
    return Revised(post.revision, post.status, tuple(added), tuple(removed), tuple(cancelled))


def _tried(s: Session, delivery: Delivery) -> bool:
    return s.execute(select(Attempt.id).where(Attempt.delivery_id == delivery.id).limit(1)).first() is not None


def schedule_draft(s: Session, post_id: int, at: datetime | None, zone: str | None, now: datetime) -> Post:
    """Turn a draft into a scheduled post: at ``at``, else at its own slot, or now if that passed.

    Raises:
        NotFound: no such post.
        Conflict: the post is not a draft.
    """
    post = _post_for_change(s, post_id)
    if post.status is not PostStatus.DRAFT:
        raise Conflict(
            f"post {post_id} is {post.status}, not a draft: only a draft (`herald post create --draft`) is "
            f"scheduled this way; a post that has not started publishing moves with `herald post reschedule`"
        )
    post.scheduled_at = at or max(post.scheduled_at, now)
    post.zone = zone or post.zone
    post.status = summarize(delivery_states(s, post_id), claimed=post.fence > 0)
    post.updated_at = now
    return post

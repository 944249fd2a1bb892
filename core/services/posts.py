"""Posts as people handle them: create, show, move, cancel, approve.

Checks happen here, at creation, not at publish time: a thread on a platform that has
no threads, a part longer than the platform allows, an empty part, or a slot in the
past is refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from core import ledger
from core.domain.errors import NotFound, UserError
from core.domain.media import MediaRef, media_ids, refs_of
from core.domain.states import ADMISSION_HOLDS, DeliveryStatus, PartState, PostStatus, Reason, UploadState
from core.domain.timing import zone as named_zone
from core.ledger import schedules
from core.ledger.authoring import bind_idempotency_key, take_idempotency_key
from core.runtime.arming import arm
from core.runtime.clock import Clock, DatabaseClock
from core.services import idempotency
from core.services.content import Content, channels_account, checked_texts, place
from core.services.media import AttachmentSpec, MediaView, attachments, get_media
from core.services.queue import next_free_slot
from core.services.slots import refuse_past
from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Account, Approval, Attempt, Delivery, DeliveryPart, MediaUpload, Post
from threads.progress import progress


@dataclass(frozen=True)
class PartView:
    """One part of a delivery: its state, its delivery key, where it landed."""

    #: 0 for the first part of a thread.
    index: int
    #: This channel's text for the part where it differs from the post's (a per-channel
    #: text); None where the channel sends the post's own text.
    text: str | None
    state: PartState
    key: str | None
    platform_id: str | None
    url: str | None
    published_at: datetime | None


@dataclass(frozen=True)
class AttachmentView:
    """One attachment of a part: the kept file and the part's alt text."""

    media_id: int
    filename: str
    mime: str
    #: The part's own alt text, else the file's kept one; None when it has none.
    alt: str | None


@dataclass(frozen=True)
class UploadView:
    """An attachment as a channel's platform has it: uploaded, and processed or not."""

    #: 0 for the first part; ``position`` 0 for its first attachment.
    part: int
    position: int
    filename: str
    platform_id: str
    state: UploadState


@dataclass(frozen=True)
class DeliveryView:
    """A post on one channel: its status, why it waits or failed and what fixes it."""

    channel: str
    platform: str
    status: DeliveryStatus
    reason: Reason | None
    #: The reason's explanation and the action that fixes it, verbatim.
    explanation: str | None
    action: str | None
    detail: str | None
    #: When the next try is due (a retry, or an embargo's end), while it waits for one.
    next_attempt_at: datetime | None
    #: How many attempts were made.
    attempts: int
    #: Published parts out of all parts, e.g. ``2/5``.
    progress: str
    #: The first part's, which is the post's for a one-part post.
    platform_id: str | None
    url: str | None
    parts: tuple[PartView, ...]
    #: The attachments uploaded to this channel's platform, by part and position.
    uploads: tuple[UploadView, ...] = ()


@dataclass(frozen=True)
class AttemptView:
    """One entry of the attempts log: a worker's call for one part, under one fence."""

    #: The delivery's id.
    delivery: int
    part: int
    fence: int
    worker: str
    action: str
    started_at: datetime
    #: None while the call is in flight (or its worker died in it).
    outcome: str | None
    error: str | None


@dataclass(frozen=True)
class PostView:
    """A post as `herald post show` shows it; instants in the post's zone."""

    id: int
    status: PostStatus
    account: str
    scheduled_at: datetime
    zone: str
    revision: int
    not_before: datetime | None
    approval: Approval
    #: The text of every part, in order: the post's own copy (a channel may differ, see
    #: ``PartView.text``).
    texts: tuple[str, ...]
    deliveries: tuple[DeliveryView, ...]
    attempts: tuple[AttemptView, ...]
    #: The attachments of every part, in order (the post's own copy, which every channel's
    #: part of the same index carries).
    media: tuple[tuple[AttachmentView, ...], ...] = ()
    #: Channel name → the text of each of its own parts, for the channels that do not take
    #: ``texts`` (what an edit's ``channel_texts`` replaces).
    channel_texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: When ``herald import`` recorded it, for a post another system published (its slot is
    #: when it published there); herald never sends it. None for herald's own posts.
    imported_at: datetime | None = None


@dataclass(frozen=True)
class CancelView:
    """What `herald post cancel` did, channel by channel."""

    post: int
    #: The post's status after the cancel.
    status: PostStatus
    #: Channels whose delivery this cancel stopped (a thread's unsent parts with it).
    cancelled: tuple[str, ...]
    #: Parts of those channels' threads that had published already: they stay.
    kept_parts: int
    #: Channels that had published every part: their posts stay on the platform.
    published: tuple[str, ...]
    #: Channels that had been cancelled before.
    ended: tuple[str, ...]


def _now(clock: Clock | None = None) -> datetime:
    return (clock or DatabaseClock(db.engine())).now()


@dataclass(frozen=True)
class Created:
    """What a create did."""

    post_id: int
    #: True when an idempotency key named a post made earlier with the same content:
    #: that post's id is the answer, and nothing new was made.
    existed: bool


def create_post(
    *,
    channels: list[str],
    parts: list[str],
    at: datetime | None = None,
    zone: str | None = None,
    not_before: datetime | None = None,
    needs_approval: bool = False,
    channel_texts: Mapping[str, Sequence[str]] | None = None,
    draft: bool = False,
    idempotency_key: str | None = None,
    media: Sequence[AttachmentSpec] = (),
    clock: Clock | None = None,
    queue: bool = False,
) -> int:
    """Create a post on ``channels`` and arm it. Returns its id (see :func:`submit_post`)."""
    return submit_post(
        channels=channels,
        parts=parts,
        at=at,
        zone=zone,
        not_before=not_before,
        needs_approval=needs_approval,
        channel_texts=channel_texts,
        draft=draft,
        idempotency_key=idempotency_key,
        media=media,
        clock=clock,
        queue=queue,
    ).post_id


def submit_post(
    *,
    channels: list[str],
    parts: list[str],
    at: datetime | None = None,
    zone: str | None = None,
    not_before: datetime | None = None,
    needs_approval: bool = False,
    channel_texts: Mapping[str, Sequence[str]] | None = None,
    draft: bool = False,
    idempotency_key: str | None = None,
    media: Sequence[AttachmentSpec] = (),
    clock: Clock | None = None,
    queue: bool = False,
    asked: Mapping[str, Any] | None = None,
    release_schedule: int | None = None,
) -> Created:
    """Create a post on ``channels`` and arm it (a draft is never armed).

    Args:
        channels: channel names, at least one.
        parts: the text of each part; more than one makes a thread.
        at: the slot; None publishes now. One further in the past than
            ``HERALD_PAST_SLOT_TOLERANCE`` is refused.
        zone: the IANA zone to show the slot in: UTC when None, or with ``queue`` the
            zone of the first channel's posting slots.
        not_before: an embargo the platform must not see the post before.
        needs_approval: hold the post until someone approves it.
        channel_texts: channel name → the text of each of its own parts, for a channel that
            does not take ``parts`` (a one-part version of a thread, a shorter text).
        draft: make a draft: never armed until `herald post schedule`.
        idempotency_key: the same key with the same content answers with the post made
            the first time; scoped to the channels' account.
        media: files to attach, each to a part, in order; each is kept and probed
            (``core.services.media``) and checked against every channel's limits.
        clock: where now comes from; the database's by default.
        asked: what a repeat with ``idempotency_key`` is compared by, instead of the
            content resolved from it: the API's request body, so a repeated "in an hour"
            is the same request, not a slot a moment later.
        queue: take the next posting slot that is free on every channel
            (``core.services.queue``); not with ``at`` or ``draft``.
        release_schedule: a recurring schedule's id: the post is made a draft at the end of
            its queue, in the same transaction, and released for one of its slots
            (``reconciler.releases``). It must go to the schedule's channel only.

    Raises:
        UserError: no channels or parts, an empty part, per-channel text for a channel not
            named, content a channel's platform refuses, an attachment that is not an image
            or a video (or damaged, or missing), or a slot in the past; ``queue`` with ``at``
            or ``draft``, or no free posting slot common to the channels; other channels
            than the ``release_schedule``'s.
        NotFound: an unknown channel, or no such ``release_schedule``.
        IdempotencyMismatch: the idempotency key was used for other content.
    """
    if queue and (at is not None or draft or release_schedule is not None):
        raise UserError(
            "--queue gives the post its channels' next free posting slot: give it without --at, --in and --draft"
        )
    if zone is not None:
        named_zone(zone)
    content = checked_content(channels=channels, parts=parts, channel_texts=channel_texts, media=media)
    key = idempotency.checked_key(idempotency_key) if idempotency_key is not None else None
    draft = draft or release_schedule is not None
    with db.transaction() as s:
        now = _now(clock)
        placed = place(s, content)
        if key is not None:
            request = (
                dict(asked)
                if asked is not None
                else idempotency.request_of(
                    content,
                    at=at,
                    zone=zone if queue else zone or "UTC",
                    not_before=not_before,
                    needs_approval=needs_approval,
                    draft=draft,
                    queue=queue,
                )
            )
            first = take_idempotency_key(s, placed.account_id, key, request, now)
            if first is not None:
                # A repeat answers with the first post even once its slot has passed.
                return Created(idempotency.replayed(first, request), existed=True)
        if queue:
            picked = next_free_slot(s, placed.channel_ids, now)
            at, zone = picked.at, zone or picked.zone
        elif at is not None:
            refuse_past(at, now, zone or "UTC")
        post = ledger.insert_post(
            s,
            account_id=placed.account_id,
            channel_ids=placed.channel_ids,
            parts=placed.parts,
            scheduled_at=at or now,
            zone=zone or "UTC",
            not_before=not_before,
            approval=Approval.PENDING if needs_approval else Approval.NOT_REQUIRED,
            now=now,
            own_parts=placed.deliveries,
            channel_texts=placed.channel_texts,
            draft=draft,
        )
        if key is not None:
            bind_idempotency_key(s, placed.account_id, key, post.id)
        if release_schedule is not None:
            schedules.enqueue(s, release_schedule, post.id, placed.channel_ids, now)
        post_id = post.id
    if not draft:
        arm(post_id)
    return Created(post_id, existed=False)


def checked_content(
    *,
    channels: Sequence[str],
    parts: Sequence[str],
    channel_texts: Mapping[str, Sequence[str]] | None = None,
    media: Sequence[AttachmentSpec] = (),
) -> Content:
    """What a create asks for, checked as far as it can be before its transaction: then
    :func:`~core.services.content.place` checks it against its channels and
    :func:`~core.services.slots.refuse_past` its slot (``submit_post``, ``herald import``).

    Raises:
        UserError: no channels or parts, an empty part, or an attachment ``add_media`` refuses.
    """
    if not channels:
        raise UserError("give at least one channel (--channel NAME); `herald channel list` shows them")
    texts = checked_texts(parts)
    named = tuple(dict.fromkeys(channels))
    kept = None
    if media:
        # The files are kept for the channels' account, before the post's transaction: one
        # refused later stays kept, unused.
        with db.reading() as s:
            account_id = channels_account(s, named)
        kept = attachments(media, len(texts), account_id)
    return Content(
        channels=named,
        parts=texts,
        channel_texts={name: checked_texts(own, f"the text for {name}") for name, own in (channel_texts or {}).items()},
        media=kept,
    )


def reschedule_post(post_id: int, at: datetime | None, zone: str = "UTC", *, clock: Clock | None = None) -> None:
    """Move a post to a new slot (None: now); its job moves with it.

    Raises:
        UserError: the slot is in the past (beyond the tolerance), or the post has started
            publishing or was imported (another system published it).
    """
    with db.transaction() as s:
        now = _now(clock)
        if at is not None:
            refuse_past(at, now, zone)
        ledger.reschedule_post(s, post_id, now if at is None else at, zone, now)
    arm(post_id)


def cancel_post(post_id: int) -> CancelView:
    """Cancel what has not been published – on a partly published post, the rest; the
    job, if any, is removed.

    Raises:
        Conflict: nothing waits to be sent (published, failed, cancelled already, being
            sent), or an attempt is in doubt.
    """
    with db.transaction() as s:
        done = ledger.cancel_post(s, post_id, _now())
        stopped = {d.id for d in done.deliveries}
        deliveries = list(done.post.deliveries)
        view = CancelView(
            post=post_id,
            status=done.post.status,
            cancelled=tuple(d.channel.name for d in deliveries if d.id in stopped),
            kept_parts=sum(p.state is PartState.PUBLISHED for d in done.deliveries for p in d.parts),
            published=tuple(d.channel.name for d in deliveries if d.status is DeliveryStatus.PUBLISHED),
            ended=tuple(
                d.channel.name
                for d in deliveries
                if d.id not in stopped and d.status in (DeliveryStatus.FAILED, DeliveryStatus.CANCELLED)
            ),
        )
    arm(post_id)
    return view


def approve_post(post_id: int) -> None:
    """Approve a post held for approval; it goes out at its slot, or now if that passed.

    Raises:
        Conflict: the post needs no approval, is approved already, or was cancelled.
    """
    with db.transaction() as s:
        ledger.set_approval(s, post_id, Approval.APPROVED, _now())
        ledger.lift_holds(s, frozenset(ADMISSION_HOLDS), _now(), post_id=post_id)
    arm(post_id)


def lift_admission_holds() -> list[int]:
    """Re-admit every delivery held by admission (after a stop is lifted, a bill paid...)."""
    with db.transaction() as s:
        post_ids = ledger.lift_holds(s, frozenset(ADMISSION_HOLDS), _now())
    for post_id in post_ids:
        arm(post_id)
    return post_ids


def show_post(post_id: int) -> PostView:
    """Everything `herald post show` prints: status, deliveries with their progress and
    each part's state and platform id, attempts; instants in the post's zone.

    Raises:
        NotFound: no such post.
    """
    with db.reading() as s:
        post = s.get(Post, post_id)
        if post is None:
            raise NotFound(f"no post {post_id}; `herald post list` shows the posts")
        attempts = s.execute(select(Attempt).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars().all()
        account = s.get_one(Account, post.account_id)
        tz = post.zone
        texts = post_texts(post)
        kept = get_media(s, list(media_ids(post.parts)))
        uploads: dict[int, list[MediaUpload]] = {}
        for u in s.execute(
            select(MediaUpload)
            .where(MediaUpload.delivery_id.in_([d.id for d in post.deliveries]))
            .order_by(MediaUpload.part_idx, MediaUpload.position)
        ).scalars():
            uploads.setdefault(u.delivery_id, []).append(u)
        names = {d.channel_id: d.channel.name for d in post.deliveries}
        return PostView(
            id=post.id,
            status=post.status,
            account=account.name,
            scheduled_at=shown_in(post.scheduled_at, tz),
            zone=tz,
            revision=post.revision,
            not_before=maybe_shown_in(post.not_before, tz),
            approval=post.approval,
            imported_at=maybe_shown_in(post.imported_at, tz),
            texts=texts,
            deliveries=tuple(_delivery_view(d, tz, texts, uploads.get(d.id, []), kept) for d in post.deliveries),
            media=tuple(
                tuple(
                    AttachmentView(
                        r.media_id, kept[r.media_id].filename, kept[r.media_id].mime, r.alt or kept[r.media_id].alt
                    )
                    for r in refs_of(part)
                    if r.media_id in kept
                )
                for part in post.parts
            ),
            channel_texts={
                names[int(cid)]: tuple(own) for cid, own in (post.channel_texts or {}).items() if int(cid) in names
            },
            attempts=tuple(
                AttemptView(
                    delivery=a.delivery_id,
                    part=a.part_idx,
                    fence=a.fence,
                    worker=a.worker,
                    action=a.action,
                    started_at=shown_in(a.started_at, tz),
                    outcome=a.outcome,
                    error=a.error,
                )
                for a in attempts
            ),
        )


def _attachment(ref: MediaRef, kept: MediaView) -> AttachmentView:
    return AttachmentView(ref.media_id, kept.filename, kept.mime, ref.alt if ref.alt is not None else kept.alt)


def post_texts(post: Post) -> tuple[str, ...]:
    """The text of each of the post's parts (its authoring copy)."""
    return tuple(str(p.get("text", "")) for p in post.parts)


def part_view(part: DeliveryPart, tz: str, texts: tuple[str, ...]) -> PartView:
    """One part of a delivery as `post show` and `timeline` show it; ``texts`` are the
    post's own (:func:`post_texts`), so the part's text is shown only where it differs."""
    authored = texts[part.idx] if part.idx < len(texts) else None
    return PartView(
        index=part.idx,
        text=None if part.text == authored else part.text,
        state=part.state,
        key=part.key,
        platform_id=part.platform_id,
        url=part.url,
        published_at=maybe_shown_in(part.published_at, tz),
    )


def _delivery_view(
    d: Delivery,
    tz: str,
    texts: tuple[str, ...],
    uploads: Sequence[MediaUpload] = (),
    kept: Mapping[int, MediaView] | None = None,
) -> DeliveryView:
    kept = kept or {}
    # A retry's or an embargo's time only means something while the delivery waits for it.
    waiting = d.status in (DeliveryStatus.RETRY_WAIT, DeliveryStatus.PENDING)
    return DeliveryView(
        channel=d.channel.name,
        platform=d.channel.platform,
        status=d.status,
        reason=d.reason,
        explanation=d.reason.explanation if d.reason else None,
        action=d.reason.action if d.reason else None,
        detail=d.detail,
        next_attempt_at=maybe_shown_in(d.next_attempt_at, tz) if waiting else None,
        attempts=d.attempts,
        # How far a thread got (§10): "2/5" while parts remain, whatever the status.
        progress=str(progress(p.state for p in d.parts)),
        platform_id=d.parts[0].platform_id if d.parts else None,
        url=d.parts[0].url if d.parts else None,
        parts=tuple(part_view(p, tz, texts) for p in d.parts),
        uploads=tuple(
            UploadView(
                u.part_idx,
                u.position,
                kept[u.media_id].filename if kept and u.media_id in kept else f"media {u.media_id}",
                u.platform_id,
                u.state,
            )
            for u in uploads
        ),
    )

"""Posts as people handle them: create, show, move, cancel, approve.

Checks happen here, at creation, not at publish time: a thread on a platform that has
no threads, or a part longer than the platform allows, is refused with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from core import ledger
from core.domain.errors import NotFound, UserError
from core.domain.states import ADMISSION_HOLDS, DeliveryStatus, PartState, PostStatus, Reason
from core.plugins import manager as plugins
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock
from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Account, Approval, Attempt, Channel, Delivery, DeliveryPart, Post
from threads.progress import progress


@dataclass(frozen=True)
class PartView:
    """One part of a delivery: its state, its delivery key, where it landed."""

    #: 0 for the first part of a thread.
    index: int
    state: PartState
    key: str | None
    platform_id: str | None
    url: str | None
    published_at: datetime | None


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
    deliveries: tuple[DeliveryView, ...]
    attempts: tuple[AttemptView, ...]


def _now() -> datetime:
    return DatabaseClock(db.engine()).now()


def create_post(
    *,
    channels: list[str],
    parts: list[str],
    at: datetime | None = None,
    zone: str = "UTC",
    not_before: datetime | None = None,
    needs_approval: bool = False,
) -> int:
    """Create a post on ``channels`` and arm it. Returns its id.

    Args:
        channels: channel names, at least one.
        parts: the text of each part; more than one makes a thread.
        at: the slot; None publishes now.
        zone: the IANA zone to show the slot in.
        not_before: an embargo the platform must not see the post before.
        needs_approval: hold the post until someone approves it.

    Raises:
        UserError: no channels or parts, an unknown channel, or content the platform refuses.
    """
    if not channels:
        raise UserError("give at least one channel (--channel NAME); `herald channel list` shows them")
    texts = [p for p in parts if p.strip()]
    if not texts:
        raise UserError("the post has no text: give --text or --part")
    with db.transaction() as s:
        now = _now()
        live = select(Channel).where(Channel.name.in_(channels), Channel.removed_at.is_(None))
        found = {c.name: c for c in s.execute(live).scalars()}
        missing = [n for n in channels if n not in found]
        if missing:
            raise NotFound(f"no channel named {', '.join(missing)}; add it with `herald channel add`")
        for name in channels:
            _check_fits(found[name], texts)
        accounts = {c.account_id for c in found.values()}
        if len(accounts) != 1:
            raise UserError("all channels of one post must belong to the same account")
        post = ledger.insert_post(
            s,
            account_id=accounts.pop(),
            channel_ids=[found[n].id for n in dict.fromkeys(channels)],
            parts=[{"text": t, "media": []} for t in texts],
            scheduled_at=at or now,
            zone=zone,
            not_before=not_before,
            approval=Approval.PENDING if needs_approval else Approval.NOT_REQUIRED,
            now=now,
        )
        post_id = post.id
    arm(post_id)
    return post_id


def _check_fits(channel: Channel, texts: list[str]) -> None:
    limits = plugins.adapter(channel.platform).limits
    if len(texts) > 1 and not limits.threads:
        raise UserError(f"channel {channel.name} ({channel.platform}) does not support threads: give one part")
    for i, text in enumerate(texts, 1):
        if len(text) > limits.max_chars:
            raise UserError(
                f"part {i} has {len(text)} characters; {channel.platform} allows {limits.max_chars}. Shorten it."
            )


def reschedule_post(post_id: int, at: datetime, zone: str = "UTC") -> None:
    """Move a post to a new slot; its job moves with it."""
    with db.transaction() as s:
        ledger.reschedule_post(s, post_id, at, zone, _now())
    arm(post_id)


def cancel_post(post_id: int) -> None:
    """Cancel what has not been published; the job, if any, is removed."""
    with db.transaction() as s:
        ledger.cancel_post(s, post_id, _now())
    arm(post_id)


def approve_post(post_id: int) -> None:
    """Approve a post held for approval; it goes out at its slot, or now if that passed."""
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
        return PostView(
            id=post.id,
            status=post.status,
            account=account.name,
            scheduled_at=shown_in(post.scheduled_at, tz),
            zone=tz,
            revision=post.revision,
            not_before=maybe_shown_in(post.not_before, tz),
            approval=post.approval,
            deliveries=tuple(_delivery_view(d, tz) for d in post.deliveries),
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


def part_view(part: DeliveryPart, tz: str) -> PartView:
    """One part of a delivery as `post show` and `timeline` show it."""
    return PartView(
        index=part.idx,
        state=part.state,
        key=part.key,
        platform_id=part.platform_id,
        url=part.url,
        published_at=maybe_shown_in(part.published_at, tz),
    )


def _delivery_view(d: Delivery, tz: str) -> DeliveryView:
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
        parts=tuple(part_view(p, tz) for p in d.parts),
    )

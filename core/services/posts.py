"""Posts as people handle them: create, show, move, cancel, approve.

Checks happen here, at creation, not at publish time: a thread on a platform that has
no threads, or a part longer than the platform allows, is refused with a clear error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from core import ledger
from core.domain.errors import NotFound, UserError
from core.domain.states import ADMISSION_HOLDS, DeliveryStatus
from core.domain.timing import show
from core.plugins import manager as plugins
from core.runtime.arming import arm
from core.runtime.clock import DatabaseClock
from core.store import db
from core.store.models import Account, Approval, Attempt, Channel, Post
from threads.progress import progress


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
        found = {c.name: c for c in s.execute(select(Channel).where(Channel.name.in_(channels))).scalars()}
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


def describe_post(post_id: int) -> dict[str, Any]:
    """Everything `herald post show` prints: status, deliveries with their progress and
    each part's state and platform id, attempts."""
    with db.reading() as s:
        post = s.get(Post, post_id)
        if post is None:
            raise NotFound(f"no post {post_id}; `herald post list` shows the posts")
        attempts = s.execute(select(Attempt).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars().all()
        account = s.get_one(Account, post.account_id)
        return {
            "id": post.id,
            "status": str(post.status),
            "account": account.name,
            "scheduled_at": show(post.scheduled_at, post.zone),
            "zone": post.zone,
            "revision": post.revision,
            "not_before": show(post.not_before, post.zone) if post.not_before else None,
            "approval": str(post.approval),
            "deliveries": [
                {
                    "channel": d.channel.name,
                    "platform": d.channel.platform,
                    "status": str(d.status),
                    "reason": str(d.reason) if d.reason else None,
                    "explanation": d.reason.explanation if d.reason else None,
                    "action": d.reason.action if d.reason else None,
                    "detail": d.detail,
                    "next_attempt_at": show(d.next_attempt_at, post.zone)
                    if d.next_attempt_at and d.status in (DeliveryStatus.RETRY_WAIT, DeliveryStatus.PENDING)
                    else None,
                    "attempts": d.attempts,
                    # How far a thread got (§10): "2/5" while parts remain, whatever the status.
                    "progress": str(progress(p.state for p in d.parts)),
                    "platform_id": d.parts[0].platform_id if d.parts else None,
                    "url": d.parts[0].url if d.parts else None,
                    "parts": [
                        {
                            "index": p.idx,
                            "state": str(p.state),
                            "key": p.key,
                            "platform_id": p.platform_id,
                            "url": p.url,
                            "published_at": show(p.published_at, post.zone) if p.published_at else None,
                        }
                        for p in d.parts
                    ],
                }
                for d in post.deliveries
            ],
            "attempts": [
                {
                    "delivery": a.delivery_id,
                    "part": a.part_idx,
                    "fence": a.fence,
                    "worker": a.worker,
                    "action": a.action,
                    "started_at": show(a.started_at, post.zone),
                    "outcome": a.outcome,
                    "error": a.error,
                }
                for a in attempts
            ],
        }

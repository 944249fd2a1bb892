"""A post's timeline (§14): per delivery, the four instants and the gaps between them,
the attempts log, and what people did to it (§18: retries, reconnects, resolutions).

slot → claimed is the queue's and the workers' lateness, claimed → confirmed the
platform's, confirmed → first seen the platform's read-after-write delay.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from core.domain.errors import NotFound
from core.domain.states import DeliveryStatus, PostStatus
from core.services.posts import PartView, part_view, post_texts
from core.services.views import maybe_shown_in, shown_in
from core.store import db
from core.store.models import Attempt, Post, SupportAction


@dataclass(frozen=True)
class TimelineAttempt:
    """One call in the attempts log, with when it started and ended."""

    part: int
    fence: int
    worker: str
    action: str
    started: datetime
    ended: datetime | None
    outcome: str | None
    error: str | None


@dataclass(frozen=True)
class TimelineAction:
    """What a person did to the delivery (§18): retry, reconnect, landed, send_again, adopt."""

    action: str
    #: The part it concerned (a resolve), None for the whole delivery.
    part: int | None
    at: datetime
    detail: str


@dataclass(frozen=True)
class DeliveryTimeline:
    """One channel's four instants (None until they happen) and the seconds between them."""

    channel: str
    status: DeliveryStatus
    slot: datetime
    claimed: datetime | None
    confirmed: datetime | None
    first_seen: datetime | None
    slot_to_claimed: float | None
    claimed_to_confirmed: float | None
    confirmed_to_first_seen: float | None
    parts: tuple[PartView, ...]
    attempts: tuple[TimelineAttempt, ...]
    #: People's actions on it, oldest first.
    actions: tuple[TimelineAction, ...] = ()


@dataclass(frozen=True)
class Timeline:
    """`herald timeline POST`: instants in the post's zone."""

    post: int
    status: PostStatus
    zone: str
    deliveries: tuple[DeliveryTimeline, ...]


def _gap(a: datetime | None, b: datetime | None) -> float | None:
    return None if a is None or b is None else round((b - a).total_seconds(), 3)


def timeline(post_id: int) -> Timeline:
    """The timeline of one post.

    Raises:
        NotFound: no such post.
    """
    with db.reading() as s:
        post = s.get(Post, post_id)
        if post is None:
            raise NotFound(f"no post {post_id}")
        attempts = s.execute(select(Attempt).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars().all()
        actions = (
            s.execute(select(SupportAction).where(SupportAction.post_id == post_id).order_by(SupportAction.id))
            .scalars()
            .all()
        )
        tz = post.zone
        return Timeline(
            post=post.id,
            status=post.status,
            zone=tz,
            deliveries=tuple(
                DeliveryTimeline(
                    channel=d.channel.name,
                    status=d.status,
                    slot=shown_in(post.scheduled_at, tz),
                    claimed=maybe_shown_in(d.claimed_at, tz),
                    confirmed=maybe_shown_in(d.confirmed_at, tz),
                    first_seen=maybe_shown_in(d.first_seen_at, tz),
                    slot_to_claimed=_gap(post.scheduled_at, d.claimed_at),
                    claimed_to_confirmed=_gap(d.claimed_at, d.confirmed_at),
                    confirmed_to_first_seen=_gap(d.confirmed_at, d.first_seen_at),
                    parts=tuple(part_view(p, tz, post_texts(post)) for p in d.parts),
                    attempts=tuple(
                        TimelineAttempt(
                            part=a.part_idx,
                            fence=a.fence,
                            worker=a.worker,
                            action=a.action,
                            started=shown_in(a.started_at, tz),
                            ended=maybe_shown_in(a.ended_at, tz),
                            outcome=a.outcome,
                            error=a.error,
                        )
                        for a in attempts
                        if a.delivery_id == d.id
                    ),
                    actions=tuple(
                        TimelineAction(action=a.action, part=a.part_idx, at=shown_in(a.at, tz), detail=a.detail)
                        for a in actions
                        if a.delivery_id == d.id
                    ),
                )
                for d in post.deliveries
            ),
        )

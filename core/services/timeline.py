"""A post's timeline (§14): per delivery, the four instants and the gaps between them.

slot → claimed is the queue's and the workers' lateness, claimed → confirmed the
platform's, confirmed → first seen the platform's read-after-write delay.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from core.domain.errors import NotFound
from core.domain.timing import show
from core.store import db
from core.store.models import Attempt, Post


def _gap(a: datetime | None, b: datetime | None) -> float | None:
    return None if a is None or b is None else round((b - a).total_seconds(), 3)


def timeline(post_id: int) -> dict[str, Any]:
    with db.reading() as s:
        post = s.get(Post, post_id)
        if post is None:
            raise NotFound(f"no post {post_id}")
        attempts = s.execute(select(Attempt).where(Attempt.post_id == post_id).order_by(Attempt.id)).scalars().all()
        zone = post.zone

        def stamp(instant: datetime | None) -> str | None:
            return show(instant, zone) if instant else None

        deliveries = []
        for d in post.deliveries:
            deliveries.append(
                {
                    "channel": d.channel.name,
                    "status": str(d.status),
                    "slot": stamp(post.scheduled_at),
                    "claimed": stamp(d.claimed_at),
                    "confirmed": stamp(d.confirmed_at),
                    "first_seen": stamp(d.first_seen_at),
                    "slot_to_claimed": _gap(post.scheduled_at, d.claimed_at),
                    "claimed_to_confirmed": _gap(d.claimed_at, d.confirmed_at),
                    "confirmed_to_first_seen": _gap(d.confirmed_at, d.first_seen_at),
                    "parts": [
                        {"index": p.idx, "state": str(p.state), "platform_id": p.platform_id, "url": p.url}
                        for p in d.parts
                    ],
                    "attempts": [
                        {
                            "part": a.part_idx,
                            "fence": a.fence,
                            "worker": a.worker,
                            "action": a.action,
                            "started": stamp(a.started_at),
                            "ended": stamp(a.ended_at),
                            "outcome": a.outcome,
                            "error": a.error,
                        }
                        for a in attempts
                        if a.delivery_id == d.id
                    ],
                }
            )
        return {"post": post.id, "status": str(post.status), "zone": zone, "deliveries": deliveries}

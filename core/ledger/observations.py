"""What herald learns about a delivery after the fact, without a claim: the first time a
read-back saw it on the platform (§14's fourth instant)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update

from core.store import db
from core.store.models import Delivery


def mark_first_seen(delivery_id: int, now: datetime) -> None:
    """Record that a read-back found the delivery's post; the first sighting is kept."""
    with db.transaction() as s:
        s.execute(
            update(Delivery)
            .where(Delivery.id == delivery_id, Delivery.first_seen_at.is_(None))
            .values(first_seen_at=now)
        )

"""What herald hands to plugins: plain data, no database rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AlarmEvent:
    """An alarm raised or resolved, as a person should read it."""

    id: int
    #: ``missed_slot``, ``duplicate`` or ``empty_queue``.
    kind: str
    #: ``open`` when raised, ``resolved`` when its condition cleared.
    state: str
    #: The post it is about; None for a recurring schedule's alarm (``empty_queue``).
    post_id: int | None
    channel: str
    slot: datetime
    detail: str
    opened_at: datetime
    resolved_at: datetime | None = None
    #: The recurring schedule it is about (``empty_queue``), else None.
    schedule_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("slot", "opened_at", "resolved_at"):
            if data[name] is not None:
                data[name] = data[name].isoformat()
        return data

    def summary(self) -> str:
        if self.kind == "empty_queue":
            subject, what = f"schedule {self.schedule_id}", "had nothing queued"
        else:
            subject = f"post {self.post_id}"
            what = "missed its slot" if self.kind == "missed_slot" else "has more than one copy"
        if self.state == "resolved":
            return f"resolved: {subject} on {self.channel} {what} (slot {self.slot:%Y-%m-%d %H:%M}Z)"
        return f"ALARM: {subject} on {self.channel} {what} (slot {self.slot:%Y-%m-%d %H:%M}Z): {self.detail}"

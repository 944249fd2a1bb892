"""What herald hands to plugins: plain data, no database rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AlarmEvent:
    """An alarm raised or resolved, as a person should read it."""

    id: int
    #: ``missed_slot`` or ``duplicate``.
    kind: str
    #: ``open`` when raised, ``resolved`` when its condition cleared.
    state: str
    post_id: int
    channel: str
    slot: datetime
    detail: str
    opened_at: datetime
    resolved_at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("slot", "opened_at", "resolved_at"):
            if data[name] is not None:
                data[name] = data[name].isoformat()
        return data

    def summary(self) -> str:
        what = "missed its slot" if self.kind == "missed_slot" else "has more than one copy"
        if self.state == "resolved":
            return f"resolved: post {self.post_id} on {self.channel} {what} (slot {self.slot:%Y-%m-%d %H:%M}Z)"
        return f"ALARM: post {self.post_id} on {self.channel} {what} (slot {self.slot:%Y-%m-%d %H:%M}Z): {self.detail}"

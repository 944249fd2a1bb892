"""The oracle: classify every (post, channel, part) from the sandbox platform's own record.

Copies are counted on the platform (``GET /sandbox/posts``), matched by the part's
unique text within the channel's strategy and cross-checked against the part's key and
its attachments (a copy without them is a problem: a part is never sent without them).
herald's database is read only to say what herald *thinks* happened – held, failed,
still active – and for the attempts log and the alarms, never to count copies.

No copy may appear before its post's slot: each copy's ``created_at`` (the platform's
own clock, which no fault skews) is compared with the slot, allowing
:data:`EARLY_TOLERANCE` for reading two clocks of one machine at two instants.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from adapters.bluesky.record import PostRef
from core.domain.states import ACTIVE_DELIVERY, DeliveryStatus, PartState
from core.plugins import Rejected
from core.plugins import manager as plugins
from core.store import db
from core.store.models import Alarm, AlarmKind, Attempt, Channel, Delivery, DeliveryPart, Post

#: A channel's platform → the strategy its posts are stored under by the sandbox (a
#: personality's posts under its prefix, adapters/sandbox/mastodon.py, bluesky_records.py).
STRATEGY_OF = {
    "sandbox-native": "native",
    "sandbox-readback": "readback",
    "sandbox-none": "none",
    "mastodon": "mastodon",
    "bluesky": "bluesky",
}
#: Each strategy's dedupe strategy, as its adapter declares it (the tables' titles).
STRATEGY_NAME = {
    "native": "native_key",
    "readback": "read_back",
    "none": "none",
    "mastodon": "native_key",
    "bluesky": "native_key",
}

#: herald's attempts-log errors that name a platform fault, by fault: the sandbox
#: adapters' and Mastodon's "answered 429", Bluesky's "answered com.atproto.repo.putRecord
#: with 429".
PLATFORM_FAULTS = {
    re.compile(r"answered (?:\S+ with )?429"): "rate_limit",
    re.compile(r"answered (?:\S+ with )?503"): "error_before_accept",
    re.compile(r"answered (?:\S+ with )?500"): "error_after_accept",
    re.compile("no answer after sending"): "drop_after_accept",
    re.compile("hard timeout"): "no_answer_in_time",
}


#: Seconds a copy may precede its slot before it counts as early (clock reading, not a fault).
EARLY_TOLERANCE = 0.05


@dataclass
class Tally:
    """The classes of one strategy in one run."""

    deliveries: int = 0
    parts: int = 0
    once: int = 0
    duplicated: int = 0
    lost: int = 0
    unexpected: int = 0
    recovered: int = 0
    held: int = 0
    #: Held parts of which the platform holds a copy (a person will say "it landed").
    held_landed: int = 0
    failed: int = 0
    #: Parts herald still had active when the run gave up waiting.
    stuck: int = 0
    duplicate_deliveries: int = 0
    duplicate_alarmed: int = 0
    #: Duplicated parts, and those whose (post, channel) got a duplicate alarm.
    duplicate_parts: int = 0
    duplicate_parts_alarmed: int = 0
    #: Copies created more than EARLY_TOLERANCE before their post's slot.
    early: int = 0
    #: The smallest (copy created − slot) seen, in seconds.
    earliest: float | None = None
    platform_faults: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


@dataclass
class Classified:
    tallies: dict[str, Tally]
    #: One line per (post, channel, part) that is not "posted once", for the history.
    notable: list[dict[str, Any]]
    attempts: list[dict[str, Any]]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def as_utc(value: datetime) -> datetime:
    """SQLite hands instants back without their zone; they are stored in UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def classify(platform_posts: list[dict[str, Any]]) -> Classified:
    copies: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for copy in platform_posts:
        copies[(copy["strategy"], copy["text"])].append(copy)
    tallies = {s: Tally() for s in STRATEGY_NAME}
    notable: list[dict[str, Any]] = []
    expected: set[tuple[str, str]] = set()
    with db.reading() as s:
        platform_of = {c.id: c.platform for c in s.execute(select(Channel)).scalars()}
        channels = {cid: STRATEGY_OF[platform] for cid, platform in platform_of.items()}
        slots = dict(s.execute(select(Post.id, Post.scheduled_at)).all())
        deliveries = s.execute(select(Delivery)).scalars().all()
        parts: dict[int, list[DeliveryPart]] = defaultdict(list)
        for part in s.execute(select(DeliveryPart).order_by(DeliveryPart.idx)).scalars():
            parts[part.delivery_id].append(part)
        attempts = s.execute(select(Attempt).order_by(Attempt.id)).scalars().all()
        alarmed = set(
            tuple(row)
            for row in s.execute(select(Alarm.post_id, Alarm.channel_id).where(Alarm.kind == AlarmKind.DUPLICATE)).all()
        )
    recovering: set[tuple[int, int]] = set()
    by_delivery: dict[int, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_delivery[a.delivery_id].append(a)
        if a.action == "recover":
            recovering.add((a.delivery_id, a.part_idx))
    for d in deliveries:
        strategy = channels[d.channel_id]
        tally = tallies[strategy]
        tally.deliveries += 1
        for a in by_delivery[d.id]:
            for needle, fault in PLATFORM_FAULTS.items():
                if a.error and needle.search(a.error):
                    tally.platform_faults[fault] += 1
            if strategy == "none" and a.action == "recover" and a.outcome == "published":
                tally.problems.append(f"post {d.post_id}: none-strategy part {a.part_idx} was resent (fence {a.fence})")
        if d.status is DeliveryStatus.PUBLISHED and d.confirmed_at is not None:
            tally.latencies.append((d.confirmed_at - slots[d.post_id]).total_seconds())
        duplicated_here = False
        previous_ids: set[str] | None = None
        first_ids: set[str] = set()
        adapter = plugins.adapter(platform_of[d.channel_id])
        for part in parts[d.id]:
            tally.parts += 1
            expected.add((strategy, part.text))
            found = copies.get((strategy, part.text), [])
            ids = {c["id"] for c in found}
            verdict = _verdict(d, part, len(found), (d.id, part.idx) in recovering)
            for name in verdict:
                setattr(tally, name, getattr(tally, name) + 1)
            duplicated_here |= "duplicated" in verdict
            if "duplicated" in verdict:
                tally.duplicate_parts += 1
                tally.duplicate_parts_alarmed += (d.post_id, d.channel_id) in alarmed
            slot = as_utc(slots[d.post_id])
            for copy in found:
                ahead = (datetime.fromisoformat(copy["created_at"]) - slot).total_seconds()
                tally.earliest = ahead if tally.earliest is None else min(tally.earliest, ahead)
                if ahead < -EARLY_TOLERANCE:
                    tally.early += 1
                    tally.problems.append(
                        f"post {d.post_id} part {part.idx} on {strategy}: copy {copy['id']} created "
                        f"{-ahead:.3f} s before the slot"
                    )
            if found and part.key and strategy != "none":
                # What the platform really carries: the key itself (sandbox, Mastodon's
                # Idempotency-Key) or what the adapter derives from it (Bluesky's rkey).
                wire = adapter.key_on_wire(part.key)
                keys = {c["key"] or c["idempotency_key"] for c in found}
                if keys != {wire}:
                    tally.problems.append(
                        f"post {d.post_id} part {part.idx} on {strategy}: platform keys {keys} != {wire} "
                        f"(part key {part.key})"
                    )
            for copy in found:
                if copy.get("overwrites"):
                    tally.problems.append(
                        f"post {d.post_id} part {part.idx} on {strategy}: copy {copy['id']} was overwritten "
                        f"{copy['overwrites']} time(s)"
                    )
            attached = len(part.media)
            for copy in found:
                if len(copy.get("media") or []) != attached:
                    tally.problems.append(
                        f"post {d.post_id} part {part.idx} on {strategy}: copy {copy['id']} carries "
                        f"{len(copy.get('media') or [])} attachment(s), the part has {attached}"
                    )
            if part.state is PartState.PUBLISHED and not any(_names(strategy, part.platform_id, c) for c in found):
                tally.problems.append(
                    f"post {d.post_id} part {part.idx} on {strategy}: herald recorded {part.platform_id}, "
                    f"the platform holds {sorted(ids)}"
                )
            if previous_ids is not None and any(c["reply_to"] not in previous_ids for c in found):
                tally.problems.append(f"post {d.post_id} part {part.idx} on {strategy}: replies outside its thread")
            if strategy == "bluesky" and previous_ids is not None and any(c["root"] not in first_ids for c in found):
                # A Bluesky reply names its thread's first post as well as its parent.
                tally.problems.append(f"post {d.post_id} part {part.idx} on {strategy}: a root outside its thread")
            if previous_ids is None:
                first_ids = ids
            previous_ids = ids
            if verdict != ["once"]:
                notable.append(
                    {
                        "post_id": d.post_id,
                        "strategy": strategy,
                        "part": part.idx,
                        "classes": verdict,
                        "copies": sorted(ids),
                        "delivery_status": str(d.status),
                        "reason": str(d.reason) if d.reason else None,
                        "part_state": str(part.state),
                        "key": part.key,
                    }
                )
        if duplicated_here:
            tally.duplicate_deliveries += 1
            if (d.post_id, d.channel_id) in alarmed:
                tally.duplicate_alarmed += 1
    for (strategy, text), found in copies.items():
        if (strategy, text) not in expected:
            tallies[strategy].unexpected += len(found)
            notable.append({"strategy": strategy, "classes": ["unexpected"], "copies": [c["id"] for c in found]})
    channel_of = {d.id: d.channel_id for d in deliveries}
    return Classified(
        tallies,
        notable,
        [
            {
                "post_id": a.post_id,
                "delivery_id": a.delivery_id,
                "strategy": channels.get(channel_of.get(a.delivery_id, -1), "?"),
                "part": a.part_idx,
                "fence": a.fence,
                "worker": a.worker,
                "action": a.action,
                "started_at": _iso(a.started_at),
                "ended_at": _iso(a.ended_at),
                "outcome": a.outcome,
                "error": a.error,
            }
            for a in attempts
        ],
    )


def _names(strategy: str, platform_id: str | None, copy: dict[str, Any]) -> bool:
    """Whether herald's recorded ``platform_id`` names the platform's ``copy``: the copy's id,
    or for Bluesky its AT URI and, where herald recorded one, its CID (``uri|cid``, as the
    adapter writes it: :class:`adapters.bluesky.record.PostRef`)."""
    if platform_id is None:
        return False
    if strategy != "bluesky":
        return platform_id == copy["id"]
    repo = str(copy["id"]).removeprefix("at://").split("/", 1)[0]
    try:
        ref = PostRef.parse(platform_id, repo)
    except Rejected:  # names no Bluesky post at all
        return False
    return ref.uri == copy["id"] and (ref.cid is None or ref.cid == copy.get("cid"))


def _verdict(d: Delivery, part: DeliveryPart, n: int, recovering: bool) -> list[str]:
    """The classes of one part: once/duplicated/lost from the platform, plus herald's holds."""
    classes: list[str] = []
    if n >= 2:
        classes.append("duplicated")
    elif n == 1:
        classes.append("once")
        if recovering:
            classes.append("recovered")
    if part.state is not PartState.PUBLISHED:
        if d.status is DeliveryStatus.HELD:
            classes.append("held")
            if n:
                classes.append("held_landed")
        elif d.status in (DeliveryStatus.FAILED, DeliveryStatus.CANCELLED):
            classes.append("failed")
        elif d.status in ACTIVE_DELIVERY:
            classes.append("stuck")
            if n == 0:
                classes.append("lost")
    if n == 0 and part.state is PartState.PUBLISHED:
        classes.append("lost")  # herald says published; the platform has nothing
    return classes

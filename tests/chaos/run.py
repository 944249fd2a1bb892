"""One chaos run: start the cluster, feed it posts, inject faults, wait, ask the oracle."""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from core.domain.states import PostStatus
from core.runtime.clock import DatabaseClock
from core.services.media import AttachmentSpec
from core.services.posts import create_post
from core.store import db
from core.store.models import Post, Tick
from reconciler.tick import READBACK
from tests.chaos.cluster import CHANNELS, TIMINGS, Cluster
from tests.chaos.history import History
from tests.chaos.oracle import Classified, as_utc, classify
from tests.chaos.scenarios import FORGET_AFTER, SHORT_KEY_TTL, Injectors, Scenario, draw_skews, skip_reason

#: Seconds to wait for every post to settle after the last slot.
SETTLE_TIMEOUT = 120.0
#: Posts are created this long before their slot.
LEAD = 2.0
#: In a media scenario, the share of posts whose parts carry images.
MEDIA_SHARE = 0.6


@dataclass
class Run:
    scenario: Scenario
    seed: int
    posts: int
    rate: float
    history: Path
    classified: Classified | None = None
    faults: Counter[str] = field(default_factory=Counter)
    skipped: dict[str, str] = field(default_factory=dict)
    crashes: dict[str, int] = field(default_factory=dict)
    backend: str = ""
    redis: str = ""
    settled: bool = False
    wall_seconds: float = 0.0
    #: Why the scenario did not run on this setup (nothing else is filled in then).
    skip_reason: str = ""
    #: Each worker's wall-clock shift, in the order workers take them (clock_skew).
    clock_skews: tuple[float, ...] = ()

    @property
    def process_faults(self) -> int:
        return sum(self.faults.values())


#: A planned post: its channels, its parts, and its attachments.
Planned = tuple[list[str], list[str], list[AttachmentSpec]]


def plan_posts(rng: random.Random, n: int, tag: str, images: Sequence[Path] = ()) -> list[Planned]:
    """Each post's channels (a non-empty subset of the strategies of CHANNELS), parts (1–3) and,
    given ``images``, for :data:`MEDIA_SHARE` of them one or two images on each part."""
    strategies = list(CHANNELS)
    plan = []
    for i in range(n):
        chosen = [s for s in strategies if rng.random() < 0.5] or [rng.choice(strategies)]
        count = 1 if rng.random() < 0.7 else rng.choice((2, 3))
        parts = [f"{tag} post {i} part {j + 1}/{count}" for j in range(count)]
        media = []
        if images and rng.random() < MEDIA_SHARE:
            media = [
                AttachmentSpec(j, str(image))
                for j in range(count)
                for image in rng.sample(list(images), rng.choice((1, 2)))
            ]
        plan.append(([CHANNELS[s][0] for s in chosen], parts, media))
    return plan


def _images(folder: Path) -> list[Path]:
    """Three small images the media scenario's posts carry (kept once each by herald)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for color in ("teal", "orange", "navy"):
        path = folder / f"{color}.png"
        Image.new("RGB", (32, 24), color).save(path, "PNG")
        paths.append(path)
    return paths


def _active() -> int:
    with db.reading() as s:
        return int(
            s.execute(
                select(func.count())
                .select_from(Post)
                .where(Post.status.in_([PostStatus.SCHEDULED, PostStatus.PUBLISHING]))
            ).scalar_one()
        )


def _last_tick() -> datetime | None:
    with db.reading() as s:
        return s.execute(select(func.max(Tick.at))).scalar()


def run_scenario(scenario: Scenario, *, seed: int, posts: int, rate: float, workdir: Path, workers: int = 4) -> Run:
    """Run one scenario end to end; every process it started is stopped before it returns."""
    rng = random.Random(f"{seed}:{scenario.name}")
    history = History(workdir / f"history-{scenario.name}.jsonl")
    run = Run(scenario, seed, posts, rate, history.path)
    run.skip_reason = skip_reason(scenario)
    if run.skip_reason:
        history.write("skipped", seed=seed, scenario=scenario.name, why=run.skip_reason)
        history.close()
        return run
    run.clock_skews = draw_skews(rng) if scenario.clock_skew else ()
    cluster = Cluster(
        workdir / scenario.name,
        history,
        workers=workers,
        reconcilers=scenario.reconcilers,
        worker_env={"HERALD_CHAOS_NATIVE_KEY_TTL": str(SHORT_KEY_TTL)} if scenario.short_key_ttl else {},
        worker_skews=run.clock_skews,
    )
    started = time.monotonic()
    injectors: Injectors | None = None
    try:
        cluster.start()
        run.backend, run.redis = cluster.database.backend, ("shared" if cluster.redis.shared else "embedded")
        history.write(
            "run",
            seed=seed,
            scenario=scenario.name,
            title=scenario.title,
            posts=posts,
            rate=rate,
            workers=workers,
            reconcilers=scenario.reconcilers,
            timings=TIMINGS,
            database=run.backend,
            redis=run.redis,
            native_key_ttl=SHORT_KEY_TTL if scenario.short_key_ttl else None,
            forget_keys_after=FORGET_AFTER if scenario.short_key_ttl else None,
            clock_skews=list(run.clock_skews) or None,
            replay=f"make chaos SEED={seed}  (or pytest -m chaos tests/chaos --seed {seed} -k {scenario.name})",
        )
        if scenario.sandbox:
            applied = cluster.sandbox_faults(**scenario.sandbox, seed=rng.randrange(2**31))
            history.write("sandbox_faults", config=applied)
        images = _images(workdir / scenario.name / "images") if scenario.media else []
        plan = plan_posts(rng, posts, f"chaos-{seed}-{scenario.name}", images)
        recent: deque[tuple[float, int]] = deque(maxlen=64)

        def due_now() -> list[int]:
            now = time.time()
            return [pid for slot, pid in list(recent) if now - 1.0 <= slot <= now + 0.5]

        injectors = Injectors(cluster, history, rng, due_now)
        lead = scenario.lead or LEAD
        t0 = time.time() + lead + 1.0
        injectors.start(scenario.injectors, mixed=scenario.name == "mixed")
        created = 0
        for i, (channels, parts, media) in enumerate(plan):
            slot = t0 + i / rate
            pause = slot - lead - time.time()
            if pause > 0:
                time.sleep(pause)
            post_id = _create(channels, parts, media, slot, history)
            if post_id is not None:
                created += 1
                recent.append((slot, post_id))
                history.write("post", post_id=post_id, channels=channels, parts=len(parts), media=len(media), slot=slot)
        time.sleep(max(0.0, t0 + posts / rate - time.time()) + 1.0)
        injectors.stop()
        cluster.sandbox_faults()  # the platform heals; what is in doubt must now settle
        history.write("faults_off", injected=dict(injectors.counts))
        run.faults, run.skipped = injectors.counts, injectors.skipped
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline and _active():
            time.sleep(0.5)
        run.settled = _active() == 0
        history.write("settled" if run.settled else "not_settled", active=_active())
        _wait_for_ticks(2)  # the repair pass has run over the settled state
        # ...and a read-back sweep that began once every copy could be seen has ended: a
        # sweep runs in its own loop and, under load, takes many seconds (§7).
        visible_from = DatabaseClock(db.engine()).now() + timedelta(
            seconds=float(scenario.sandbox.get("search_lag", 0))
        )
        history.write("swept" if _wait_for_sweep(visible_from) else "not_swept")
        run.classified = classify(cluster.sandbox_posts())
        for attempt in run.classified.attempts:
            history.write("attempt", **attempt)
        for line in run.classified.notable:
            history.write("class", **line)
        run.crashes = dict(cluster.crashes)
    finally:
        if injectors is not None:
            injectors.stop()
        cluster.stop()
        run.wall_seconds = time.monotonic() - started
        history.write("end", wall_seconds=round(run.wall_seconds, 1))
        history.close()
    return run


def _create(
    channels: list[str], parts: list[str], media: list[AttachmentSpec], slot: float, history: History
) -> int | None:
    """Create the planned post, trying again while a fault keeps the database away, as a
    person's script would: with an idempotency key (its first part's text, which names the
    run, the scenario and the post), so a create whose commit landed while its answer was
    lost with the connection is answered with that post, never made twice – a second post
    with the same text would make the oracle count each one's copy twice."""
    at = datetime.fromtimestamp(slot, UTC)
    for attempt in range(20):
        try:
            return create_post(channels=channels, parts=parts, at=at, media=media, idempotency_key=parts[0])
        except Exception as exc:  # the database may be locked by a fault: a person would try again
            history.write("create_retry", attempt=attempt, error=repr(exc))
            time.sleep(0.5)
    return None


def _wait_for_sweep(after: datetime, timeout: float = SETTLE_TIMEOUT) -> bool:
    """Wait until a read-back sweep that started at or after ``after`` has ended (its tick
    is written when it ends, stamped with its start); False if none did in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with db.reading() as s:
            started = s.execute(select(Tick.at).where(Tick.name == READBACK)).scalar()
        if started is not None and as_utc(started) >= after:
            return True
        time.sleep(0.5)
    return False


def _wait_for_ticks(n: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    for _ in range(n):
        before = _last_tick()
        while time.monotonic() < deadline and _last_tick() == before:
            time.sleep(0.2)


def totals(runs: list[Run]) -> dict[str, Any]:
    """The last line's figures over every run."""
    out: Counter[str] = Counter()
    for run in runs:
        if run.skip_reason:
            continue
        out["posts"] += run.posts
        out["faults"] += run.process_faults
        if run.classified:
            for tally in run.classified.tallies.values():
                out["faults"] += sum(tally.platform_faults.values())
                for name in ("lost", "duplicated", "unexpected", "held", "early"):
                    out[name] += getattr(tally, name)
    return dict(out)

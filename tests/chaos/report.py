"""The chaos tables: one per strategy, a row per fault, and the last line (``chaos: ...``)."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tests.chaos.cluster import CHANNELS
from tests.chaos.oracle import EARLY_TOLERANCE, STRATEGY_NAME, Tally
from tests.chaos.run import Run, totals

COLUMNS = (
    "fault",
    "n",
    "parts",
    "faults (proc)",
    "faults (platform)",
    "once",
    "dup",
    "lost",
    "unexp",
    "recovered",
    "held (landed)",
    "failed",
    "early",
    "dup alarmed",
    "p50 s",
    "p95 s",
    "p99 s",
)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _row(run: Run, tally: Tally) -> list[str]:
    alarmed = f"{tally.duplicate_parts_alarmed}/{tally.duplicate_parts}" if tally.duplicate_parts else "-"
    return [
        run.scenario.name,
        str(tally.deliveries),
        str(tally.parts),
        str(run.process_faults),
        str(sum(tally.platform_faults.values())),
        str(tally.once),
        str(tally.duplicated),
        str(tally.lost),
        str(tally.unexpected),
        str(tally.recovered),
        f"{tally.held} ({tally.held_landed})",
        str(tally.failed),
        str(tally.early),
        alarmed,
        _seconds(tally.percentile(50)),
        _seconds(tally.percentile(95)),
        _seconds(tally.percentile(99)),
    ]


def _table(rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


@dataclass
class Report:
    seed: int
    scale: str
    history_dir: Path
    runs: list[Run] = field(default_factory=list)

    def add(self, run: Run) -> None:
        self.runs.append(run)

    def last_line(self) -> str:
        t = totals(self.runs)
        return (
            f"chaos: posts {t.get('posts', 0)} faults {t.get('faults', 0)} lost {t.get('lost', 0)} "
            f"duplicated {t.get('duplicated', 0)} unexpected {t.get('unexpected', 0)} held {t.get('held', 0)}"
        )

    def tables(self) -> list[str]:
        lines: list[str] = []
        for strategy, label in STRATEGY_NAME.items():
            rows = [_row(r, r.classified.tallies[strategy]) for r in self.runs if r.classified is not None]
            lines += ["", f"### {label} ({CHANNELS[strategy][1]})", "", *_table(rows)]
        lines += [
            "",
            f"read_back duplicate detection recall: {self.recall()}",
            f"duplicated parts on native_key (sandbox-native, mastodon, bluesky) and none: {self.strict_duplicates()}",
            f"early copies (created more than {EARLY_TOLERANCE * 1000:.0f} ms before their slot): {self.early()}",
            "",
        ]
        notes = [f"* {r.scenario.name}: {r.skip_reason}" for r in self.runs if r.skip_reason]
        notes += [f"* {r.scenario.name}: {why}" for r in self.runs for why in r.skipped.values()]
        notes += [
            f"* {r.scenario.name}: worker clock skews (s, in start order): "
            + ", ".join(f"{skew:+.3f}" for skew in r.clock_skews)
            for r in self.runs
            if r.clock_skews
        ]
        notes += [
            f"* {r.scenario.name}: process exits not caused by the harness: {r.crashes}" for r in self.runs if r.crashes
        ]
        notes += [
            f"* {r.scenario.name}: NOT SETTLED within the wait"
            for r in self.runs
            if not r.settled and not r.skip_reason
        ]
        if notes:
            lines += ["Notes:", *notes, ""]
        return lines

    def _tallies(self, strategy: str) -> list[Tally]:
        return [r.classified.tallies[strategy] for r in self.runs if r.classified is not None]

    def recall(self) -> str:
        """Duplicated read_back parts whose (post, channel) herald raised a duplicate alarm for."""
        found = sum(t.duplicate_parts for t in self._tallies("readback"))
        alarmed = sum(t.duplicate_parts_alarmed for t in self._tallies("readback"))
        if not found:
            return "no duplicate happened (0/0)"
        return f"{alarmed}/{found} duplicated parts alarmed ({alarmed / found:.1%})"

    def strict_duplicates(self) -> int:
        strict = [strategy for strategy in STRATEGY_NAME if strategy != "readback"]
        return sum(t.duplicated for strategy in strict for t in self._tallies(strategy))

    def early(self) -> str:
        tallies = [t for strategy in STRATEGY_NAME for t in self._tallies(strategy)]
        earliest = [t.earliest for t in tallies if t.earliest is not None]
        first = f"; the earliest copy was created {min(earliest):+.3f} s from its slot" if earliest else ""
        return f"{sum(t.early for t in tallies)}{first}"

    def render(self) -> str:
        head = f"chaos runs, seed {self.seed}, scale {self.scale}; histories in {self.history_dir}"
        return "\n".join([head, *self.tables(), self.last_line()])

    def markdown(self) -> str:
        backend = sorted({f"{r.backend} + {r.redis} Redis" for r in self.runs if r.backend})
        posts = sum(r.posts for r in self.runs if not r.skip_reason)
        minutes = sum(r.wall_seconds for r in self.runs) / 60
        per_fault = self._exposure()
        return "\n".join(
            [
                "# herald reliability: the chaos harness's figures",
                "",
                "Generated by `make chaos` (tests/chaos). Every (post, channel, part) is classified from",
                "the sandbox platform's own record (`GET /sandbox/posts`), not from herald's database.",
                "",
                f"* date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
                f"* machine: `nproc` = {_nproc()}, {platform.machine()}, Python {platform.python_version()}",
                f"* backend: {', '.join(backend)}",
                f"* seed: {self.seed}; scale: {self.scale}; {posts} posts in {len(self.runs)} runs, "
                f"{minutes:.1f} minutes of runs",
                "* timings: lease 3 s, grace 2 s, call timeout 1.5 s, tick 1 s, backoff 0.2–2 s, 6 attempts, "
                "read-back settle 10 s; 4 workers",
                f"* reproduce: `make chaos SEED={self.seed}` (one scenario: "
                f"`.venv/bin/pytest -m chaos tests/chaos --chaos-scale {self.scale} --seed {self.seed} -k NAME`)",
                "",
                "What was run, per fault type (posts whose slot fell while the fault was being injected):",
                "",
                *[f"* {line}" for line in per_fault],
                "",
                "Columns: `n` deliveries (post × channel) on that strategy, `parts` their thread parts;",
                "`faults (proc)` process-level faults injected in the run (kills, stops, flushes, outages,",
                "duplicate enqueues), `faults (platform)` fault answers herald's attempts met on that",
                "strategy; `once`/`dup` parts with one/several copies on the platform; `lost` no copy",
                "and herald neither held nor failed it; `unexp` copies no post asked for; `recovered`",
                "parts with an attempt in doubt (an attempts-log row `recover`) that ended with one copy;",
                "`held (landed)` parts held for a person (of which the platform holds a copy); `failed`",
                f"terminal; `early` copies the platform created more than {EARLY_TOLERANCE * 1000:.0f} ms before their",
                "post's slot (the platform's clock against the slot; the tolerance covers reading two",
                "clocks at two instants); `dup alarmed` duplicated parts whose post and channel got",
                "herald's duplicate alarm, of all duplicated parts (the recall of the read-back sweep);",
                "p50/p95/p99 slot → confirmed (deliveries.confirmed_at − posts.scheduled_at).",
                *self.tables(),
                self.last_line(),
                "",
                "## Findings",
                "",
                "* Fixed (core/ledger/postgresql.py): a `none` part sent twice without an alarm. In the",
                "  PostgreSQL mixed scenario (seed 518827) a worker was SIGSTOPped between its claim's two",
                "  round trips, holding the post's row; a second worker's claim waited for the row, and",
                "  once the first committed, with its lease already stale, took the post as fence 2. That",
                "  claim's read of the deliveries was part of its compare-and-set statement, whose",
                "  snapshot predated the wait: it saw the part `unsent`, not `sending`, and sent it afresh",
                "  while the first worker made its own call. The claim now reads the deliveries in a",
                "  statement of its own, after the lock, in the same round trip; test",
                "  `test_a_claim_that_waited_for_an_earlier_claims_commit_reads_what_it_committed` (it",
                "  failed on PostgreSQL before the fix). SQLite, whose claim is one writer at a time from",
                "  `BEGIN IMMEDIATE`, never read stale rows.",
                "* Fixed (core/arming.py): a post whose worker died after taking its job and before",
                "  claiming it stayed `scheduled` until rq's own cleanup, minutes later (sigkill runs: the",
                "  post was still unclaimed after the 120 s wait). Arming trusted a `started` job, and a",
                "  `queued` job that rq had already moved out of the queue, whenever nobody held the lease.",
                "  Reproductions: tests/chaos/test_reproductions.py.",
                "* Fixed (core/ledger/attempts.py): overlapping claims with no fault injected. In a",
                "  baseline run (seed 20260) posts 4, 202 and 400 were claimed a second time (fence 2)",
                "  while fence 1's call on their last delivery was still in flight: the countdown that",
                "  let the last delivery to finish give the lease back was decided before that",
                "  delivery's result had committed. Nothing was lost or doubled, but a live lease was",
                "  taken over and `none` parts were held needlessly. The lease is now given back by the",
                "  write that leaves no delivery `sending`, decided from the rows inside it; test",
                "  `test_the_lease_is_kept_until_the_last_delivery_of_the_claim_has_committed`.",
                "* Fixed (reconciler/readback.py): behind a lagging platform search the read-back sweep",
                "  missed duplicates. It read back part 1 only, stopped at a delivery's first sighting and",
                "  looked at confirmed deliveries only. After the first two were fixed, search_lag on",
                "  PostgreSQL (seed 424242) still caught 615 of 624 duplicated parts: 7 published",
                "  deliveries whose second copy was indexed after their 10 s window had passed while slow",
                "  ticks ran, and one delivery held (`ambiguous_outcome`) with 4 copies of part 1 that no",
                "  sweep looked at. The sweep now reads back every read_back delivery with an attempt in",
                "  the settle window, whatever its state, counting the window from the previous tick.",
                "* Fixed (core/db.py): in a PostgreSQL run's db_outage and mixed scenarios workers exited",
                "  22 and 55 times by themselves: a job took its held database connection before rq's job",
                "  handling, so a refused connection ended the worker instead of failing the job. The",
                "  connection is now taken at the job's first statement.",
                "* Fixed (tests/chaos/run.py): a post whose create failed while its commit had landed was",
                "  created again by the harness, and the oracle (which matches copies by text) counted",
                "  both posts' copies twice. The harness then looked for the post before creating it again,",
                "  which a later PostgreSQL mixed run (seed 216467) slipped past: the database stayed",
                "  unreachable for every look-up, and the first create after the outage made post 1589 beside",
                "  post 1588 (2 native and 2 none parts counted duplicated). The harness now creates with an",
                "  idempotency key, the planned post's first text, so a retried create is answered with the",
                "  post its lost answer made, as herald promises any script that retries.",
                "* Fixed (core/runtime/clock.py): on a loaded machine (load average ~10) a PostgreSQL",
                "  forgotten_keys run (seed 217431) put 16 copies of 7 posts 52–62 ms before their slot:",
                "  the database clock's offset was taken from the midpoint of a reading whose window",
                "  included taking a pooled connection, so herald's clock ran ahead of the server's by",
                "  up to half that wait. The offset is now taken on an already checked-out connection,",
                "  from the answer's arrival (never ahead, at most a round trip behind), the quickest of",
                "  three readings; test `test_the_clock_is_never_ahead_of_the_server_even_when_a_checkout_is_slow`.",
                "* Fixed (tests/chaos/run.py): the oracle classified as soon as two ticks of any loop had",
                "  passed, but the read-back sweep runs in its own loop and took 17.7 s a pass under",
                "  load, so 42 (SQLite, seed 669132) and 27 (PostgreSQL, seed 217431) read_back",
                "  duplicates were counted before any sweep could see them. The oracle now waits for a",
                "  sweep that began once every copy was visible (the search lag past the settled state).",
                "* clock_skew: no copy before its slot and no overlapping claim (every attempt at fence",
                "  1), while rq's scheduler moved between workers up to 27 s behind and 11 s ahead: the",
                "  job's slot check and the lease use the database's clock. A scheduler running ahead",
                "  costs latency, not correctness: its jobs start early and re-arm or wait out the slot.",
                "",
                "## What these runs do not show",
                "",
                "* **clock_skew** shifts each worker process's wall clock (`time_machine`, started by",
                "  `tests/chaos/entry.py`: `time.time` and `datetime.now` move, `time.monotonic` does not),",
                "  rq's scheduler included, which runs in a child of the worker. It runs on PostgreSQL",
                "  only: SQLite has no server, its clock is read in the calling process",
                '  (`core/runtime/clock.py`), so a skewed worker skews its own "database" clock and the run would',
                "  prove nothing. The reconciler and the sandbox platform keep the true clock.",
                "* **search_lag**: the platform's search shows a post only some seconds after storing it,",
                "  so herald's read-back before a resend can miss a copy whose answer was lost, and resend:",
                "  read_back duplicates become possible, and the recall of the read-back sweep (which reads",
                "  every part back on every tick for `readback_settle_seconds` after each attempt) is",
                "  measured. The chaos runs use a 10 s settle window; the default is 300 s.",
                "* **forgotten_keys** shortens the sandbox-native and Mastodon adapters' `key_ttl` (24 h and",
                "  Mastodon's promised 1 h) to 2 s in that run's workers (`tests/chaos/entry.py`; neither",
                "  adapter has a setting for it) and lets the sandbox (its native API and its Mastodon",
                "  personality) forget keys after 2.5 s: herald must stop trusting a key older than",
                "  `key_ttl`. A platform that forgets keys *before* the TTL its adapter declares cannot be",
                "  defended against by herald and is not a scenario. Bluesky's record keys are never",
                "  forgotten (`key_ttl` none): its channel gets the scenario's 500s and drops only.",
                "* **mastodon** and **bluesky** are herald's real adapters (adapters/mastodon,",
                "  adapters/bluesky) against the sandbox's personalities (`/api/v1` at the sandbox's root,",
                "  `/bluesky/xrpc`), faulted like the sandbox's own API and answering in each platform's",
                "  words (Mastodon's and the PDS's 429s with their own rate-limit headers). Their key",
                "  check compares what each platform carries: Mastodon's `Idempotency-Key` is the part key,",
                "  Bluesky's record key the TID the adapter derives from it (`key_on_wire`); herald's",
                "  Bluesky platform id `uri|cid` must name the copy's AT URI and CID, and each reply its",
                "  thread's root as well as its parent.",
                "* **pacing**: the Mastodon and Bluesky channels keep to 20 posts a second each",
                "  (`CHAOS_RATE` in `tests/chaos/cluster.py`, set in the workers by `tests/chaos/entry.py`)",
                "  in place of their platforms' windows of hours (300 posts in 3 h; Bluesky's points), which",
                "  a run's thousands of posts in minutes would exhaust at once. Bursts of re-drives after a",
                "  fault reach it, so paced parts wait under the faults too; the hours-long windows",
                "  themselves are `bench/catchup.py`'s and `tests/integration/test_pacing.py`'s.",
                "* **db_outage** on SQLite holds `BEGIN EXCLUSIVE` on the database file from another",
                "  connection (writers wait on their busy timeout; WAL readers still read); on PostgreSQL",
                "  the harness sets `ALLOW_CONNECTIONS false` and terminates herald's backends.",
                "* **redis_restart** needs the Redis the harness owns (the embedded default); with",
                "  `HERALD_REDIS_URL` pointing at a shared Redis it is skipped and the notes say so.",
                "",
            ]
        )

    def _exposure(self) -> list[str]:
        out = []
        for run in self.runs:
            if run.skip_reason:
                out.append(f"{run.scenario.name}: not run — {run.skip_reason}")
                continue
            faults = ", ".join(f"{k} ×{v}" for k, v in sorted(run.faults.items())) or "platform faults only"
            out.append(f"{run.scenario.name}: {run.posts} posts — {run.scenario.title} ({faults})")
        return out


def _nproc() -> str:
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(os.cpu_count())

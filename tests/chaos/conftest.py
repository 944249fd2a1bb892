"""Options and fixtures of the chaos runs (``make chaos``, ``make chaos-short``).

The reproductions reuse the integration fixtures (a migrated database, a Redis, the
sandbox platform); the chaos runs start their own processes (``tests.chaos.cluster``).
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from tests.chaos.report import Report
from tests.integration.conftest import (  # noqa: F401  (fixtures for the reproductions)
    channels,
    database_url,
    herald,
    migrated,
    platform,
    redis_url,
    sandbox,
    workers,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos")
    group.addoption("--seed", type=int, default=None, help="seed of the chaos run (default: random, printed)")
    group.addoption("--chaos-scale", choices=("short", "full"), default="short", help="posts per scenario")
    group.addoption("--chaos-report", default=None, help="write the tables to this Markdown file")
    group.addoption("--chaos-dir", default=None, help="where histories and logs go (default: a temp dir)")


@pytest.fixture(scope="session")
def chaos_seed(request: pytest.FixtureRequest) -> int:
    seed = request.config.getoption("--seed")
    if seed is None:
        seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1, 10**6))
    return int(seed)


@pytest.fixture(scope="session")
def chaos_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = request.config.getoption("--chaos-dir")
    path = Path(given).resolve() if given else tmp_path_factory.mktemp("chaos")
    path.mkdir(parents=True, exist_ok=True)
    return path


REPORT = pytest.StashKey[Report]()


@pytest.fixture(scope="session")
def chaos_report(request: pytest.FixtureRequest, chaos_seed: int, chaos_dir: Path) -> Report:
    report = Report(seed=chaos_seed, scale=request.config.getoption("--chaos-scale"), history_dir=chaos_dir)
    request.config.stash[REPORT] = report
    return report


def pytest_sessionstart(session: pytest.Session) -> None:
    # SIGTERM (and SIGINT, which a background shell ignores) end the run through the
    # cleanup path, so every process a run started is stopped.
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The tables and the last line, after every run; and docs/reliability.md for ``make chaos``."""
    report = config.stash.get(REPORT, None)
    if report is None or not report.runs:
        return
    terminalreporter.write_line("")
    for line in report.render().splitlines():
        terminalreporter.write_line(line)
    target = config.getoption("--chaos-report")
    if target:
        Path(target).write_text(report.markdown())
        terminalreporter.write_line(f"tables written to {target}")

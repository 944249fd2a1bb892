"""HERALD_LOG_FORMAT=json: a herald process writes every log line as one JSON object –
its own records and its libraries' (rq's, uvicorn's) alike – with the exception's text."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.cli.logs import JsonLines
from core.config import Settings
from tests.integration.conftest import Workers
from tests.integration.test_deploy import start_api

pytestmark = pytest.mark.integration

KEYS = {"time", "level", "logger", "message"}


def json_lines(log: Path) -> list[dict[str, Any]]:
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert lines, "the process logged nothing"
    parsed = [json.loads(line) for line in lines]  # every line, or this fails
    for record in parsed:
        assert set(record) >= KEYS, record
    return parsed


def test_a_worker_logs_json_lines_rqs_own_included(
    herald: Settings, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERALD_LOG_FORMAT", "json")
    worker = workers.start("--burst", "--no-scheduler")
    assert worker.wait(timeout=60) == 0, workers.output()
    records = json_lines(herald.home_path / "worker-0.log")
    assert {"rq.worker"} <= {r["logger"] for r in records}
    assert any("Listening on" in r["message"] for r in records)


def test_the_api_logs_a_failure_as_json_with_the_exception_and_answers_without_it(
    herald: Settings, workers: Workers, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERALD_LOG_FORMAT", "json")
    # A database that cannot open: every key check fails inside the request.
    monkeypatch.setenv("HERALD_DATABASE_URL", f"sqlite:///{tmp_path / 'missing' / 'herald.db'}")
    base = start_api(workers, monkeypatch, tmp_path / "api")
    failed = httpx.get(f"{base}/api/v1/health", headers={"Authorization": "Bearer hk_abc_def"}, timeout=10)
    assert failed.status_code == 500
    assert failed.json()["error"]["code"] == "internal"
    assert "OperationalError" not in failed.text
    workers.stop_all()
    records = json_lines(herald.home_path / "worker-0.log")
    (logged,) = [r for r in records if r["logger"] == "core.api.errors"]
    assert (logged["level"], logged["message"]) == ("ERROR", "GET /api/v1/health failed")
    assert "OperationalError" in logged["exception"] and "Traceback" in logged["exception"]


def test_a_record_with_a_multiline_message_and_an_exception_is_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("herald.test", logging.ERROR, __file__, 1, "two\nlines %s", ("é",), sys.exc_info())
    line = JsonLines().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert (parsed["level"], parsed["logger"], parsed["message"]) == ("ERROR", "herald.test", "two\nlines é")
    assert parsed["exception"].endswith("ValueError: boom")
    assert parsed["time"].endswith("+00:00")

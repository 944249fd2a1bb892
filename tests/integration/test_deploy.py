"""docs/deploy.md's claim: every herald process reads only its environment and the shared
services. Two ``herald api`` and two ``herald worker`` processes, each with its own
HERALD_HOME and the one shared HERALD_SECRET_KEY, against one PostgreSQL and one Redis:
posts are published once each (copies counted on the sandbox) and the same figures show
on both API servers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from core.config import Settings
from core.domain.roles import Role
from core.services.channels import DEFAULT_ACCOUNT, add_channel
from core.services.keys import create_key
from core.store import db
from tests.integration.conftest import Sandbox, Workers, post_json, wait_until
from tests.integration.test_cli_input import free_port
from tests.integration.test_metrics import samples_of, value

pytestmark = pytest.mark.integration

POSTS = 6


def start_api(workers: Workers, monkeypatch: pytest.MonkeyPatch, home: Path) -> str:
    """A ``herald api`` process with its own HERALD_HOME, once it answers; its base URL."""
    monkeypatch.setenv("HERALD_HOME", str(home))
    port = free_port()
    api = workers.spawn("api", "--port", str(port))
    base = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        assert api.poll() is None, workers.output()
        try:
            return httpx.get(f"{base}/openapi.json", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(answering, timeout=60, interval=0.2)
    return base


def published_attempts(base: str) -> float | None:
    samples = samples_of(httpx.get(f"{base}/metrics", timeout=10).text)
    return value(samples, "herald_publish_attempts", outcome="published", strategy="native_key")


def test_two_api_servers_and_two_workers_with_their_own_homes_share_one_database_and_queue(
    herald: Settings,
    workers: Workers,
    platform: Sandbox,
    sandbox_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    if db.engine().dialect.name != "postgresql":
        pytest.skip("several hosts share one PostgreSQL: set HERALD_DATABASE_URL=postgresql://… (SQLite is one host's)")
    # One secret key for every process (docs/deploy.md): without it each home makes its own.
    monkeypatch.setenv("HERALD_SECRET_KEY", Fernet.generate_key().decode())
    add_channel("n1", "sandbox-native", {"base_url": sandbox_url, "token": "t-ok"})
    one, two = (start_api(workers, monkeypatch, tmp_path / f"api-{i}") for i in (1, 2))
    for i in (1, 2):
        monkeypatch.setenv("HERALD_HOME", str(tmp_path / f"worker-{i}"))
        workers.start()
    key = create_key(DEFAULT_ACCOUNT, Role.MANAGER).secret
    bearer = {"Authorization": f"Bearer {key}"}
    for base in (one, two):
        assert httpx.get(f"{base}/api/v1/health", headers=bearer, timeout=10).status_code == 200

    # Made through API 1, each with its idempotency key sent twice: one post each.
    ids = []
    for i in range(POSTS):
        asked = {"channels": ["n1"], "parts": [f"deployed {i}"]}
        headers = {**bearer, "Idempotency-Key": f"deploy-{i}"}
        made = [httpx.post(f"{one}/api/v1/posts", json=asked, headers=headers, timeout=10) for _ in range(2)]
        assert [m.status_code for m in made] == [201, 201], made[0].text
        assert made[0].json()["post_id"] == made[1].json()["post_id"]
        ids.append(made[0].json()["post_id"])

    wait_until(lambda: all(post_json(i)["status"] == "published" for i in ids), timeout=90, interval=0.3)
    texts = sorted(p["text"] for p in platform.posts())
    assert texts == sorted(f"deployed {i}" for i in range(POSTS)), "each post once, none twice"
    for base in (one, two):
        assert published_attempts(base) == POSTS
    # ...and seen from API 2 as published.
    for post_id in ids:
        shown = httpx.get(f"{two}/api/v1/posts/{post_id}", headers=bearer, timeout=10)
        assert (shown.status_code, shown.json()["status"]) == (200, "published"), shown.text
    # Nothing was sealed with a key of a home's own: every process used the shared one.
    assert not list(tmp_path.glob("*/secret.key"))

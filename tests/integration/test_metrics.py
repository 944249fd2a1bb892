"""``GET /metrics`` (§14): every figure read from the database when Prometheus scrapes, so
it moves as posts publish – whichever process published them – and only with the token
when HERALD_METRICS_TOKEN is set."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from core import config
from core.api import metrics
from core.api.app import create_app
from core.config import Settings
from core.runtime import job
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.posts import create_post
from reconciler.tick import tick
from tests.integration.conftest import Sandbox
from tests.integration.test_query_plans import plan

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def client(herald: Settings) -> Iterator[TestClient]:
    with TestClient(create_app()) as test_client:
        yield test_client


def scrape(client: TestClient, **headers: str) -> Samples:
    answer = client.get("/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return samples_of(answer.text)


def samples_of(text: str) -> Samples:
    """Prometheus's text, as (name, labels) → value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_the_figures_move_as_posts_publish_fail_and_wait(
    client: TestClient, channels: dict[str, str], platform: Sandbox, sandbox_url: str, clock: ManualClock
) -> None:
    before = scrape(client)
    assert not [key for key in before if key[0] == "herald_publish_attempts"]
    assert value(before, "herald_deliveries_failed") == 0
    assert value(before, "herald_queue_jobs", state="scheduled") == 0
    assert value(before, "herald_health", state="needs_person") == 0

    later = create_post(channels=["n1"], parts=["within the hour"], at=clock.now() + timedelta(minutes=30))
    assert value(scrape(client), "herald_queue_jobs", state="scheduled") == 1, later

    post_id = create_post(channels=["n1", "x1"], parts=["now"], at=clock.now())
    job.publish_post(post_id)
    platform.token("t-revoked", "revoked")
    add_channel("lapsed", "sandbox-none", {"base_url": sandbox_url, "token": "t-revoked"})
    held = create_post(channels=["lapsed"], parts=["behind a revoked token"], at=clock.now())
    job.publish_post(held)

    after = scrape(client)
    assert value(after, "herald_publish_attempts", outcome="published", strategy="native_key") == 1
    assert value(after, "herald_publish_attempts", outcome="published", strategy="none") == 1
    assert value(after, "herald_publish_attempts", outcome="auth_expired", strategy="none") == 1
    # Both publications were confirmed within half a second of their slot (the clock
    # did not move), and counted once each.
    for strategy in ("native_key", "none"):
        assert value(after, "herald_publish_lateness_seconds_bucket", le="0.5", strategy=strategy) == 1
        assert value(after, "herald_publish_lateness_seconds_bucket", le="+Inf", strategy=strategy) == 1
        assert value(after, "herald_publish_lateness_seconds_gcount", strategy=strategy) == 1
    assert value(after, "herald_deliveries_held", reason="auth_expired") == 1
    assert value(after, "herald_deliveries_need_person") == 1
    assert value(after, "herald_health", state="healthy") == 0
    assert len(platform.posts()) == 2


def test_the_reconciler_tick_age_appears_once_it_ran(client: TestClient, clock: ManualClock) -> None:
    assert value(scrape(client), "herald_reconciler_tick_age_seconds") is None
    tick(clock)
    age = value(scrape(client), "herald_reconciler_tick_age_seconds")
    # The tick ran on the manual clock (a few seconds ahead); the scrape reads the database's.
    assert age is not None and abs(age) < 60


def test_with_a_metrics_token_a_scrape_must_send_it(client: TestClient, herald: Settings) -> None:
    config.use(replace(herald, metrics_token="scrape-me"))
    for headers in ({}, {"Authorization": "Bearer another"}, {"Authorization": "Bearer hk_x_y"}):
        refused = client.get("/metrics", headers=headers)
        assert refused.status_code == 401, headers
        assert refused.json()["error"]["code"] == "unauthenticated"
        assert "scrape-me" not in refused.text
    assert value(scrape(client, Authorization="Bearer scrape-me"), "herald_open_alarms") == 0


def test_metrics_is_not_part_of_the_json_api_document(client: TestClient) -> None:
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]


@pytest.mark.parametrize(
    "statement",
    [metrics.recent_attempts, metrics.recent_confirmed],
    ids=["recent_attempts", "recent_confirmed"],
)
def test_the_windowed_queries_use_an_index_not_a_full_scan(statement: object, herald: Settings) -> None:
    from datetime import UTC, datetime

    lines = plan(statement(datetime(2026, 11, 30, tzinfo=UTC)))  # type: ignore[operator]
    full = [
        line
        for line in lines
        for table in ("attempts", "deliveries", "posts")
        if line.startswith(f"SCAN {table}") or f"Seq Scan on {table}" in line
    ]
    assert lines
    assert full == [], "\n".join(lines)

"""``GET /metrics``: herald's figures in Prometheus's text format (§14).

herald's truth is the database, and several API servers, workers and reconcilers share it:
a counter kept in one process's memory would tell only that process's share, and start
again at every restart. So nothing is counted in memory: every scrape reads the figures
from the database (and the queue's depth from Redis), with the health panel's own queries
(``core.services.health``) and two more, each an index range over the last hour:

* ``herald_publish_attempts{outcome,strategy}``: attempts started in the last hour, by how
  they ended (``published``, ``adopted``, ``not_sent``, ``ambiguous``, a reason;
  ``in_flight`` while one runs) and the channel's dedupe strategy (ix_attempts_started_at);
* ``herald_publish_lateness_seconds``: slot → confirmed of the deliveries confirmed in the
  last hour, by strategy, as a gauge histogram (ix_deliveries_confirmed_at):
  ``histogram_quantile(0.95, herald_publish_lateness_seconds_bucket)`` is that hour's p95.

A window read from the rows, rather than a counter, is what lets any number of processes
answer the same figures; the hour keeps each query a short index range however many posts
herald has made.

Prometheus's scrapers usually send no credentials, so by default ``/metrics`` is open (it
shows counts, never a post's text or a channel's settings). With ``HERALD_METRICS_TOKEN``
set, a scrape must send ``Authorization: Bearer <that token>``.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Select, func, select

from core.config import settings
from core.domain.errors import Unauthenticated
from core.plugins import manager as plugins
from core.services.health import Health, health
from core.store import db
from core.store.models import Attempt, Channel, Delivery, Post

#: How far back the attempts and the lateness histogram look.
WINDOW = timedelta(hours=1)
#: The lateness histogram's upper bounds, in seconds: a second late is good, a minute is a
#: queue or a worker falling behind, the missed-slot alarm fires at two.
LATENESS_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
HEALTH_STATES = ("healthy", "unhealthy", "needs_person")

_bearer = HTTPBearer(auto_error=False, description="HERALD_METRICS_TOKEN, when it is set")


def recent_attempts(since: datetime) -> Select[str, str | None, int]:
    """Attempts started since ``since``, counted by platform and outcome (ix_attempts_started_at)."""
    return (
        select(Channel.platform, Attempt.outcome, func.count().label("attempts"))
        .select_from(Attempt)
        .join(Delivery, Delivery.id == Attempt.delivery_id)
        .join(Channel, Channel.id == Delivery.channel_id)
        .where(Attempt.started_at >= since)
        .group_by(Channel.platform, Attempt.outcome)
    )


def recent_confirmed(since: datetime) -> Select[str, datetime, datetime | None]:
    """The slot and the confirmation of each delivery confirmed since ``since``
    (ix_deliveries_confirmed_at). The differences are taken here rather than in SQL: a
    datetime difference is written differently by each database."""
    return (
        select(Channel.platform, Post.scheduled_at, Delivery.confirmed_at)
        .select_from(Delivery)
        .join(Post, Post.id == Delivery.post_id)
        .join(Channel, Channel.id == Delivery.channel_id)
        .where(Delivery.confirmed_at >= since)
    )


def _strategies() -> dict[str, str]:
    return {name: str(cls.strategy) for name, (cls, _plugin) in plugins.registered().items()}


class HeraldCollector(Collector):
    """Reads every figure from the database (and Redis) when Prometheus scrapes."""

    def collect(self) -> Iterator[GaugeMetricFamily | GaugeHistogramMetricFamily]:
        panel = health()
        yield from _health_figures(panel)
        strategy_of = _strategies()
        since = panel.now - WINDOW
        with db.reading() as s:
            attempts = [(r.platform, r.outcome, r.attempts) for r in s.execute(recent_attempts(since))]
            confirmed = [
                (r.platform, r.scheduled_at, r.confirmed_at)
                for r in s.execute(recent_confirmed(since))
                if r.confirmed_at is not None
            ]
        counted = GaugeMetricFamily(
            "herald_publish_attempts",
            "Publish attempts started in the last hour, by outcome and dedupe strategy",
            labels=["outcome", "strategy"],
        )
        by_label: dict[tuple[str, str], int] = {}
        for platform, outcome, count in attempts:
            label = (outcome or "in_flight", strategy_of.get(platform, "unknown"))
            by_label[label] = by_label.get(label, 0) + count
        for (outcome, strategy), count in sorted(by_label.items()):
            counted.add_metric([outcome, strategy], count)
        yield counted
        yield _lateness(confirmed, strategy_of)


def _lateness(rows: list[tuple[str, datetime, datetime]], strategy_of: dict[str, str]) -> GaugeHistogramMetricFamily:
    family = GaugeHistogramMetricFamily(
        "herald_publish_lateness_seconds",
        "Slot to platform confirmation of the deliveries confirmed in the last hour, by dedupe strategy",
        labels=["strategy"],
    )
    gaps: dict[str, list[float]] = {}
    for platform, slot, confirmed in rows:
        gap = max((confirmed - slot).total_seconds(), 0.0)
        gaps.setdefault(strategy_of.get(platform, "unknown"), []).append(gap)
    for strategy, found in sorted(gaps.items()):
        buckets = [(f"{bound:g}", float(sum(1 for gap in found if gap <= bound))) for bound in LATENESS_BUCKETS]
        buckets.append(("+Inf", float(len(found))))
        family.add_metric([strategy], buckets, gsum_value=sum(found))
    return family


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _health_figures(panel: Health) -> Iterator[GaugeMetricFamily]:
    state = GaugeMetricFamily("herald_health", "The health panel's state: 1 for the current one", labels=["state"])
    for name in HEALTH_STATES:
        state.add_metric([name], 1.0 if panel.state == name else 0.0)
    yield state
    yield _gauge("herald_queue_reachable", "1 when the queue (Redis) answered", float(panel.queued is not None))
    if panel.queued is not None and panel.scheduled is not None:
        depth = GaugeMetricFamily(
            "herald_queue_jobs", "Post jobs in the queue: waiting for a worker, or for their time", labels=["state"]
        )
        depth.add_metric(["queued"], panel.queued)
        depth.add_metric(["scheduled"], panel.scheduled)
        yield depth
    held = GaugeMetricFamily("herald_deliveries_held", "Deliveries held, by reason", labels=["reason"])
    for reason, count in panel.held_reasons.items():
        held.add_metric([reason], count)
    yield held
    yield _gauge("herald_deliveries_failed", "Deliveries failed for good, until a person retries them", panel.failed)
    yield _gauge("herald_deliveries_in_doubt", "Attempts in doubt that nothing is settling", panel.in_doubt)
    yield _gauge("herald_deliveries_need_person", "Deliveries held, failed or in doubt", panel.needs_person)
    yield _gauge("herald_open_alarms", "Alarms raised and not resolved", panel.open_alarms)
    yield _gauge(
        "herald_oldest_unclaimed_due_seconds",
        "How long the oldest due slot no worker claimed has waited (0: none waits)",
        panel.oldest_unclaimed_due_age or 0.0,
    )
    yield _gauge("herald_emergency_stop", "1 while the global emergency stop is on", float(panel.emergency_stop))
    yield _gauge(
        "herald_accounts_stopped", "Accounts under their own emergency stop", float(len(panel.stopped_accounts))
    )
    # Absent, not zero, until the loop first ran: alert on absent() as on a large age.
    if panel.last_tick_age is not None:
        yield _gauge(
            "herald_reconciler_tick_age_seconds", "Seconds since the reconciler's last tick", panel.last_tick_age
        )
    if panel.last_sweep_age is not None:
        yield _gauge(
            "herald_readback_sweep_age_seconds", "Seconds since the read-back sweep last ran", panel.last_sweep_age
        )


def scraper(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """Let the scrape through when no HERALD_METRICS_TOKEN is set, or it sends that token.

    Raises:
        Unauthenticated: a token is set, and the scrape sent none or another.
    """
    token = settings().metrics_token
    if not token:
        return
    given = credentials.credentials if credentials is not None else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise Unauthenticated("/metrics takes 'Authorization: Bearer <HERALD_METRICS_TOKEN>' on this server")


registry = CollectorRegistry(auto_describe=False)
registry.register(HeraldCollector())
router = APIRouter()


# Not in the OpenAPI document: it is Prometheus's text, not a part of the JSON API.
@router.get("/metrics", include_in_schema=False, dependencies=[Depends(scraper)])
def metrics() -> Response:
    """herald's figures, read now, in Prometheus's text format."""
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

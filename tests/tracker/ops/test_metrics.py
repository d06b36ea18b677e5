"""/metrics: valid Prometheus exposition, database-derived series read at scrape time, HTTP request metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from providers.contract import Pricing
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.config import Settings
from tracker.ops.metrics import DatabaseCollector
from tracker.storage.alert_tables import AlertChannel, AlertDeliveryAttempt, AlertNotification, AlertRule
from tracker.storage.engine import make_engine, session_scope
from tracker.storage.tables import ScrapeRun

H100 = "H100-SXM-80GB"


def parse(text: str) -> tuple[dict[str, str], dict[tuple[str, frozenset], float]]:
    """(family name → type, (sample name, labels) → value); raises on invalid exposition."""
    types, samples = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = s.value
    return types, samples


def value(samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def _seed(engine, settings, now: datetime) -> datetime:
    clock = FakeClock(now - timedelta(hours=2))
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00"), offer("c", "16.00", count=8)))
    clock.now = now - timedelta(minutes=10)  # within three of vastai's 10-minute intervals: not stale
    observed = clock()
    second = [
        offer("a", "1.50"),
        offer("b", "3.00"),
        offer("c", "16.00", count=8),
        offer("s", "1.10", pricing=Pricing.spot),
        offer("x", "1.00", gpu="Quantum 9000"),
    ]
    do_ingest(engine, settings, clock, batch(*second))
    with session_scope(engine) as s:
        for i, (status, secs) in enumerate([("ok", 2.0), ("failed", 5.0), ("failed", 3.0)]):
            start = now - timedelta(minutes=30 - i)
            s.add(
                ScrapeRun(
                    provider="lambdalabs",
                    status=status,
                    started_at=start,
                    finished_at=start + timedelta(seconds=secs),
                    source="live",
                )
            )
        s.add(ScrapeRun(provider="lambdalabs", status="running", started_at=now, source="live"))
    return observed


def _alerts(engine, now: datetime) -> None:
    with session_scope(engine) as s:
        rules = []
        for i, state in enumerate(["firing", "pending", "pending", "resolved"]):
            rule = AlertRule(
                name=f"r{i}",
                gpu_query="H100",
                gpu_ids=[H100],
                pricing="on_demand",
                metric="min",
                condition="below",
                threshold=Decimal("2"),
                recovery_threshold=Decimal("2.1"),
                state=state,
                state_since=now,
                created_at=now,
                updated_at=now,
            )
            s.add(rule)
            rules.append(rule)
        s.flush()
        channel = AlertChannel(rule_id=rules[0].id, kind="webhook", url="https://example.com/h", created_at=now)
        s.add(channel)
        s.flush()
        for i, status in enumerate(["delivered", "delivered", "failed", "pending"]):
            n = AlertNotification(
                rule_id=rules[0].id,
                channel_id=channel.id,
                kind="firing",
                payload={},
                idempotency_key=f"k{i}",
                status=status,
                max_attempts=3,
                created_at=now,
                next_attempt_at=now,
            )
            s.add(n)
            s.flush()
            for attempt, ok in enumerate([False, True] if status == "delivered" else [False]):
                s.add(AlertDeliveryAttempt(notification_id=n.id, attempt=attempt + 1, at=now, ok=ok))


def test_metrics_endpoint_carries_every_named_series(engine, settings):
    now = datetime.now(UTC)  # the route reads the real clock: prices must be fresh now
    observed = _seed(engine, settings, now)
    _alerts(engine, now)
    app = create_app(settings, engine)
    with TestClient(app) as client:  # the context runs the lifespan, which installs the HTTP middleware
        assert client.get("/v1/offers", params={"limit": 1}).status_code == 200
        assert client.get("/v1/market/history", params={"gpu": "NoSuchCard"}).status_code == 404
        assert client.get("/no/such/page").status_code == 404
        response = client.get("/metrics")
        second = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    types, samples = parse(response.text)

    assert value(samples, "gpu_tracker_database_up") == 1
    # Scrape ledger: by provider and status, durations from started/finished.
    assert types["gpu_tracker_scrape_runs"] == "counter"
    assert value(samples, "gpu_tracker_scrape_runs_total", provider="vastai", status="ok") == 2
    assert value(samples, "gpu_tracker_scrape_runs_total", provider="lambdalabs", status="failed") == 2
    assert value(samples, "gpu_tracker_scrape_runs_total", provider="lambdalabs", status="running") == 1
    assert types["gpu_tracker_scrape_duration_seconds"] == "summary"
    assert value(samples, "gpu_tracker_scrape_duration_seconds_count", provider="lambdalabs") == 3
    duration = value(samples, "gpu_tracker_scrape_duration_seconds_sum", provider="lambdalabs")
    assert duration == pytest.approx(10.0, abs=0.01)
    # Providers: offers, unknown names, last success, staleness.
    assert value(samples, "gpu_tracker_offers", provider="vastai") == 4
    assert value(samples, "gpu_tracker_offers", provider="aws") == 0
    assert value(samples, "gpu_tracker_unknown_gpu_names", provider="vastai") == 1
    assert value(samples, "gpu_tracker_last_success_timestamp_seconds", provider="vastai") == pytest.approx(
        observed.timestamp(), abs=0.01
    )
    assert ("gpu_tracker_last_success_timestamp_seconds", frozenset({("provider", "aws")})) not in samples
    assert value(samples, "gpu_tracker_provider_stale", provider="vastai") == 0
    assert value(samples, "gpu_tracker_provider_stale", provider="aws") == 1
    # Prices: per card and pricing type, never blended (spot apart from on-demand).
    card = {"gpu": H100, "gpu_family": "H100", "pricing": "on_demand"}
    assert value(samples, "gpu_tracker_price_min_usd_per_gpu_hour", **card) == 1.5
    assert value(samples, "gpu_tracker_price_median_usd_per_gpu_hour", **card) == 2.0  # 1.50, 2.00, 3.00
    assert value(samples, "gpu_tracker_market_offers", **card) == 3
    assert value(samples, "gpu_tracker_price_median_usd_per_gpu_hour", **(card | {"pricing": "spot"})) == 1.1
    assert value(samples, "gpu_tracker_market_reference_only", **card) == 0
    # Alerts: rules by state (every state present), notifications and attempts by outcome.
    assert {
        s: value(samples, "gpu_tracker_alert_rules", state=s)
        for s in ("inactive", "pending", "firing", "resolved", "no_data")
    } == {"inactive": 0, "pending": 2, "firing": 1, "resolved": 1, "no_data": 0}
    assert value(samples, "gpu_tracker_alert_notifications", status="delivered") == 2
    assert value(samples, "gpu_tracker_alert_notifications", status="failed") == 1
    assert value(samples, "gpu_tracker_alert_delivery_attempts_total", outcome="ok") == 2
    assert value(samples, "gpu_tracker_alert_delivery_attempts_total", outcome="error") == 4
    # HTTP: by method, route template (never the raw path) and status; latency histogram.
    assert value(samples, "gpu_tracker_http_requests_total", method="GET", route="/v1/offers", status="200") == 1
    assert (
        value(samples, "gpu_tracker_http_requests_total", method="GET", route="/v1/market/history", status="404") == 1
    )
    assert value(samples, "gpu_tracker_http_requests_total", method="GET", route="<unmatched>", status="404") == 1
    assert not any(k[0] == "gpu_tracker_http_requests_total" and ("route", "/no/such/page") in k[1] for k in samples)
    assert types["gpu_tracker_http_request_duration_seconds"] == "histogram"
    assert value(samples, "gpu_tracker_http_request_duration_seconds_count", method="GET", route="/v1/offers") == 1
    assert (
        value(samples, "gpu_tracker_http_request_duration_seconds_bucket", method="GET", route="/v1/offers", le="+Inf")
        == 1
    )
    # The first /metrics request is itself counted by the time of the second.
    _, again = parse(second.text)
    assert value(again, "gpu_tracker_http_requests_total", method="GET", route="/metrics", status="200") == 1


def test_unhandled_error_is_counted_as_500(engine, settings):
    app = create_app(settings, engine)

    @app.get("/boom/{n}")
    def boom(n: int) -> None:
        raise RuntimeError("boom")

    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/boom/1").status_code == 500
        _, samples = parse(client.get("/metrics").text)
    assert value(samples, "gpu_tracker_http_requests_total", method="GET", route="/boom/{n}", status="500") == 1


def test_database_series_follow_the_database_not_the_process(engine, settings):
    """A second process (the worker) ingesting is visible at the next scrape: nothing is counted in memory."""
    collector = DatabaseCollector(engine, settings, clock=lambda: datetime(2026, 11, 1, 13, tzinfo=UTC))
    registry = CollectorRegistry()
    registry.register(collector)
    _, before = parse(generate_latest(registry).decode())
    assert ("gpu_tracker_scrape_runs_total", frozenset({("provider", "vastai"), ("status", "ok")})) not in before
    assert value(before, "gpu_tracker_offers", provider="vastai") == 0
    do_ingest(engine, settings, FakeClock(), batch(offer("a", "2.00")))  # FakeClock: 2026-11-01 12:00
    _, after = parse(generate_latest(registry).decode())
    assert value(after, "gpu_tracker_scrape_runs_total", provider="vastai", status="ok") == 1
    assert value(after, "gpu_tracker_offers", provider="vastai") == 1
    assert value(after, "gpu_tracker_price_min_usd_per_gpu_hour", gpu=H100, gpu_family="H100", pricing="on_demand") == 2


def test_unreadable_database_reports_down_instead_of_failing(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")  # no schema: every query fails
    registry = CollectorRegistry()
    registry.register(DatabaseCollector(engine, Settings(data_dir=tmp_path)))
    types, samples = parse(generate_latest(registry).decode())
    assert samples == {("gpu_tracker_database_up", frozenset()): 0.0}
    assert list(types) == ["gpu_tracker_database_up"]

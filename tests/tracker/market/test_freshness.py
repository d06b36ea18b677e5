"""One freshness rule: after a daily rate-sheet scrape, the market, ranking, alerts, provider health and
/metrics agree, hour by hour, on whether those prices are live — with and without TRACKER_INTERVALS."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.factories.alerts import add_rule
from tests.factories.clock import FakeClock
from tracker.alerts.observe import observe
from tracker.estimate import make_job, prepare
from tracker.market import freshness
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import market_snapshot, rank_offers
from tracker.ops.metrics import DatabaseCollector
from tracker.ops.status import provider_status
from tracker.pipeline.scraping import plan, run_scrape
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

H100 = "H100-SXM-80GB"


def _scrape_reference(engine, settings, clock) -> None:
    (report,) = asyncio.run(run_scrape(plan(["reference"]), engine, settings, clock=clock))
    assert report.status == "ok", report


def _views(engine, settings, rule_id: int, now) -> dict[str, bool]:
    """Is the reference H100 price live at `now`, according to each consumer?"""
    with session_scope(engine) as s:
        cards = market_snapshot(engine, s, settings, now)["cards"]
        market = any(c["gpu"] == H100 and c["pricing"] == "on_demand" for c in cards)
        prepared = prepare(make_job(model="llama-3.1-8b", method="qlora", tokens="22.5M"))
        # Asked for although past its sheet age (tracker.market.freshness.sheet_ages): liveness is the rule here.
        filters = RankFilters(gpu_ids=[H100], include_stale=True)
        ranked = rank_offers(engine, s, settings, now, prepared, filters, RankOptions())
        rank = any(r["provider"] == "reference" for r in ranked["rows"])
        alert = observe(s, s.get_one(AlertRule, rule_id), now=now, settings=settings, cost_model=None).ok
    health = next(p for p in provider_status(engine, settings, now) if p["name"] == "reference")
    registry = CollectorRegistry()
    registry.register(DatabaseCollector(engine, settings, clock=lambda: now))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
    }
    metric_stale = samples[("gpu_tracker_provider_stale", (("provider", "reference"),))] == 1
    metric_market = any(
        name == "gpu_tracker_market_offers" and dict(labels).get("gpu") == H100 for name, labels in samples
    )
    return {
        "market": market,
        "rank": rank,
        "alert": alert,
        "health": not health["stale"],
        "metrics_stale": not metric_stale,
        "metrics_market": metric_market,
    }


@pytest.mark.parametrize(
    ("intervals", "live_hours"),
    [
        ({}, 72),  # a daily sheet: three missed days before its prices stop counting
        ({"reference": 3600}, 6),  # hourly by TRACKER_INTERVALS: max(stale_after 6 h, 3 × 1 h)
    ],
)
def test_every_consumer_agrees_at_every_hour(engine, settings, intervals, live_hours):
    settings = settings.model_copy(update={"intervals": intervals})
    assert freshness.window("reference", settings) == timedelta(hours=live_hours)
    clock = FakeClock()
    _scrape_reference(engine, settings, clock)
    scraped = clock()
    rule = add_rule(engine, settings, scraped, threshold="0.50", providers=["reference"])
    for hour in [*range(0, 13), *range(live_hours - 1, live_hours + 3)]:
        now = scraped + timedelta(hours=hour)
        views = _views(engine, settings, rule, now)
        expected = hour <= live_hours
        assert views == dict.fromkeys(views, expected), (hour, views)


def test_twelve_hours_after_a_daily_scrape_the_alert_has_a_value(engine, settings):
    """The repro of the layout issue: the market listed the price while the alert said no_data."""
    clock = FakeClock()
    _scrape_reference(engine, settings, clock)
    rule = add_rule(engine, settings, clock(), threshold="0.50", providers=["reference"])
    later = clock.advance(hours=12)
    with session_scope(engine) as s:
        obs = observe(s, s.get_one(AlertRule, rule), now=later, settings=settings, cost_model=None)
    assert obs.ok and obs.no_data is None and obs.value is not None


def test_no_data_names_the_window(engine, settings):
    clock = FakeClock()
    _scrape_reference(engine, settings, clock)
    rule = add_rule(engine, settings, clock(), threshold="0.50", providers=["reference"])
    later = clock.advance(days=4)
    with session_scope(engine) as s:
        obs = observe(s, s.get_one(AlertRule, rule), now=later, settings=settings, cost_model=None)
    assert obs.no_data == "no live offers: none seen in the last 3 days, 0:00:00"


def test_intervals_setting_is_the_worker_cadence(settings):
    from providers.registry import get_provider
    from tracker.pipeline.worker import interval_for

    tuned = settings.model_copy(update={"intervals": {"vastai": 300}})
    assert interval_for(get_provider("vastai"), tuned) == freshness.scrape_interval("vastai", tuned)
    assert freshness.window("vastai", tuned) == timedelta(hours=6)  # the stale_after floor
    assert freshness.window("unknown-provider", settings) == timedelta(hours=6)

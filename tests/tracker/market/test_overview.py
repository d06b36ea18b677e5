"""The market overview: live statistics, 7/30-day change against daily medians, sparklines, demo and reference flags."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from fastapi.testclient import TestClient

from api.app import create_app
from providers.adapters.reference import ReferenceRates
from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer
from tracker.catalog.gpus import get_catalog
from tracker.ingest.batch import ingest
from tracker.market.overview import market_overview
from tracker.market.service import market_history
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
TODAY = datetime(2026, 11, 20, tzinfo=UTC)
H100 = "H100-SXM-80GB"


def _spot(price: str):
    return offer("s", price, pricing=Pricing.spot)


def _scenario(engine, settings, clock):
    """H100 on-demand: a 2.00 → 3.00 (10 days ago) → 1.00 (now), b 4.00 throughout; spot s 1.00 throughout."""
    for at, a in ((NOW - timedelta(days=40), "2.00"), (NOW - timedelta(days=10), "3.00"), (NOW, "1.00")):
        clock.now = at
        do_ingest(engine, settings, clock, batch(offer("a", a), offer("b", "4.00"), _spot("1.00")))


def _demo_a100(engine, settings, at):
    with session_scope(engine) as session:
        run = ScrapeRun(provider="runpod", status="running", started_at=at, source="demo")
        session.add(run)
        session.flush()
        ingest(
            session,
            run,
            batch(offer("r", "1.50", gpu="A100 SXM4 80GB")),
            catalog=get_catalog(),
            settings=settings,
            observed_at=at,
        )


def _overview(engine, settings, **kw):
    with session_scope(engine) as s:
        return market_overview(engine, s, settings, NOW, **kw)


def _row(result, gpu, pricing):
    return next(c for c in result["cards"] if c["gpu"] == gpu and c["pricing"] == pricing)


def test_change_is_live_median_against_that_days_daily_median(engine, settings, clock):
    _scenario(engine, settings, clock)
    on_demand = _row(_overview(engine, settings), H100, "on_demand")
    # Live: a 1.00, b 4.00 → median 1.00 (inverted CDF). 7 days ago (a 3.00 and b 4.00 all day) → 3.00;
    # 30 days ago (a 2.00, b 4.00) → 2.00.
    assert (on_demand["median"], on_demand["min"], on_demand["offers"]) == (Decimal("1.000000"), Decimal("1.000000"), 2)
    assert (on_demand["median_7d_ago"], on_demand["change_7d"], on_demand["change_7d_pct"]) == (
        Decimal("3.000000"),
        Decimal("-2.000000"),
        -66.67,
    )
    assert (on_demand["median_30d_ago"], on_demand["change_30d"], on_demand["change_30d_pct"]) == (
        Decimal("2.000000"),
        Decimal("-1.000000"),
        -50.0,
    )
    spot = _row(_overview(engine, settings), H100, "spot")  # never blended with on-demand
    assert (spot["median"], spot["change_7d"], spot["change_30d_pct"]) == (Decimal("1.000000"), Decimal(0), 0.0)


def test_sparkline_is_the_daily_history(engine, settings, clock):
    _scenario(engine, settings, clock)
    row = _row(_overview(engine, settings), H100, "on_demand")
    with session_scope(engine) as s:
        daily = market_history(
            s,
            settings,
            NOW,
            gpu_ids=[H100],
            pricing="on_demand",
            interval="1d",
            start=TODAY - timedelta(days=30),
            end=NOW,
        )
    assert [p["day"] for p in row["sparkline"]] == [TODAY - timedelta(days=30 - i) for i in range(31)]
    assert row["sparkline"] == [{"day": b["bucket"], "median": b["median"], "min": b["min"]} for b in daily]
    assert row["sparkline"][0]["median"] == Decimal("2.000000")


def test_missing_day_gives_null_change_not_a_guess(engine, settings, clock):
    clock.now = NOW - timedelta(days=3)
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "2.50")))
    clock.now = NOW
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "2.50")))
    row = _row(_overview(engine, settings), H100, "on_demand")
    assert row["median_7d_ago"] is None and row["change_7d"] is None and row["change_7d_pct"] is None
    assert row["change_30d"] is None and len(row["sparkline"]) == 4


def test_demo_and_reference_flags(engine, settings, clock):
    _scenario(engine, settings, clock)
    _demo_a100(engine, settings, NOW)
    clock.now = NOW
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates)], engine, settings, clock=clock))
    result = _overview(engine, settings)
    a100 = _row(result, "A100-SXM-80GB", "on_demand")
    assert a100["demo"] is True and a100["reference_only"] is False  # runpod demo + reference sheet
    assert _row(result, H100, "on_demand")["demo"] is False
    assert _row(result, "RTX4090-24GB", "on_demand")["reference_only"] is True
    without = _overview(engine, settings, include_reference=False)
    assert {c["gpu"] for c in without["cards"]} == {H100, "A100-SXM-80GB"}
    assert _row(without, "A100-SXM-80GB", "on_demand")["demo"] is True
    only_spot = _overview(engine, settings, pricing=["spot"])
    assert [(c["gpu"], c["pricing"]) for c in only_spot["cards"]] == [(H100, "spot")]


def test_overview_endpoint(engine, settings, clock):
    _scenario(engine, settings, clock)
    client = TestClient(create_app(settings, engine, clock=lambda: NOW))
    body = client.get("/v1/market/overview").json()
    row = next(c for c in body["cards"] if c["gpu"] == H100 and c["pricing"] == "on_demand")
    assert (row["median"], row["change_7d_pct"]) == (1.0, -66.67)
    assert (row["name"], row["form_factor"]) == ("H100 SXM5 80GB", "SXM")
    assert body["sparkline_days"] == 30 and len(row["sparkline"]) == 31
    spot = client.get("/v1/market/overview", params={"pricing": "spot"}).json()["cards"]
    assert [c["pricing"] for c in spot] == ["spot"]
    assert client.get("/v1/market/overview", params={"pricing": "hourly"}).status_code == 422

"""Availability over time on SQLite and Postgres: the share of a window during which a matching offer was
available, worked out by hand for a constructed week; the last time one was; filters; a stale provider's
open interval ending with its freshness window; the endpoint and the CLI giving the same answer."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.availability import availability, covered
from tracker.market.filters import OfferFilters
from tracker.storage.engine import session_scope

H100 = ["H100-SXM-80GB"]
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
EIGHT = OfferFilters(min_gpus=Decimal(8))
EIGHT_SE = OfferFilters(min_gpus=Decimal(8), regions=["se"])
EIGHT_VAST = OfferFilters(min_gpus=Decimal(8), providers=["vastai"])


def test_covered_is_the_length_of_the_union():
    lo = np.array([0, 5, 20, 25, 40, 50], dtype=np.int64)
    hi = np.array([10, 8, 30, 35, 40, 45], dtype=np.int64)  # nested, overlapping, empty, reversed
    assert covered(lo, hi) == 10 + 15
    assert covered(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0


def week(engine, settings, now):
    """A week of Vast.ai scrapes, by hand (T = now):

    A 8×H100 eu: available [T−7d−1h, T−6d), unavailable, available [T−4d, T−2d), unavailable,
                 available again from T−1h (and still now);
    B 8×H100 eu: available [T−5d, T−3d), then delisted;
    C 1×H100 us: available all the time (filtered out by --min-gpus 8; keeps each batch non-empty);
    on AWS, D 8×H100 with no availability stated; on TensorDock, E 8×H100 available from T−20h, whose
    provider was last scraped at T−10h.
    """
    clock = FakeClock(now - 7 * DAY - HOUR)
    a = lambda flag: offer("A", "16.00", count=8, region="de-bavaria", available=flag)  # noqa: E731
    b = offer("B", "18.00", count=8, region="se-stockholm", available=True)
    c = offer("C", "2.00", region="us-texas", available=True)

    def at(moment, *offers, provider="vastai"):
        clock.now = moment
        assert do_ingest(engine, settings, clock, batch(*offers), provider=provider).status == "ok"

    at(now - 7 * DAY - HOUR, a(True), c)
    at(now - 7 * DAY, offer("D", "98.00", count=8, region="eu-central-1"), provider="aws")
    at(now - 6 * DAY, a(False), c)
    at(now - 5 * DAY, a(False), b, c)
    at(now - 4 * DAY, a(True), b, c)
    at(now - 3 * DAY, a(True), c)  # B rented: gone from the listing
    at(now - 2 * DAY, a(False), c)
    at(now - 20 * HOUR, offer("E", "15.00", count=8, region="us-ca", available=True), provider="tensordock")
    at(now - 10 * HOUR, offer("E", "15.00", count=8, region="us-ca", available=True), provider="tensordock")
    at(now - 5 * HOUR, offer("D", "98.00", count=8, region="eu-central-1"), provider="aws")
    at(now - HOUR, a(True), c)
    at(now - timedelta(minutes=10), a(True), c)


@pytest.fixture
def now():
    return FakeClock().now


def by_provider(rows):
    return {(r["provider"], r["gpu"]): r for r in rows}


def test_a_constructed_week_by_hand(engine, settings, now):
    week(engine, settings, now)
    with session_scope(engine) as s:
        rows = by_provider(availability(s, settings, now, gpu_ids=H100, days=7, filters=EIGHT))
    vast = rows[("vastai", "H100-SXM-80GB")]
    # Available: [T−7d, T−6d) 1 day (clipped to the window) ∪ A [T−4d, T−2d) ∪ B [T−5d, T−3d) = [T−5d, T−2d)
    # 3 days (overlap counted once) ∪ [T−1h, T) 1 hour: 97 of 168 hours.
    assert vast["available_hours"] == 97.0
    assert vast["available_share"] == pytest.approx(97 / 168, abs=1e-12)
    assert (vast["offers_now"], vast["available_now"], vast["last_available_at"]) == (1, 1, now)
    assert vast["reports_availability"] is True

    aws = rows[("aws", "H100-SXM-80GB")]  # listed all week, never said available: not counted as available
    assert (aws["available_share"], aws["last_available_at"], aws["reports_availability"]) == (0.0, None, False)
    assert (aws["offers_now"], aws["available_now"]) == (1, 0)

    # TensorDock's last scrape was 10 h ago: its open interval ends with the 6 h freshness window, at T−4h.
    td = rows[("tensordock", "H100-SXM-80GB")]
    assert td["available_hours"] == 16.0 and td["last_available_at"] == now - 4 * HOUR
    assert (td["offers_now"], td["available_now"]) == (0, 0)


def test_filters_and_windows(engine, settings, now):
    week(engine, settings, now)
    with session_scope(engine) as s:
        # No GPU minimum: C (1×H100, always available) covers the whole week.
        vast = by_provider(availability(s, settings, now, gpu_ids=H100, filters=OfferFilters(providers=["vastai"])))
        assert list(vast) == [("vastai", "H100-SXM-80GB")]
        assert vast[("vastai", "H100-SXM-80GB")]["available_share"] == 1.0
        # Regions by prefix: only B is in Sweden, and it was rented three days ago.
        se = by_provider(availability(s, settings, now, gpu_ids=H100, filters=EIGHT_SE))
        (row,) = se.values()
        assert (row["available_hours"], row["last_available_at"], row["offers_now"]) == (48.0, now - 3 * DAY, 0)
        # A one-day window: only the last hour.
        day = by_provider(availability(s, settings, now, gpu_ids=H100, days=1, filters=EIGHT_VAST))
        assert day[("vastai", "H100-SXM-80GB")]["available_share"] == pytest.approx(1 / 24, abs=1e-12)
        # Asked at T−2d−1h for one day: B's last hour [T−3d−1h, T−3d) is in the window.
        earlier = by_provider(availability(s, settings, now - 2 * DAY - HOUR, gpu_ids=H100, days=1, filters=EIGHT_SE))
        assert earlier[("vastai", "H100-SXM-80GB")]["available_share"] == pytest.approx(1 / 24, abs=1e-12)
        # A window after B's last availability still reports when that was (from all history).
        later = by_provider(availability(s, settings, now, gpu_ids=H100, days=2, filters=EIGHT_SE))
        assert later[("vastai", "H100-SXM-80GB")]["last_available_at"] == now - 3 * DAY
        assert later[("vastai", "H100-SXM-80GB")]["available_share"] == 0.0
        assert availability(s, settings, now, gpu_ids=["A100-SXM-80GB"]) == []


@pytest.fixture
def client(engine, settings, now):
    from api.app import create_app

    with TestClient(create_app(settings, engine, clock=lambda: now), raise_server_exceptions=False) as c:
        yield c


def test_endpoint(engine, settings, now, client):
    week(engine, settings, now)
    r = client.get("/v1/availability", params={"gpu": "H100", "min_gpus": 8, "provider": "vastai", "days": 7})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["gpu"], body["days"], body["providers"]) == ("H100", 7, ["vastai"])
    (row,) = body["rows"]
    assert row["provider"] == "vastai" and row["available_hours"] == 97.0
    assert row["available_share"] == pytest.approx(97 / 168, abs=1e-12)
    assert row["last_available_at"] == now.isoformat() and row["available_now"] == 1
    assert (
        client.get("/v1/availability", params={"gpu": "H100", "region": "se", "min_gpus": 8}).json()["rows"][0][
            "available_hours"
        ]
        == 48.0
    )
    assert client.get("/v1/availability", params={"gpu": "nonsense-gpu"}).status_code == 404
    assert client.get("/v1/availability", params={"gpu": "H100", "days": 0}).status_code == 422
    assert client.get("/v1/availability").status_code == 422  # gpu is required


def test_cli(engine, settings, cli, now, monkeypatch):
    week(engine, settings, now)
    monkeypatch.setattr("tracker.clock.utcnow", lambda: now)
    out = cli("availability", "H100", "--min-gpus", "8", "--provider", "vastai", "--days", "7", "--json")
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    (row,) = body["rows"]
    assert row["available_hours"] == 97.0 and row["available_share"] == pytest.approx(97 / 168, abs=1e-12)
    table = cli("availability", "H100", "--min-gpus", "8")
    assert table.exit_code == 0, table.output
    assert "57.7%" in table.output and "not stated" in table.output  # 97/168; AWS never says
    assert cli("availability", "nonsense-gpu").exit_code == 2


@pytest.mark.parametrize("provider", ["vastai", "runpod", "lambdalabs", "shadeform"])
def test_replayed_cassettes_answer_availability_history(engine, settings, provider):
    """The issue's four providers say whether a machine can be had: their bundled cassettes, replayed,
    leave availability history that the query answers from (some card available, with a last time)."""
    import asyncio

    from providers.cassette import Cassette, bundled_cassette
    from providers.registry import get_provider
    from tracker.catalog import get_catalog
    from tracker.pipeline.scraping import ScrapeJob, run_scrape

    clock = FakeClock()
    job = ScrapeJob(get_provider(provider), "replay", Cassette.load(bundled_cassette(provider)))
    (report,) = asyncio.run(run_scrape([job], engine, settings, clock=clock))
    assert report.status == "ok" and report.availability_rows > 0, report
    later = clock.advance(minutes=5)
    with session_scope(engine) as s:
        rows = availability(
            s,
            settings,
            later,
            gpu_ids=[g.id for g in get_catalog().all()],
            days=1,
            filters=OfferFilters(providers=[provider]),
        )
    available = [r for r in rows if r["last_available_at"] is not None]
    assert available, rows
    assert all(r["provider"] == provider and 0.0 <= r["available_share"] <= 1.0 for r in rows)


def test_the_share_counts_only_the_tracked_part_of_the_window(engine, settings):
    """An offer first seen an hour ago and available since is available 100 % of what we know, not 0.6 % of
    a week; `tracked_since` says where our record begins. A card on record all week keeps both shares equal."""
    now = FakeClock().now
    clock = FakeClock(now - 7 * DAY - HOUR)
    do_ingest(engine, settings, clock, batch(offer("old", "2.00", region="us-texas", available=True)))
    clock.now = now - HOUR
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("old", "2.00", region="us-texas", available=True),
            offer("new", "30.00", gpu="B200", region="us-texas", available=True),
        ),
    )
    clock.now = now
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("old", "2.00", region="us-texas", available=True),
            offer("new", "30.00", gpu="B200", region="us-texas", available=True),
        ),
    )
    with session_scope(engine) as session:
        (new,) = availability(session, settings, now, gpu_ids=["B200-SXM-180GB"], days=7)
        (old,) = availability(session, settings, now, gpu_ids=H100, days=7)
    assert new["available_share"] == pytest.approx(1 / 168, abs=1e-9)  # of the whole week, as before
    assert new["tracked_share"] == pytest.approx(1.0) and new["tracked_since"] == now - HOUR
    assert old["tracked_share"] == pytest.approx(old["available_share"]) and old["tracked_since"] < now - 7 * DAY

"""Exchange rates in the pipeline, on both backends: fetched and stored (offline from the bundled cassette),
a failed fetch keeps the stored rates, the worker fetches once a day, and a demo scrape on an empty store
loads the recorded rates before its offers are converted."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from decimal import Decimal

import httpx
from sqlalchemy import func, select, update

from providers.adapters.reference import ReferenceRates
from providers.cassette import Cassette, Interaction
from tracker.pipeline.rates import rates_due, update_rates, update_rates_sync
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.pipeline.worker import Worker
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate

ECB_DAY = date(2026, 3, 13)  # the bundled cassette's day


def stored(engine) -> dict[str, Decimal]:
    with session_scope(engine) as s:
        return dict(s.execute(select(FxRate.currency, FxRate.usd_per_unit)).all())


def answering(text: str, status: int = 200) -> Cassette:
    url = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
    return Cassette("fx_ecb", [Interaction("GET", url, None, status, {"content-type": "text/xml"}, text=text)])


def test_demo_update_stores_the_recorded_day_and_a_refetch_changes_nothing(engine, settings, clock):
    first = update_rates_sync(engine, settings, mode="demo", clock=clock)
    assert (first.status, first.as_dict()["days"], first.as_dict()["inserted"]) == ("ok", [ECB_DAY.isoformat()], 29)
    rates = stored(engine)
    assert rates["EUR"] == Decimal("1.1476") and len(rates) == 29
    again = update_rates_sync(engine, settings, mode="demo", clock=clock)
    assert (again.as_dict()["inserted"], again.as_dict()["unchanged"]) == (0, 29)
    assert stored(engine) == rates


def test_a_failed_fetch_stores_nothing_and_keeps_the_previous_rates(engine, settings, clock):
    update_rates_sync(engine, settings, mode="demo", clock=clock)
    before = stored(engine)
    zero = (
        "<Envelope xmlns='http://www.ecb.int/vocabulary/2002-08-01/eurofxref'><Cube><Cube time='2026-03-16'>"
        "<Cube currency='USD' rate='1.15'/><Cube currency='JPY' rate='0'/></Cube></Cube></Envelope>"
    )
    for cassette, why in ((answering(zero), "JPY rate '0' is not positive"), (answering("oops", 500), "HTTP 500")):
        report = asyncio.run(update_rates(engine, settings, mode="replay", cassette=cassette, clock=clock))
        assert report.status == "failed" and why in (report.error or "")
        assert report.as_dict()["inserted"] == 0
    assert stored(engine) == before
    with session_scope(engine) as s:
        assert s.scalar(select(func.max(FxRate.rate_date))) == ECB_DAY


def test_rates_are_due_once_a_day(engine, settings, clock):
    assert rates_due(engine, clock())
    update_rates_sync(engine, settings, mode="demo", clock=clock)
    assert not rates_due(engine, clock())
    clock.advance(days=1)
    assert rates_due(engine, clock())


def test_the_worker_cycle_fetches_rates_first_and_only_when_due(engine, settings, clock):
    worker = Worker(engine, settings, clock=clock, source="demo", providers=["reference"])
    report = worker.run_once().as_dict()
    assert report["rates"]["status"] == "ok" and report["rates"]["inserted"] == 29
    clock.advance(hours=1)
    assert worker.run_once().as_dict()["rates"] is None  # today's are in


def test_the_worker_job_never_raises(engine, settings, clock, monkeypatch):
    worker = Worker(engine, settings, clock=clock, source="demo", providers=["reference"])

    def broken(*args, **kwargs):
        raise httpx.ConnectError("no route")

    monkeypatch.setattr("tracker.pipeline.worker.update_rates_sync", broken)
    assert worker.update_rates() is None


def test_a_demo_scrape_loads_the_recorded_rates_when_none_are_stored(engine, settings, clock):
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates, "demo")], engine, settings, clock=clock, dry_run=True))
    assert stored(engine) == {}  # a dry run stores nothing, rates included
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates, "demo")], engine, settings, clock=clock))
    assert stored(engine)["EUR"] == Decimal("1.1476")
    with session_scope(engine) as s:  # present already: not loaded again
        s.execute(update(FxRate).values(fetched_at=clock() - timedelta(days=3)))
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates, "demo")], engine, settings, clock=clock))
    with session_scope(engine) as s:
        assert s.scalar(select(func.max(FxRate.fetched_at))) == clock() - timedelta(days=3)


def test_a_replayed_eur_batch_on_a_fresh_store_fetches_its_rate_before_ingest(engine, settings, clock):
    # Before: every EUR offer of a first scrape was set aside ("no rate for EUR") until `fx update` ran.
    from providers.adapters.hetzner import Hetzner
    from providers.cassette import bundled_cassette
    from tracker.storage.tables import Offer

    assert stored(engine) == {}
    (report,) = asyncio.run(
        run_scrape(
            [ScrapeJob(Hetzner, "replay", Cassette.load(bundled_cassette("hetzner")))], engine, settings, clock=clock
        )
    )
    assert report.status == "ok" and report.offers_valid > 0
    assert not any("EUR" in reason for reason in report.invalid)
    assert stored(engine)["EUR"] == Decimal("1.1476")
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(Offer)) == report.offers_valid


def test_a_live_batch_fetches_rates_only_when_it_needs_them(engine, settings, clock, monkeypatch):
    from tracker.pipeline import rates

    calls: list[str] = []
    real = rates.update_rates

    async def recorded(engine_, settings_, *, mode="live", clock=clock, **kwargs):
        calls.append(mode)  # the live ECB, replayed from its recording: no network in tests
        return await real(engine_, settings_, mode="replay", clock=clock)

    monkeypatch.setattr(rates, "update_rates", recorded)
    assert asyncio.run(rates.ensure_rates_for(engine, settings, {"USD"}, source="live", clock=clock)) is None
    assert calls == []  # USD needs no rate
    report = asyncio.run(rates.ensure_rates_for(engine, settings, {"USD", "EUR"}, source="live", clock=clock))
    assert calls == ["live"] and report is not None and report.status == "ok"
    # Once today's rates are fetched, a batch asks no more (whether or not they were recent enough, a
    # second fetch in the same slot would bring nothing new).
    asyncio.run(rates.ensure_rates_for(engine, settings, {"EUR"}, source="live", clock=clock))
    assert calls == ["live"]

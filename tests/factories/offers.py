"""Offers and ingested batches, built the way a provider and the scraper would build them."""

from __future__ import annotations

from decimal import Decimal

from providers.contract import ScrapedOffer, ScrapeResult
from tests.factories.clock import FakeClock
from tracker.catalog.gpus import get_catalog
from tracker.ingest.batch import ingest
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun


def offer(key: str, price: str, gpu: str = "H100-SXM-80GB", count: int | Decimal = 1, **kw) -> ScrapedOffer:
    return ScrapedOffer(key=key, gpu_name=gpu, gpu_count=Decimal(count), price_per_hour=Decimal(price), **kw)


def batch(*offers: ScrapedOffer) -> ScrapeResult:
    return ScrapeResult(offers=list(offers))


def do_ingest(engine, settings, clock: FakeClock, result: ScrapeResult, provider: str = "vastai"):
    with session_scope(engine) as session:
        run = ScrapeRun(provider=provider, status="running", started_at=clock(), source="live")
        session.add(run)
        session.flush()
        return ingest(session, run, result, catalog=get_catalog(), settings=settings, observed_at=clock())

"""A year of price history for dashboard, overview and metrics tests, anchored on a given "now".

* the reference and Crusoe rate sheets, ingested 400 days ago and again now (flat, continuous lines,
  marked reference; Crusoe alone lists some cards, so those are reference-only);
* a synthetic marketplace under the `tensordock` name: H100 SXM (on-demand and spot), A100 SXM 80GB and
  RTX 4090 offers re-priced every 3 days along a deterministic wave and downward drift, so every chart
  has a shape and the 7- and 30-day changes are non-zero;
* the bundled cassettes of lambdalabs (replayed) and runpod (replayed as demo data, so the dashboard
  has something to mark as demo) at three recent instants.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import Engine

from providers.adapters.crusoe import CrusoeRates
from providers.adapters.lambdalabs import LambdaLabs
from providers.adapters.reference import ReferenceRates
from providers.adapters.runpod import RunPod
from providers.cassette import Cassette, bundled_cassette
from providers.contract import Pricing, ScrapedOffer, ScrapeResult
from tests.factories.clock import FakeClock
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.ingest.batch import ingest
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

HISTORY_DAYS = 400
STEP = timedelta(days=3)
SYNTHETIC = "tensordock"
# (key, raw GPU name, GPUs, pricing, base $/GPU-hour)
MARKET = [
    ("h100-a", "H100 SXM5 80GB", 1, Pricing.on_demand, 2.60),
    ("h100-b", "H100 SXM5 80GB", 8, Pricing.on_demand, 2.35),
    ("h100-c", "H100 SXM5 80GB", 2, Pricing.on_demand, 2.95),
    ("h100-d", "H100 SXM5 80GB", 4, Pricing.on_demand, 3.40),
    ("h100-s1", "H100 SXM5 80GB", 1, Pricing.spot, 1.55),
    ("h100-s2", "H100 SXM5 80GB", 8, Pricing.spot, 1.80),
    ("a100-a", "A100 SXM4 80GB", 1, Pricing.on_demand, 1.45),
    ("a100-b", "A100 SXM4 80GB", 8, Pricing.on_demand, 1.25),
    ("a100-c", "A100 SXM4 80GB", 4, Pricing.on_demand, 1.70),
    ("4090-a", "RTX 4090", 1, Pricing.on_demand, 0.42),
    ("4090-b", "RTX 4090", 2, Pricing.on_demand, 0.36),
]


def _price(base: float, days_ago: float, i: int) -> Decimal:
    """A wave (60-day period), a drift of -25% over the year, and a per-offer phase."""
    wave = 1 + 0.12 * math.sin(2 * math.pi * (days_ago / 60) + i)
    drift = 1 + 0.25 * days_ago / 365
    return Decimal(f"{base * wave * drift:.4f}")


def synthetic_batch(days_ago: float) -> ScrapeResult:
    offers = [
        ScrapedOffer(
            key=key,
            gpu_name=gpu,
            gpu_count=Decimal(n),
            pricing=pricing,
            region="us-east",
            price_per_hour=_price(base, days_ago, i) * n,
        )
        for i, (key, gpu, n, pricing, base) in enumerate(MARKET)
    ]
    return ScrapeResult(offers=offers)


def _ingest_synthetic(engine: Engine, settings: Settings, at: datetime, days_ago: float) -> None:
    with session_scope(engine) as session:
        run = ScrapeRun(provider=SYNTHETIC, status="running", started_at=at, source="live")
        session.add(run)
        session.flush()
        ingest(session, run, synthetic_batch(days_ago), catalog=get_catalog(), settings=settings, observed_at=at)
        run.finished_at = at + timedelta(seconds=2)


def seed(engine: Engine, settings: Settings, now: datetime) -> None:
    clock = FakeClock(now - timedelta(days=HISTORY_DAYS))
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates), ScrapeJob(CrusoeRates)], engine, settings, clock=clock))
    at = now - timedelta(days=HISTORY_DAYS)
    while at < now:
        _ingest_synthetic(engine, settings, at, (now - at) / timedelta(days=1))
        at += STEP
    for days_ago in (20, 6, 0):
        clock.now = now - timedelta(days=days_ago, minutes=1)
        jobs = [
            ScrapeJob(LambdaLabs, "replay", Cassette.load(bundled_cassette("lambdalabs"))),
            ScrapeJob(RunPod, "demo", Cassette.load(bundled_cassette("runpod"))),
        ]
        asyncio.run(run_scrape(jobs, engine, settings, clock=clock))
    clock.now = now - timedelta(minutes=1)
    asyncio.run(run_scrape([ScrapeJob(ReferenceRates), ScrapeJob(CrusoeRates)], engine, settings, clock=clock))
    _ingest_synthetic(engine, settings, now - timedelta(minutes=1), 0)


__all__ = ["HISTORY_DAYS", "MARKET", "SYNTHETIC", "seed", "synthetic_batch"]

"""GET /v1/offers: a EUR-quoted offer carries its quote, currency, rate and rate day beside the USD figures."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from providers.fx.contract import DailyRates
from tests.factories.api import seeded_client
from tests.factories.offers import batch, do_ingest, offer
from tracker.ingest.fx import store_rates
from tracker.storage.engine import session_scope


def test_offers_show_native_price_and_rate(engine, settings, clock):
    with session_scope(engine) as s:
        store_rates(s, [DailyRates("ecb", date(2026, 10, 30), {"EUR": Decimal("1.08")})], clock())
    do_ingest(engine, settings, clock, batch(offer("eu", "4.00", count=2, currency="EUR")), provider="vastai")
    with seeded_client(engine, settings, vast=False) as client:
        rows = client.get("/v1/offers", params={"provider": "vastai"}).json()["offers"]
        reference = client.get("/v1/offers", params={"provider": "reference", "limit": 1}).json()["offers"]
    (eu,) = rows
    assert (eu["currency"], eu["price_native_per_hour"], eu["price_native_per_gpu_hour"]) == ("EUR", 4.0, 2.0)
    assert (eu["fx_rate"], eu["fx_date"], eu["fx_source"]) == (1.08, "2026-10-30", "ecb")
    assert (eu["price_per_hour"], eu["price_per_gpu_hour"]) == (4.32, 2.16)
    (usd,) = reference  # a USD quote: the native figures are the USD ones, and no rate
    assert usd["currency"] == "USD" and usd["price_native_per_gpu_hour"] == usd["price_per_gpu_hour"]
    assert usd["fx_rate"] is None and usd["fx_date"] is None

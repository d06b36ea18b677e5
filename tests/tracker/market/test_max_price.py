"""`max_price`, a filter declared once (tracker.market.filters): the offer list, the ranking's mask, the
API's query string and body, and the command line all have it, and agree on the boundary (inclusive)."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from api.app import create_app
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import LiveOffers
from tracker.market.offers import OfferFilters, current_offers
from tracker.market.rank import RankFilters, filter_mask
from tracker.storage.engine import session_scope

JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "1M", "assumptions": "seed", "include_unfit": True}


def _seed(engine, settings, clock=None) -> None:
    offers = batch(offer("cheap", "1.00"), offer("edge", "2.50"), offer("dear", "4.00"))
    do_ingest(engine, settings, clock or FakeClock(), offers)


def test_sql_and_mask_agree(engine, settings):
    _seed(engine, settings)
    with session_scope(engine) as s:
        sql = {o.offer_key for o in current_offers(s, OfferFilters(max_price="2.50"))}
        _, table = LiveOffers().frame(engine, s)
        keep = filter_mask(table, np.ones(len(table), dtype=bool), RankFilters(max_price="2.50"))
    assert sql == set(table["offer_key"][keep].tolist()) == {"cheap", "edge"}


def test_every_surface_has_it(engine, settings, cli, clock):
    _seed(engine, settings, clock)
    client = TestClient(create_app(settings, engine, clock=clock), raise_server_exceptions=False)
    listed = client.get("/v1/offers", params={"max_price": "2"}).json()["offers"]
    assert [o["offer_key"] for o in listed] == ["cheap"]
    ranked = client.post("/v1/rank", json=JOB | {"max_price": 2}).json()["rows"]
    assert {r["offer_key"] for r in ranked} == {"cheap"}
    bad = client.get("/v1/offers", params={"max_price": "-1"})
    assert bad.status_code == 422 and bad.json()["field"] == "max_price"
    out = cli("offers", "--max-price", "2", "--json")
    assert out.exit_code == 0, out.output
    assert '"cheap"' in out.output and '"dear"' not in out.output
    refused = cli("offers", "--max-price", "free")
    assert refused.exit_code != 0 and "--max-price" in refused.output

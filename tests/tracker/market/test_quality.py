"""Availability and quality filters on SQLite and Postgres: one meaning (tracker.market.quality) for offer
queries (SQL), rankings (the live table's numpy columns), the API and the CLI — including offers that do
not state an attribute, cloud providers vouching for their own machines, and malformed values."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.market.live import LiveOffers
from tracker.market.offers import OfferFilters, current_offers
from tracker.market.rank import RankFilters, filter_mask
from tracker.storage.engine import session_scope

VAST_GOOD = {"verification": "verified", "hosting": "datacenter", "reliability": 0.99}
# key → (provider, attributes, available)
OFFERS: dict[str, tuple[str, dict, bool | None]] = {
    "v-good": ("vastai", VAST_GOOD, True),
    "v-bad": ("vastai", {"verification": "unverified", "hosting": "consumer", "reliability": 0.9}, True),
    "v-none": ("vastai", {}, None),  # states nothing: a marketplace host is not vouched for
    "v-odd": ("vastai", {"verification": "deverified", "hosting": 1, "reliability": "n/a"}, False),
    "v-range": ("vastai", {"verification": "verified", "reliability": 1.5}, True),  # 1.5: not a score
    "rp-secure": ("runpod", {"cloud": "secure"}, True),
    "rp-community": ("runpod", {"cloud": "community"}, True),
    "rp-community-dc": ("runpod", {"cloud": "community", "hosting": "datacenter", "reliability": 0.97}, True),
    "aws": ("aws", {}, None),  # a cloud's own machine, availability not stated
    "aws-low": ("aws", {"reliability": 0.5}, None),  # a stated score must meet the minimum, vouched or not
    "ref": ("reference", {}, None),  # a reference sheet prices no particular machine
}
ALL = set(OFFERS)
CASES: list[tuple[dict[str, object], set[str]]] = [  # (rank filters, the offer keys they keep)
    ({}, ALL),
    ({"available_only": True}, {"v-good", "v-bad", "v-range", "rp-secure", "rp-community", "rp-community-dc"}),
    ({"verified_only": True}, {"v-good", "v-range", "rp-secure", "aws", "aws-low"}),
    ({"datacenter_only": True}, {"v-good", "rp-secure", "rp-community-dc", "aws", "aws-low"}),
    ({"min_reliability": 0.95}, {"v-good", "rp-secure", "rp-community-dc", "aws"}),
    ({"min_reliability": 0.0}, {"v-good", "v-bad", "rp-secure", "rp-community-dc", "aws", "aws-low"}),
    ({"cloud": "secure"}, {"rp-secure", "aws", "aws-low"}),
    ({"cloud": "community"}, {"rp-community", "rp-community-dc"}),
    (
        {"verified_only": True, "datacenter_only": True, "min_reliability": 0.95, "available_only": True},
        {"v-good", "rp-secure"},
    ),
]


def seed(engine, settings, clock):
    for provider in sorted({p for p, _, _ in OFFERS.values()}):
        # Distinct prices: a batch of identical prices is quarantined as a parser bug.
        offers = [
            offer(k, f"{8 + i / 100:.2f}", attributes=a, available=av)
            for i, (k, (p, a, av)) in enumerate(OFFERS.items())
            if p == provider
        ]
        assert do_ingest(engine, settings, clock, batch(*offers), provider=provider).status == "ok"


@pytest.mark.parametrize(("filters", "expected"), CASES, ids=[str(f) for f, _ in CASES])
def test_sql_and_live_table_agree_with_the_rules(engine, settings, filters, expected):
    clock = FakeClock()
    seed(engine, settings, clock)
    with session_scope(engine) as s:
        sql = {o.offer_key for o in current_offers(s, OfferFilters(**filters))}
        _, table = LiveOffers().frame(engine, s)  # loaded now, from this test's offers
        keep = filter_mask(table, np.ones(len(table), dtype=bool), RankFilters(**filters))
        live = set(table["offer_key"][keep].tolist())
    assert sql == expected
    assert live == expected


def test_effective_values_in_the_live_table(engine, settings):
    seed(engine, settings, FakeClock())
    with session_scope(engine) as s:
        _, t = LiveOffers().frame(engine, s)
        row = {k: i for i, k in enumerate(t["offer_key"].tolist())}
        got = {k: (t["verification"][i], t["hosting"][i], t["cloud"][i]) for k, i in row.items()}
        assert got["v-good"] == ("verified", "datacenter", None)
        assert got["v-odd"] == ("deverified", None, None)  # hosting 1 is no hosting value
        assert got["rp-community"] == (None, None, "community")
        assert got["aws"] == ("verified", "datacenter", "secure")
        assert got["ref"] == (None, None, None)
        assert t["reliability_f"][row["v-good"]] == 0.99 and np.isnan(t["reliability_f"][row["v-odd"]])


def test_bad_filter_values_are_refused():
    with pytest.raises(ValueError, match="min_reliability"):
        OfferFilters(min_reliability=1.5)
    with pytest.raises(ValueError, match="cloud"):
        RankFilters(cloud="private")


@pytest.fixture
def client(engine, settings):
    from api.app import create_app

    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as c:
        yield c


def test_api_offers_and_rank(engine, settings, client):
    seed(engine, settings, FakeClock(utcnow()))
    keys = lambda rows, field="offer_key": {r[field] for r in rows}  # noqa: E731
    assert keys(client.get("/v1/offers", params={"available": True}).json()["offers"]) == CASES[1][1]
    assert keys(client.get("/v1/offers", params={"verified": True}).json()["offers"]) == CASES[2][1]
    assert keys(client.get("/v1/offers", params={"datacenter": True, "min_reliability": 0.95}).json()["offers"]) == {
        "v-good",
        "rp-secure",
        "rp-community-dc",
        "aws",
    }
    assert keys(client.get("/v1/offers", params={"cloud": "community"}).json()["offers"]) == CASES[7][1]
    assert client.get("/v1/offers", params={"cloud": "private"}).status_code == 422
    assert client.get("/v1/offers", params={"min_reliability": 2}).status_code == 422

    job = {
        "model": "llama-3.1-8b",
        "method": "qlora",
        "examples": 5000,
        "tokens_per_example": 1500,
        "epochs": 1,
        "assumptions": "seed",
        "include_unfit": True,
        "limit": 100,
        "include_stale": True,  # the reference sheet is past its age; these cases are about quality
    }
    for filters, expected in CASES:
        r = client.post("/v1/rank", json=job | filters)
        assert r.status_code == 200, r.text
        assert keys(r.json()["rows"]) == expected, filters
    rows = client.post("/v1/rank", json=job | {"verified_only": True}).json()["rows"]
    aws = next(r for r in rows if r["offer_key"] == "aws")
    assert (aws["verification"], aws["hosting"], aws["cloud"], aws["reliability"]) == (
        "verified",
        "datacenter",
        "secure",
        None,
    )
    assert next(r for r in rows if r["offer_key"] == "v-good")["reliability"] == 0.99
    assert client.post("/v1/rank", json=job | {"cloud": "private"}).status_code == 422
    assert client.post("/v1/rank", json=job | {"min_reliability": -0.1}).status_code == 422


def test_cli_cheapest_and_offers(engine, settings, cli):
    seed(engine, settings, FakeClock(utcnow()))
    job = ["--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "1M", "--show-unfit", "--top", "100", "--json"]
    out = cli("cheapest", *job, "--available")
    assert out.exit_code == 0, out.output
    assert {r["offer_key"] for r in json.loads(out.output)} == CASES[1][1]
    out = cli("cheapest", *job, "--verified", "--datacenter", "--min-reliability", "0.95", "--available")
    assert {r["offer_key"] for r in json.loads(out.output)} == CASES[-1][1]
    assert cli("cheapest", *job, "--cloud", "private").exit_code == 2
    out = cli("offers", "--cloud", "secure", "--json")
    assert out.exit_code == 0, out.output
    assert {r["offer_key"] for r in json.loads(out.output)} == CASES[6][1]
    out = cli("offers", "--verified", "--available", "--min-gpus", "1", "--json")
    assert {r["offer_key"] for r in json.loads(out.output)} == {"v-good", "v-range", "rp-secure"}
    assert Decimal(json.loads(out.output)[0]["price_per_hour"]) == Decimal("8")  # v-good, the cheapest

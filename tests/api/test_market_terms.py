"""GET /v1/market/terms, and the term a reserved history needs: the term curve over a seeded database,
bad input answered 4xx naming the field."""

from __future__ import annotations

import pytest

from tests.factories.api import seeded_client
from tracker.market.responses import MarketTerms


@pytest.fixture
def client(engine, settings):
    with seeded_client(engine, settings) as c:
        yield c


def test_the_term_curve_of_a_card(client):
    r = client.get("/v1/market/terms", params={"gpu": "H100", "days": 7})
    assert r.status_code == 200, r.text
    body = MarketTerms.model_validate(r.json())
    assert body.cards and body.days == 7
    for card in body.cards:
        labels = [p.label for p in card.terms]
        assert labels[:2] == ["on_demand", "spot"] and {"1d", "7d", "1mo", "3mo", "1y", "3y"} <= set(labels)
        hours = [p.commitment_hours or 0 for p in card.terms if p.pricing == "reserved"]
        assert hours == sorted(hours)  # the curve runs by commitment length
        assert all(p.offers == 0 or p.min is not None for p in card.terms)
        assert card.history is not None and len(card.history) >= len(card.terms)


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "field"),
    [
        ("get", "/v1/market/terms", {"params": {}}, "gpu"),
        ("get", "/v1/market/terms", {"params": {"gpu": "H100", "days": 0}}, "days"),
        ("get", "/v1/market/history", {"params": {"gpu": "H100", "pricing": "reserved"}}, "term"),
        ("get", "/v1/market/history", {"params": {"gpu": "H100", "pricing": "reserved", "term": "soon"}}, "term"),
        ("get", "/v1/market/history", {"params": {"gpu": "H100", "term": "1y"}}, "term"),
        (
            "post",
            "/v1/rank/history",
            {"json": {"model": "llama-3.1-8b", "method": "qlora", "tokens": "1M", "pricing": "reserved"}},
            "term",
        ),
    ],
)
def test_bad_input_is_4xx_naming_the_field(client, method, path, kwargs, field):
    r = getattr(client, method)(path, **kwargs)
    assert r.status_code == 422, r.text
    assert field in r.text and "Traceback" not in r.text


def test_a_reserved_history_of_one_term(client):
    r = client.get("/v1/market/history", params={"gpu": "H100", "pricing": "reserved", "term": "12mo", "days": 7})
    assert r.status_code == 200, r.text
    assert r.json()["reserved_term"] == "1y"
    job = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "1M", "pricing": "reserved", "term": "3y"}
    r = client.post("/v1/rank/history", json=job | {"gpu": "H100", "days": 7})
    assert r.status_code == 200, r.text
    assert r.json()["reserved_term"] == "3y"

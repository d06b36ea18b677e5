"""The HTTP API over a seeded database: shapes, filters, and behaviour at the edges."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from tests.factories.api import seeded_client
from tracker.config import Settings
from tracker.storage.engine import make_engine


@pytest.fixture
def client(engine, settings):
    with seeded_client(engine, settings) as c:
        yield c


def test_healthz(client):
    assert client.get("/healthz").json()["status"] == "ok"


def test_offers_filters_and_pagination(client):
    body = client.get("/v1/offers", params={"gpu": "H100", "pricing": "on_demand"}).json()
    assert body["count"] >= 3 and all(o["gpu_family"] == "H100" for o in body["offers"])
    assert all(o["pricing"] == "on_demand" for o in body["offers"])
    page = client.get("/v1/offers", params={"limit": 2, "offset": 1}).json()
    full = client.get("/v1/offers").json()
    assert [o["id"] for o in page["offers"]] == [o["id"] for o in full["offers"][1:3]]
    no_ref = client.get("/v1/offers", params={"include_reference": False}).json()
    assert all(not o["reference"] for o in no_ref["offers"]) and no_ref["count"] < full["count"]
    us = client.get("/v1/offers", params={"region": "us"}).json()
    assert us["offers"] and all(o["region"].startswith("us-") for o in us["offers"])


def test_market_separates_pricing_and_form_factor(client):
    cards = client.get("/v1/market", params={"gpu": "H100"}).json()["cards"]
    keys = {(c["gpu"], c["pricing"]) for c in cards}
    assert ("H100-SXM-80GB", "on_demand") in keys and ("H100-SXM-80GB", "spot") in keys
    assert ("H100-PCIE-80GB", "on_demand") in keys
    sxm = next(c for c in cards if c["gpu"] == "H100-SXM-80GB" and c["pricing"] == "on_demand")
    # reference $2.69 and the Vast 8×H100 at $15.2011/8 = $1.900138
    assert (sxm["offers"], sxm["providers"], sxm["min"], sxm["max"]) == (2, 2, 1.900138, 2.69)
    ref_only = client.get("/v1/market", params={"gpu": "RTX 6000 Ada"}).json()["cards"]
    assert ref_only[0]["reference_only"] is True
    assert client.get("/v1/market", params={"gpu": "RTX 6000 Ada", "include_reference": False}).json()["cards"] == []


def test_market_history_json_and_csv(client):
    body = client.get("/v1/market/history", params={"gpu": "H100 SXM", "interval": "1h"}).json()
    assert body["gpu_ids"] == ["H100-SXM-80GB"] and body["buckets"]
    csv = client.get("/v1/market/history", params={"gpu": "H100 SXM", "interval": "1h", "format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    lines = csv.text.strip().splitlines()
    assert lines[0] == "bucket,min,p25,median,p75,max,offers,providers" and len(lines) == len(body["buckets"]) + 1


def test_rank_and_best_per_card(client):
    job = {
        "model": "llama-3.1-8b",
        "method": "qlora",
        "examples": 5000,
        "tokens_per_example": 1500,
        "epochs": 3,
        "assumptions": "seed",
    }
    body = client.post("/v1/rank", json=job).json()
    rows = body["rows"]
    assert body["assumptions"] == "seed" and rows
    costs = [r["cost_per_run"] for r in rows]
    assert costs == sorted(costs)
    for field in (
        "provider",
        "gpu",
        "gpus",
        "fits",
        "vram_gb",
        "tokens_per_second",
        "hours",
        "cost_per_run",
        "usd_per_mtok",
        "price_age_s",
        "pricing",
    ):
        assert field in rows[0]
    best = client.post("/v1/rank", json=job | {"best_per_card": True}).json()["rows"]
    assert len({r["gpu"] for r in best}) == len(best)
    spot = client.post("/v1/rank", json=job | {"pricing": ["spot"], "providers": ["vastai"]}).json()["rows"]
    assert spot and all(r["pricing"] == "spot" and r["provider"] == "vastai" for r in spot)


def test_rank_history(client):
    job = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M", "assumptions": "seed", "gpu": "H100"}
    body = client.post("/v1/rank/history", json=job | {"days": 7}).json()
    sxm = next(s for s in body["series"] if s["gpu"] == "H100-SXM-80GB")
    assert sxm["fits"] and sxm["points"] and sxm["gpus"] == 1


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "field"),
    [
        ("get", "/v1/offers", {"params": {"gpu": "H100 SXX"}}, 404, "gpu"),
        ("get", "/v1/offers", {"params": {"pricing": "free"}}, 422, "pricing"),
        ("get", "/v1/offers", {"params": {"limit": 0}}, 422, "limit"),
        ("get", "/v1/market/history", {"params": {}}, 422, "gpu"),
        ("get", "/v1/market/history", {"params": {"gpu": "H100", "interval": "1m"}}, 422, "interval"),
        ("post", "/v1/rank", {"json": {"model": "llama-9", "tokens": "1M"}}, 404, "model"),
        ("post", "/v1/rank", {"json": {"model": "llama-3.1-8b", "tokens": 0}}, 422, "tokens"),
        ("post", "/v1/rank", {"json": {"model": "llama-3.1-8b", "tokens": "1M", "rank": 0}}, 422, "rank"),
        ("post", "/v1/rank", {"json": {"model": "llama-3.1-8b", "tokens": "1M", "seq_len": 10**6}}, 422, "seq_len"),
        ("post", "/v1/rank", {"json": {"model": "llama-3.1-8b", "tokens": "1M", "gpu": "RTX 4O90"}}, 404, "gpu"),
    ],
)
def test_bad_input_is_4xx_naming_the_field(client, method, path, kwargs, status, field):
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    text = response.text
    assert field in text and "Traceback" not in text
    if status == 404:
        assert body.get("suggestions")


def test_history_rejects_naive_and_inverted_ranges(client):
    r = client.get("/v1/market/history", params={"gpu": "H100", "start": "2026-01-02T00:00:00"})
    assert r.status_code == 422 and "timezone" in r.text
    r = client.get(
        "/v1/market/history", params={"gpu": "H100", "start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}
    )
    assert r.status_code == 422 and "before" in r.text


def test_database_down_is_503_json(tmp_path):
    settings = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://nobody@127.0.0.1:1/none")
    app = create_app(settings, make_engine(settings.resolved_database_url()))
    with TestClient(app, raise_server_exceptions=False) as c:
        for path in ("/v1/offers", "/v1/market", "/healthz", "/v1/providers"):
            r = c.get(path)
            assert r.status_code == 503, (path, r.status_code, r.text)
            assert r.json()["detail"].startswith("database")


def test_providers_endpoint(client):
    rows = {p["name"]: p for p in client.get("/v1/providers").json()["providers"]}
    assert rows["vastai"]["last_run"]["status"] == "ok" and rows["vastai"]["stale"] is False
    assert rows["lambdalabs"]["last_run"] is None and rows["lambdalabs"]["stale"] is True
    assert rows["reference"]["reference"] is True

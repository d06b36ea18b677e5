"""The API side of issue #14's market work: `aggregated=` on offers, the market, the overview and rankings
(a bad value is a 422 naming the field), and every rate sheet's age in `/v1/market` (both backends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.factories.api import seeded_client
from tracker.config import Settings

JOB = {"model": "llama-3.1-8b", "tokens": "1M"}


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    # A one-day limit: the seed's reference sheet (read 2026-08-06) is stale on any day this runs.
    with seeded_client(engine, settings.model_copy(update={"sheet_max_age_days": 1})) as c:
        yield c


def test_market_reports_each_sheets_age(client: TestClient) -> None:
    body = client.get("/v1/market").json()
    ages = {a["provider"]: a for a in body["sheets"]}
    assert {"reference", "crusoe", "coreweave", "modal", "paperspace", "replicate"} <= set(ages)
    assert ages["reference"]["as_of"] == "2026-08-06" and ages["reference"]["stale"] is True
    counted = [c for c in body["cards"] if "reference" in c["stale_sheets"]]
    assert counted and all(c["offers"] >= 1 for c in counted)  # stale prices still count, named as stale
    assert client.get("/v1/market", params={"include_reference": False}).json()["sheets"] == []


@pytest.mark.parametrize("path", ["/v1/market", "/v1/offers", "/v1/market/overview"])
def test_aggregated_choices(client: TestClient, path: str) -> None:
    for mode in ("include", "exclude", "dedupe"):
        assert client.get(path, params={"aggregated": mode}).status_code == 200, mode
    refused = client.get(path, params={"aggregated": "sometimes"})
    assert refused.status_code == 422 and refused.json()["field"] == "aggregated", refused.text


def test_rank_takes_the_choice_and_shows_the_reseller(client: TestClient) -> None:
    ranked = client.post("/v1/rank", json=JOB | {"aggregated": "dedupe"})
    assert ranked.status_code == 200, ranked.text
    assert all("via" in r and "upstream" in r for r in ranked.json()["rows"])
    refused = client.post("/v1/rank", json=JOB | {"aggregated": 3})
    assert refused.status_code == 422 and refused.json()["field"] == "aggregated", refused.text
    offers = client.get("/v1/offers").json()["offers"]
    assert offers and all("via" in o and "upstream" in o for o in offers)

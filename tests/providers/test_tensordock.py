"""TensorDock v2 adapter against its bundled cassette (providers/cassettes/tensordock.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.tensordock import TensorDock
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing

SECRET = "td-key-5c4b3a2910"
DALLAS = "1a7f3e0c-55b1-4f55-8f77-0f1c1b1a2d01"
FRANKFURT = "9b42c6d8-0e2a-4a57-a8b4-6d3f6b1c9e02"


@pytest.fixture(scope="module")
def result():
    return replay(TensorDock)


def by_key(result):
    return {o.key: o for o in result.offers}


def fetch_with(cassette: Cassette, credentials: dict[str, str]) -> list[httpx.Request]:
    seen: list[httpx.Request] = []

    class Spy(ReplayTransport):
        async def handle_async_request(self, request):
            seen.append(request)
            return await super().handle_async_request(request)

    async def go():
        async with httpx.AsyncClient(transport=Spy(cassette)) as client:
            await TensorDock().fetch(FetchContext(client=client, credentials=credentials, backoff_base_s=0))

    asyncio.run(go())
    return seen


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"RTX4090-24GB", "H100-SXM-80GB", "RTXA6000-48GB", "L40-48GB", "A100-PCIE-80GB"},
        allowed_unknown={"NVIDIA GeForce RTX 3060 Ti PCIe 8GB"},  # no RTX 3060 Ti in the catalog
    )
    assert resolved[f"{DALLAS}:geforcertx4090-pcie-24gb:1"] == "RTX4090-24GB"
    assert len(result.offers) == 24
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_per_gpu_price_times_count(result):
    offers = by_key(result)
    one, four = offers[f"{DALLAS}:geforcertx4090-pcie-24gb:1"], offers[f"{DALLAS}:geforcertx4090-pcie-24gb:4"]
    assert one.price_per_hour == Decimal("0.35")
    assert four.gpu_count == 4 and four.price_per_hour == Decimal("1.40")
    assert four.price_per_gpu_hour == Decimal("0.35")
    assert four.gpu_memory_gb == 24
    assert four.attributes["price_scope"] == "gpu_only"
    assert four.attributes["per_vcpu_hr"] == "0.003"


def test_counts_run_to_max_count_capped_at_eight(result):
    def counts(v0):
        return sorted(int(o.gpu_count) for o in result.offers if o.attributes["v0_name"] == v0)

    assert counts("geforcertx4090-pcie-24gb") == [1, 2, 3, 4]
    assert counts("rtxa6000-pcie-48gb") == [1, 2]
    assert counts("a100-pcie-80gb") == list(range(1, 9))  # max_count 10, capped at 8
    assert by_key(result)[f"{FRANKFURT}:a100-pcie-80gb:8"].price_per_hour == Decimal("9.60")


def test_region_availability_and_skips(result):
    offers = by_key(result)
    assert offers[f"{DALLAS}:h100-sxm5-80gb:1"].region == "united-states-texas-dallas"
    assert offers[f"{FRANKFURT}:rtxa6000-pcie-48gb:1"].region == "germany-hesse-frankfurt"
    assert offers[f"{DALLAS}:h100-sxm5-80gb:8"].available is True
    sold_out = offers[f"{FRANKFURT}:l40-pcie-48gb:1"]  # max_count 0: one offer, unavailable
    assert sold_out.available is False and f"{FRANKFURT}:l40-pcie-48gb:2" not in offers
    assert f"{FRANKFURT}:v100-pcie-16gb: no price" in result.skipped


def test_bearer_header():
    seen = fetch_with(Cassette.load(bundled_cassette("tensordock")), {"TENSORDOCK_API_KEY": SECRET})
    assert len(seen) == 2  # 429, then the retry
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)


def test_missing_credentials():
    with pytest.raises(MissingCredentials, match="TENSORDOCK_API_KEY"):
        fetch_with(Cassette.load(bundled_cassette("tensordock")), {})


def test_secret_not_in_errors():
    def mutate(raw):
        for interaction in raw["interactions"]:
            interaction["response"] = {"status": 401, "headers": {}, "json": {"message": "Unauthorized"}}

    with pytest.raises(ProviderError) as info:
        fetch_with(mutated_cassette(TensorDock, mutate), {"TENSORDOCK_API_KEY": SECRET})
    assert "HTTP 401" in str(info.value) and SECRET not in str(info.value)


def test_truncated_json_raises():
    def mutate(raw):
        response = raw["interactions"][1]["response"]
        del response["json"]
        response["text"] = '{"data": {"locations": [{"id": "1a7f'

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(TensorDock, mutated_cassette(TensorDock, mutate))


def test_schema_change_raises():
    def mutate(raw):
        del raw["interactions"][1]["response"]["json"]["data"]["locations"][0]["gpus"][0]["price_per_hr"]

    with pytest.raises(ProviderError, match="price_per_hr"):
        replay(TensorDock, mutated_cassette(TensorDock, mutate))


def test_repeated_500_raises():
    def mutate(raw):
        for interaction in raw["interactions"]:
            interaction["response"] = {"status": 500, "headers": {}, "text": "internal"}

    with pytest.raises(ProviderError, match="gave up after 4 attempts"):
        replay(TensorDock, mutated_cassette(TensorDock, mutate))

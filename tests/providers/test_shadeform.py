"""Shadeform adapter against its bundled cassette (providers/cassettes/shadeform.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.shadeform import Shadeform, gpu_name
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing

SECRET = "sf-live-9f8e7d6c5b4a"


@pytest.fixture(scope="module")
def result():
    return replay(Shadeform)


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
            await Shadeform().fetch(FetchContext(client=client, credentials=credentials, backoff_base_s=0))

    asyncio.run(go())
    return seen


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB", "H100-PCIE-80GB", "A100-SXM-80GB", "RTXA6000-48GB",
            "L40S-48GB", "MI300X-192GB", "GAUDI2-96GB",
        },
    )  # fmt: skip
    assert resolved["hyperstack:H100:canada-1"] == "H100-PCIE-80GB"
    assert resolved["lambdalabs:H100_sxm5x8:us-east-1"] == "H100-SXM-80GB"
    assert len(result.offers) == 9
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_cents_per_instance(result):
    box = by_key(result)["lambdalabs:H100_sxm5x8:us-east-1"]
    assert box.gpu_count == 8
    assert box.price_per_hour == Decimal("23.92")  # 2392 cents for the 8-GPU instance
    assert box.price_per_gpu_hour == Decimal("2.99")
    assert (box.vcpus, box.ram_gb, box.gpu_memory_gb) == (208, 1800, 80)
    two = by_key(result)["datacrunch:A100_80G_sxm4x2:fin-01"]
    assert two.price_per_hour == Decimal("3.78") and two.price_per_gpu_hour == Decimal("1.89")


def test_one_offer_per_cloud_type_region_with_availability(result):
    offers = by_key(result)
    assert offers["lambdalabs:H100_sxm5x8:us-east-1"].available is True
    assert offers["lambdalabs:H100_sxm5x8:us-west-1"].available is False  # kept for history
    assert offers["vultr:L40S:ewr"].available is False
    assert offers["datacrunch:A100_80G_sxm4x2:fin-01"].region == "fin-01"
    box = offers["crusoe:MI300X_x8:us-east1-a"]
    assert box.attributes["cloud"] == "crusoe"
    assert box.attributes["cloud_instance_type"] == "mi300x-192gb-ib.8x"
    assert "paperspace:A4000: no regions listed" in result.skipped
    assert "latitude:H200_sxm5x8: no price" in result.skipped
    assert not any(k.startswith("hyperstack:CPU") for k in offers)


def test_form_factor_in_raw_name(result):
    assert gpu_name("A100_80G", "sxm4", Decimal(80)) == "A100 SXM 80GB"
    assert gpu_name("H100", "pcie", Decimal(80)) == "H100 PCIe 80GB"
    assert gpu_name("A10G", None, Decimal(24)) == "A10G 24GB"
    box = by_key(result)["datacrunch:A100_80G_sxm4x2:fin-01"]
    assert (box.gpu_name, box.attributes["raw_gpu"]) == ("A100 SXM 80GB", "A100_80G")


def test_api_key_header():
    seen = fetch_with(Cassette.load(bundled_cassette("shadeform")), {"SHADEFORM_API_KEY": SECRET})
    assert len(seen) == 2  # 429, then the retry
    assert all(r.headers["x-api-key"] == SECRET for r in seen)
    assert all("available" not in r.url.params for r in seen)  # every type, not only available ones


def test_missing_credentials():
    with pytest.raises(MissingCredentials, match="SHADEFORM_API_KEY"):
        fetch_with(Cassette.load(bundled_cassette("shadeform")), {})


def test_secret_not_in_errors():
    def mutate(raw):
        for interaction in raw["interactions"]:
            interaction["response"] = {"status": 401, "headers": {}, "json": {"error": "invalid api key"}}

    with pytest.raises(ProviderError) as info:
        fetch_with(mutated_cassette(Shadeform, mutate), {"SHADEFORM_API_KEY": SECRET})
    assert "HTTP 401" in str(info.value) and SECRET not in str(info.value)


def test_truncated_json_raises():
    def mutate(raw):
        response = raw["interactions"][1]["response"]
        del response["json"]
        response["text"] = '{"instance_types": [{"cloud": "lambdalabs", "shade_'

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(Shadeform, mutated_cassette(Shadeform, mutate))


def test_schema_change_raises():
    def mutate(raw):
        del raw["interactions"][1]["response"]["json"]["instance_types"][0]["configuration"]

    with pytest.raises(ProviderError, match="configuration"):
        replay(Shadeform, mutated_cassette(Shadeform, mutate))


def test_repeated_500_raises():
    def mutate(raw):
        for interaction in raw["interactions"]:
            interaction["response"] = {"status": 500, "headers": {}, "text": "internal error"}

    with pytest.raises(ProviderError, match="gave up after 4 attempts") as info:
        replay(Shadeform, mutated_cassette(Shadeform, mutate), SHADEFORM_API_KEY=SECRET)
    assert SECRET not in str(info.value)

"""RunPod adapter against its bundled schema-faithful cassette (providers.md B.2)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import pytest

from providers.adapters.runpod import META_QUERY, Location, RunPod, parse_metadata, parse_prices
from providers.cassette import Cassette
from providers.contract import Pricing, ProviderError, ProviderKind, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import (
    SpyTransport,
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay_fixture,
)

H100 = "NVIDIA H100 80GB HBM3"
RTX4090 = "NVIDIA GeForce RTX 4090"


class KeyStrippingSpy(SpyTransport):
    """Records each request as sent, then matches it without `api_key` (the cassette was recorded without)."""

    def as_recorded(self, request: httpx.Request) -> httpx.Request:
        url = request.url.copy_remove_param("api_key")
        return httpx.Request(request.method, url, headers=request.headers, content=request.content)


def run(
    cassette: Cassette | None = None, credentials: dict[str, str] | None = None
) -> tuple[ScrapeResult, list[httpx.Request]]:
    return fetch_recording(RunPod, credentials, cassette, transport=KeyStrippingSpy)


result = replay_fixture(RunPod)


@pytest.fixture(scope="module")
def offers(result: ScrapeResult) -> dict[str, Any]:
    return by_key(result)


def test_registered_without_required_credentials() -> None:
    assert get_provider("runpod") is RunPod
    assert RunPod.credentials == ()
    assert RunPod.kind is ProviderKind.cloud
    assert RunPod.describe()["default_interval_s"] == 3600


def test_integrity(result: ScrapeResult) -> None:
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "H200-SXM-141GB",
            "RTX4090-24GB",
            "RTX6000ADA-48GB",
            "L40S-48GB",
            "MI300X-192GB",
            "RTX3070-8GB",
        },
        allowed_unknown={"GTX 1080 Ti"},
        min_offers=20,
    )
    assert resolved[f"{H100}:8:secure:US-TX-3"] == "H100-SXM-80GB"
    assert resolved["NVIDIA H100 PCIe:1:secure:EU-RO-1"] == "H100-PCIE-80GB"
    assert len(result.offers) == 26


def test_per_gpu_price_times_count(offers: dict[str, Any]) -> None:
    secure = offers[f"{H100}:2:secure:US-TX-3"]
    assert secure.price_per_hour == Decimal("5.38")
    assert secure.price_per_gpu_hour == Decimal("2.69")
    assert secure.gpu_count == Decimal(2)
    assert secure.gpu_name == "H100 SXM"
    assert secure.gpu_memory_gb == Decimal(80)
    assert (secure.vcpus, secure.ram_gb) == (Decimal(32), Decimal(250))
    assert secure.instance_type == "2x H100 SXM"
    assert secure.attributes == {"gpu_id": H100, "cloud": "secure", "stock_status": "High", "manufacturer": "Nvidia"}
    eight = offers[f"{H100}:8:secure:US-TX-3"]
    assert eight.price_per_hour == Decimal("21.52")
    community = offers[f"{RTX4090}:2:community:US"]
    assert community.price_per_hour == Decimal("0.68")  # communityPrice, not securePrice
    assert community.attributes["cloud"] == "community"


def test_regions_and_availability(result: ScrapeResult, offers: dict[str, Any]) -> None:
    # listed datacenters (secure) and non-null country codes (community); US-XX-9 is unlisted
    assert {o.region for o in result.offers} == {"us-tx-3", "eu-ro-1", "us", "cz"}
    assert all(o.available is True for o in result.offers)
    assert offers["NVIDIA H200:1:secure:US-TX-3"].attributes["stock_status"] == "Low"


def test_no_spot_offers(result: ScrapeResult) -> None:
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


def test_out_of_stock_and_oversize_sizes_dropped(offers: dict[str, Any]) -> None:
    assert f"{RTX4090}:1:secure:US-TX-3" not in offers  # stockStatus null
    assert "NVIDIA H200:2:secure:US-TX-3" not in offers  # stockStatus null
    assert "NVIDIA L40S:2:secure:EU-RO-1" not in offers  # stockStatus null
    assert f"{RTX4090}:8:secure:US-TX-3" not in offers  # maxGpuCountSecureCloud = 6
    assert f"{RTX4090}:8:community:US" in offers  # maxGpuCountCommunityCloud = 8
    assert "NVIDIA H100 PCIe:8:community:US" not in offers  # maxGpuCountCommunityCloud = 4
    assert "NVIDIA H100 PCIe:4:community:US" in offers
    assert "AMD Instinct MI300X OAM:1:community:US" not in offers  # secure cloud only
    assert "NVIDIA GeForce RTX 3070:1:community:US" in offers


def test_skipped_reasons(result: ScrapeResult) -> None:
    assert any("'NVIDIA Mystery X1' missing from the metadata query" in s for s in result.skipped)
    assert any("A100 SXM has no community price" in s for s in result.skipped)
    assert len(result.skipped) == 2


def test_call_budget_and_retry() -> None:
    result, requests = run()
    bodies = [json.loads(r.content) for r in requests]
    assert bodies[0] == {"query": META_QUERY}
    inputs = [b["variables"]["lowestPriceInput"] for b in bodies[1:]]
    # 4 sizes × (2 listed datacenters + 2 country codes), plus one retry after the recorded 429
    assert len(inputs) == 17
    assert {i["gpuCount"] for i in inputs} == {1, 2, 4, 8}
    assert {i.get("dataCenterId") for i in inputs if i["secureCloud"]} == {"US-TX-3", "EU-RO-1"}
    assert {i.get("countryCode") for i in inputs if not i["secureCloud"]} == {"US", "CZ"}
    retried = {"secureCloud": False, "countryCode": "CZ", "gpuCount": 2}
    assert inputs.count(retried) == 2
    assert f"{RTX4090}:2:community:CZ" in {o.key for o in result.offers}  # served after the 429


def test_anonymous_by_default_and_optional_key_as_query_param() -> None:
    _, anonymous = run()
    assert all("api_key" not in r.url.params and "authorization" not in r.headers for r in anonymous)
    _, keyed = run(credentials={"RUNPOD_API_KEY": "rp-secret-123"})
    assert all(r.url.params["api_key"] == "rp-secret-123" for r in keyed)


def test_key_never_in_error_message() -> None:
    fail = mutated_cassette(RunPod, answer(500, text="upstream error", at=0))
    with pytest.raises(ProviderError) as err:
        run(fail, credentials={"RUNPOD_API_KEY": "rp-secret-123"})
    assert "rp-secret-123" not in str(err.value)
    assert "gave up after 4 attempts" in str(err.value)


def test_truncated_json_raises() -> None:
    assert_replay_raises(RunPod, answer(200, text='{"data": {"countryCodes": ["US"', at=0), "invalid JSON")


def test_missing_metadata_key_raises() -> None:
    assert_replay_raises(RunPod, json_without(0, "data", "dataCenters"), "'dataCenters' missing")


def test_missing_price_field_raises() -> None:
    no_stock = json_without(1, "data", "gpuTypes", 0, "lowestPrice", "stockStatus")
    assert_replay_raises(RunPod, no_stock, "'stockStatus' missing")


def test_graphql_errors_raise() -> None:
    errors = json_with(1, value={"errors": [{"message": "Unknown argument gpuCount"}]})
    assert_replay_raises(RunPod, errors, r"GraphQL error.*Unknown argument gpuCount")


def test_repeated_500_raises() -> None:
    assert_replay_raises(RunPod, answer(500, text="oops", at=slice(1, None)), "HTTP 500")


def test_min_pod_count_respected() -> None:
    meta = parse_metadata(
        {
            "data": {
                "countryCodes": [],
                "dataCenters": [],
                "gpuTypes": [
                    {
                        "id": "NVIDIA B200",
                        "displayName": "B200",
                        "memoryInGb": 180,
                        "maxGpuCount": 8,
                        "minPodGpuCount": 2,
                    },
                ],
            }
        }
    )
    assert meta.counts() == [1, 2, 4, 8]
    row = {
        "id": "NVIDIA B200",
        "securePrice": 5.99,
        "communityPrice": None,
        "lowestPrice": {"stockStatus": "High", "minVcpu": 28, "minMemory": 180},
    }
    one = parse_prices({"data": {"gpuTypes": [row]}}, meta, Location(True, "US-CA-2"), 1)
    two = parse_prices({"data": {"gpuTypes": [row]}}, meta, Location(True, "US-CA-2"), 2)
    assert one.offers == []
    assert [o.price_per_hour for o in two.offers] == [Decimal("11.98")]

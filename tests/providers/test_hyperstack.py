"""Hyperstack adapter against its bundled cassette (providers/cassettes/hyperstack.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.hyperstack import Hyperstack, memory_of
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing

FLAVORS, PRICEBOOK_502, PRICEBOOK = range(3)  # interaction indexes


class SpyTransport(ReplayTransport):
    """Replays the cassette and keeps every request the adapter sent."""

    def __init__(self, cassette: Cassette) -> None:
        super().__init__(cassette)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(request)


def fetch_with(credentials: dict[str, str], cassette: Cassette | None = None):
    spy = SpyTransport(cassette or Cassette.load(bundled_cassette("hyperstack")))

    async def go():
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=3, backoff_base_s=0)
            return await Hyperstack().fetch(ctx)

    return asyncio.run(go()), spy.requests


@pytest.fixture(scope="module")
def result():
    return replay(Hyperstack)


def by_key(result):
    return {o.key: o for o in result.offers}


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-PCIE-80GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "A100-PCIE-80GB",
            "L40-48GB",
            "RTXA6000-48GB",
            "RTXA4000-16GB",
        },
    )
    assert resolved["n3-H100x1:canada-1"] == "H100-PCIE-80GB"
    assert resolved["n3-H100-SXM5x8:us-1"] == "H100-SXM-80GB"
    assert resolved["n3-A100-NVLinkx8:norway-1"] == "A100-PCIE-80GB"
    assert len(result.offers) == 15
    assert result.skipped == ["A40: not in the pricebook"]


def test_pricebook_per_gpu_times_count(result):
    offers = by_key(result)
    eight = offers["n3-H100x8:canada-1"]
    assert eight.price_per_hour == Decimal("15.2")  # 8 × "1.900000000"
    assert eight.price_per_gpu_hour == Decimal("1.9")
    assert (eight.gpu_count, eight.gpu_memory_gb, eight.vcpus, eight.ram_gb) == (8, 80, 252, 1440)
    assert eight.gpu_name == "H100-80G-PCIe"  # passed on as Hyperstack spells it
    assert eight.attributes["price_per_gpu_hr"] == "1.9"
    h200 = offers["n3-H200-SXM5x8:us-1"]
    assert (h200.price_per_hour, h200.gpu_memory_gb) == (Decimal("28"), 141)
    discounted = offers["n3-RTX-A6000x1:norway-1"]
    assert discounted.price_per_hour == Decimal("0.4")
    assert discounted.attributes["original_value"] == "0.500000000"


def test_regions_and_stock(result):
    offers = by_key(result)
    assert offers["n3-H100x1:canada-1"].available is True
    assert offers["n3-H100x4:canada-1"].available is False
    assert offers["n3-H100x1:norway-1"].region == "norway-1"  # same flavor name, other region
    assert {o.region for o in result.offers} == {"canada-1", "norway-1", "us-1"}
    assert not any(o.instance_type.startswith("n1-cpu") for o in result.offers)  # CPU flavors skipped
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


@pytest.mark.parametrize(
    ("raw", "memory"),
    [
        ("H100-80G-PCIe", Decimal(80)),
        ("H100-80G-SXM5", Decimal(80)),
        ("A100-80G-PCIe-NVLink", Decimal(80)),
        ("H200-141G-SXM5", Decimal(141)),
        ("RTX-A6000", None),
        ("L40", None),
    ],
)
def test_memory_of(raw, memory):
    assert memory_of(raw) == memory


def test_api_key_header_and_never_in_errors():
    result, requests = fetch_with({"HYPERSTACK_API_KEY": "hs-key-7"})
    assert len(result.offers) == 15
    assert [r.url.path for r in requests] == ["/v1/core/flavors", "/v1/pricebook", "/v1/pricebook"]  # 502 retried
    assert {r.headers["api_key"] for r in requests} == {"hs-key-7"}

    def echo(raw):
        raw["interactions"][FLAVORS]["response"] = {
            "status": 401,
            "json": {"status": False, "message": "api_key hs-key-7 is invalid"},
        }

    with pytest.raises(ProviderError) as err:
        fetch_with({"HYPERSTACK_API_KEY": "hs-key-7"}, mutated_cassette(Hyperstack, echo))
    assert "HTTP 401" in str(err.value) and "hs-key-7" not in str(err.value)


def test_missing_credentials():
    with pytest.raises(MissingCredentials):
        fetch_with({})


def test_status_false_raises():
    def failed(raw):
        raw["interactions"][FLAVORS]["response"]["json"] = {"status": False, "message": "Environment not found"}

    with pytest.raises(ProviderError, match="flavors call failed: Environment not found"):
        replay(Hyperstack, mutated_cassette(Hyperstack, failed))


def test_truncated_json_raises():
    def truncate(raw):
        raw["interactions"][PRICEBOOK]["response"] = {"status": 200, "text": '[{"id": 1, "name": "H100-80G-PC'}

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(Hyperstack, mutated_cassette(Hyperstack, truncate))


def test_schema_change_raises():
    def no_count(raw):
        del raw["interactions"][FLAVORS]["response"]["json"]["data"][0]["flavors"][1]["gpu_count"]

    with pytest.raises(ProviderError, match="'gpu_count' missing"):
        replay(Hyperstack, mutated_cassette(Hyperstack, no_count))

    def renamed_value(raw):
        for entry in raw["interactions"][PRICEBOOK]["response"]["json"]:
            entry["price"] = entry.pop("value")

    with pytest.raises(ProviderError, match="'value' missing"):
        replay(Hyperstack, mutated_cassette(Hyperstack, renamed_value))

    def pricebook_object(raw):
        raw["interactions"][PRICEBOOK]["response"]["json"] = {"data": []}

    with pytest.raises(ProviderError, match="pricebook is not a list"):
        replay(Hyperstack, mutated_cassette(Hyperstack, pricebook_object))


def test_http_500_past_retries_raises():
    def always_500(raw):
        for interaction in raw["interactions"]:
            interaction["response"]["status"] = 500

    with pytest.raises(ProviderError, match="gave up after 4 attempts: HTTP 500"):
        replay(Hyperstack, mutated_cassette(Hyperstack, always_500))

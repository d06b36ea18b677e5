"""FluidStack adapter against its bundled cassette (providers/cassettes/fluidstack.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.fluidstack import FluidStack, memory_of
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing


class SpyTransport(ReplayTransport):
    """Replays the cassette and keeps every request the adapter sent."""

    def __init__(self, cassette: Cassette) -> None:
        super().__init__(cassette)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(request)


def fetch_with(credentials: dict[str, str], cassette: Cassette | None = None):
    spy = SpyTransport(cassette or Cassette.load(bundled_cassette("fluidstack")))

    async def go():
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=3, backoff_base_s=0)
            return await FluidStack().fetch(ctx)

    return asyncio.run(go()), spy.requests


@pytest.fixture(scope="module")
def result():
    return replay(FluidStack)


def by_key(result):
    return {o.key: o for o in result.offers}


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "A100-PCIE-80GB",
            "A100-PCIE-40GB",
            "RTXA6000-48GB",
            "RTXA5000-24GB",
            "L40-48GB",
            "V100-SXM-16GB",
            "A10-24GB",
        },
        # *_NVLINK_* is FluidStack's name for HGX boards: SXM, by the fluidstack naming convention.
        provider="fluidstack",
    )
    assert resolved["A100_NVLINK_80GB:8:finland"] == "A100-SXM-80GB"
    assert resolved["H100_SXM5_80GB:8:norway"] == "H100-SXM-80GB"
    assert resolved["Tesla_V100_SXM2_16GB:8:ohio"] == "V100-SXM-16GB"
    assert len(result.offers) == 36
    assert result.skipped == ["H200_SXM5_141GB: no price_per_gpu_hr"]


def test_per_gpu_price_times_count(result):
    offers = by_key(result)
    eight = offers["H100_SXM5_80GB:8:iceland"]
    assert eight.price_per_hour == Decimal("23.12")  # 8 × 2.89
    assert eight.price_per_gpu_hour == Decimal("2.89")
    assert (eight.gpu_count, eight.gpu_memory_gb) == (8, 80)
    assert eight.gpu_name == "H100_SXM5_80GB"  # passed on as FluidStack spells it
    assert eight.attributes["price_per_gpu_hr"] == "2.89"
    assert offers["A100_PCIE_40GB:2:canada"].price_per_hour == Decimal("2.20")
    counts = {int(o.gpu_count) for o in result.offers if o.gpu_name == "H100_SXM5_80GB"}
    assert counts == {1, 2, 4, 8}


def test_regions_and_availability(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.gpu_name == "H100_SXM5_80GB"} == {"norway", "iceland"}
    assert offers["H100_SXM5_80GB:1:norway"].available is True
    no_region = offers["A100_PCIE_80GB:4"]  # regions: []
    assert (no_region.region, no_region.available) == ("", None)
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


@pytest.mark.parametrize(
    ("raw", "memory"),
    [
        ("H100_SXM5_80GB", Decimal(80)),
        ("Tesla_V100_PCIE_16GB", Decimal(16)),
        ("A30_24GB", Decimal(24)),
        ("Quadro_RTX_4000_8GB", Decimal(8)),
        ("T4", None),
        ("80GB", None),
    ],
)
def test_memory_of(raw, memory):
    assert memory_of(raw) == memory


def test_api_key_header_after_429_and_never_in_errors():
    result, requests = fetch_with({"FLUIDSTACK_API_KEY": "fs-key-1"})
    assert len(result.offers) == 36
    assert [r.headers["api-key"] for r in requests] == ["fs-key-1"] * 2  # 429, then 200
    assert "authorization" not in requests[0].headers

    def echo(raw):
        raw["interactions"] = [
            {
                "request": raw["interactions"][0]["request"],
                "response": {"status": 401, "json": {"detail": "api key fs-key-1 is not valid"}},
            }
        ]

    with pytest.raises(ProviderError) as err:
        fetch_with({"FLUIDSTACK_API_KEY": "fs-key-1"}, mutated_cassette(FluidStack, echo))
    assert "HTTP 401" in str(err.value) and "fs-key-1" not in str(err.value)


def test_missing_credentials():
    with pytest.raises(MissingCredentials):
        fetch_with({})


def test_truncated_json_raises():
    def truncate(raw):
        raw["interactions"][1]["response"] = {"status": 200, "text": '[{"gpu_type": "H100_SXM5_80GB", "gpu_co'}

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(FluidStack, mutated_cassette(FluidStack, truncate))


def test_schema_change_raises():
    def no_price(raw):
        del raw["interactions"][1]["response"]["json"][0]["price_per_gpu_hr"]

    with pytest.raises(ProviderError, match="'price_per_gpu_hr' missing"):
        replay(FluidStack, mutated_cassette(FluidStack, no_price))

    def wrapped(raw):
        raw["interactions"][1]["response"]["json"] = {"configurations": raw["interactions"][1]["response"]["json"]}

    with pytest.raises(ProviderError, match="expected a list of configurations"):
        replay(FluidStack, mutated_cassette(FluidStack, wrapped))

    def counts_string(raw):
        raw["interactions"][1]["response"]["json"][0]["gpu_counts"] = "1,2,4,8"

    with pytest.raises(ProviderError, match="gpu_counts/regions are not lists"):
        replay(FluidStack, mutated_cassette(FluidStack, counts_string))


def test_http_500_past_retries_raises():
    def always_500(raw):
        for interaction in raw["interactions"]:
            interaction["response"]["status"] = 500

    with pytest.raises(ProviderError, match="gave up after 4 attempts: HTTP 500"):
        replay(FluidStack, mutated_cassette(FluidStack, always_500))

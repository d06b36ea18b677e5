"""FluidStack adapter against its bundled cassette (providers/cassettes/fluidstack.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.fluidstack import FluidStack
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(FluidStack)


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


def test_api_key_header_after_429_and_never_in_errors():
    result, requests = fetch_recording(FluidStack, {"FLUIDSTACK_API_KEY": "fs-key-1"})
    assert len(result.offers) == 36
    assert [r.headers["api-key"] for r in requests] == ["fs-key-1"] * 2  # 429, then 200
    assert "authorization" not in requests[0].headers
    echo = answer(401, json={"detail": "api key fs-key-1 is not valid"})
    assert_secrets_hidden(FluidStack, {"FLUIDSTACK_API_KEY": "fs-key-1"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(FluidStack, "FLUIDSTACK_API_KEY")


def test_truncated_json_raises():
    truncated = answer(200, text='[{"gpu_type": "H100_SXM5_80GB", "gpu_co', at=1)
    assert_replay_raises(FluidStack, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_drops(FluidStack, json_without(1, 0, "price_per_gpu_hr"), "'price_per_gpu_hr' missing")

    def wrapped(raw):
        raw["interactions"][1]["response"]["json"] = {"configurations": raw["interactions"][1]["response"]["json"]}

    assert_replay_raises(FluidStack, wrapped, "expected a list of configurations")
    counts_string = json_with(1, 0, "gpu_counts", value="1,2,4,8")
    assert_replay_drops(FluidStack, counts_string, "gpu_counts/regions are not lists")


def test_http_500_past_retries_raises():
    assert_replay_raises(FluidStack, answer(500, text="internal error"), "gave up after 4 attempts: HTTP 500")

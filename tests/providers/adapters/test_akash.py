"""Akash adapter against its bundled cassette (providers/cassettes/akash.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.akash import URL, Akash, memory_of, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(Akash)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "A100-SXM-80GB",
            "A100-PCIE-40GB",
            "RTX4090-24GB",
            "RTX3090-24GB",
            "RTXA6000-48GB",
            "QRTX8000-48GB",
            "T4-16GB",
            "MI300X-192GB",
        },
        provider="akash",
    )
    assert resolved["nvidia-a100-pcie-40g"] == "A100-PCIE-40GB"  # the interface tells the A100s apart
    assert len(result.offers) == 10


def test_median_bid_per_gpu_hour_with_the_other_statistics_kept(result):
    h100 = by_key(result)["nvidia-h100-sxm5-80g"]
    assert (h100.gpu_count, h100.price_per_hour, h100.gpu_name) == (1, Decimal("1.49"), "h100 SXM5 80GB")
    assert h100.attributes["price_statistic"] == "median bid"
    assert (h100.attributes["price_min"], h100.attributes["price_max"]) == ("1.18", "2.6")
    assert h100.attributes["price_weightedAverage"] == "1.52"
    assert (h100.currency, h100.pricing, h100.region, h100.gpu_memory_gb) == ("USD", Pricing.on_demand, "", 80)
    assert Akash.kind == ProviderKind.marketplace and Akash.credentials == ()


def test_availability_from_free_gpus(result):
    offers = by_key(result)
    assert offers["nvidia-h100-sxm5-80g"].available is True
    assert offers["nvidia-h100-sxm5-80g"].attributes["gpus_available"] == 44
    assert offers["nvidia-a100-pcie-40g"].available is False  # none free: kept, sold out
    assert offers["nvidia-h100-sxm5-80g"].attributes["providers_total"] == 14


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == ["nvidia rtx5090 PCIe 32Gi: no bids (price None)", "nvidia l40s PCIe 48Gi: median bid 0"]
    euro = parse({"models": [{"vendor": "nvidia", "model": "t4", "price": {"currency": "EUR", "med": 0.1}}]})
    assert euro.offers == [] and euro.skipped == [
        "nvidia t4: price in 'EUR', not the USD the feed is documented to give"
    ]
    twice = parse({"models": [{"vendor": "v", "model": "m", "price": {"med": 1}}] * 2})
    assert len(twice.offers) == 1 and twice.skipped == ["v-m: listed twice; the first entry is kept"]


@pytest.mark.parametrize(("ram", "gb"), [("80Gi", 80), ("141Gi", 141), ("24GB", 24), (None, None), ("lots", None)])
def test_memory_of(ram, gb):
    assert memory_of(ram) == gb


def test_one_anonymous_request():
    _, requests = fetch_recording(Akash)
    assert [str(r.url) for r in requests] == [URL] and "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(Akash, json_without(0, "models"), "'models'")
    assert_replay_raises(Akash, json_with(0, "models", value={}), "not a list")
    assert_replay_raises(Akash, json_without(0, "models", 0, "price"), "'price'")
    assert_replay_raises(Akash, json_with(0, "models", 0, "price", "med", value="cheap"), "price.med")
    assert_replay_raises(Akash, answer(200, text='{"models": ['), "invalid JSON")

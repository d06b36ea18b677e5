"""Vast.ai from its cassette: per-offer prices cover all GPUs, bids are spot, quirks are handled."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from providers.adapters.vastai import VastAi, parse, region_of
from providers.contract import Pricing, ProviderError
from tests.factories.cassettes import answer, assert_integrity, assert_replay_raises, by_key, replay_fixture

result = replay_fixture(VastAi)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"H100-SXM-80GB", "H100-PCIE-80GB", "RTX4090-24GB", "A100-SXM-40GB", "A100-SXM-80GB",
                       "RTXA6000-48GB", "RTX5090-32GB"},
        allowed_unknown={"GTX 1080 Ti", "Tesla V100"},  # V100: Vast does not say SXM or PCIe
        provider="vastai",
    )  # fmt: skip
    assert resolved["22005300"] == "H200-SXM-141GB"  # Vast's bare "H200" is the SXM part by convention


def test_price_covers_all_gpus_and_bid_is_spot(result):
    offers = by_key(result)
    eight = offers["21543210"]
    assert (eight.gpu_count, eight.price_per_hour, eight.pricing) == (Decimal(8), Decimal("15.2011"), Pricing.on_demand)
    assert eight.price_per_gpu_hour == Decimal("15.2011") / 8
    bid = offers["21543210:bid"]
    assert (bid.pricing, bid.price_per_hour) == (Pricing.spot, Decimal("9.6"))
    assert "22001234:bid" not in offers  # min_bid null → no spot offer


def test_quirks_null_geolocation_cpu_cores_and_gpu_ram_in_mb(result):
    offers = by_key(result)
    assert offers["22001234"].region == ""  # geolocation null
    assert offers["22004410"].vcpus is None  # cpu_cores null: still a real price
    assert offers["21543210"].gpu_memory_gb == Decimal("79.65")  # 81559 MB as GiB, snapped to 80 by the catalog
    assert offers["21877001"].region == "ca-quebec"


@pytest.mark.parametrize(("raw", "region"), [("Texas, US", "us-texas"), (None, ""), ("Somewhere", "somewhere")])
def test_region(raw, region):
    assert region_of(raw) == region


def test_schema_change_and_truncation_raise_provider_error():
    with pytest.raises(ProviderError, match="offers"):
        parse({"bundles": []})
    with pytest.raises(ProviderError, match="num_gpus"):
        parse({"offers": [{"id": 1, "gpu_name": "RTX 4090", "dph_total": 1}]})

    def truncate(raw):
        body = json.dumps(raw["interactions"][0]["response"].pop("json"))
        raw["interactions"][0]["response"]["text"] = body[:100]

    assert_replay_raises(VastAi, truncate, "invalid JSON")


def test_server_errors_are_retried_then_reported():
    assert_replay_raises(VastAi, answer(500, text="oops", at=0), "gave up after 4 attempts: HTTP 500")

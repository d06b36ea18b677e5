"""Azure Retail Prices adapter against its bundled schema-faithful cassette."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from providers.adapters.azure import REGIONS, SIZES, Azure, parse_items
from providers.contract import Pricing, ProviderKind, ScrapeResult
from providers.registry import get_provider
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)
from tracker.catalog.gpus import get_catalog

result = replay_fixture(Azure)


@pytest.fixture(scope="module")
def offers(result: ScrapeResult) -> dict[str, Any]:
    return by_key(result)


def test_registered_without_credentials() -> None:
    assert get_provider("azure") is Azure
    assert Azure.credentials == ()
    assert Azure.kind is ProviderKind.cloud


def test_integrity(result: ScrapeResult) -> None:
    resolved = assert_integrity(
        result,
        expected_gpus={
            "A100-PCIE-80GB",
            "A100-SXM-40GB",
            "A100-SXM-80GB",
            "H100-NVL-94GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "MI300X-192GB",
            "T4-16GB",
            "V100-PCIE-16GB",
            "V100-SXM-32GB",
            "A10-24GB",
        },
        allowed_unknown={"Tesla M60 8GB"},
        min_offers=20,
    )
    assert resolved["Standard_NV36ads_A10_v5:westeurope:on_demand"] == "A10-24GB"
    assert resolved["Standard_NC40ads_H100_v5:eastus:on_demand"] == "H100-NVL-94GB"
    assert resolved["Standard_NC24ads_A100_v4:eastus:on_demand"] == "A100-PCIE-80GB"
    assert resolved["Standard_ND96amsr_A100_v4:eastus:on_demand"] == "A100-SXM-80GB"
    assert len(result.offers) == 20


def test_per_instance_price(offers: dict[str, Any]) -> None:
    nd = offers["Standard_ND96isr_H100_v5:eastus:on_demand"]
    assert nd.price_per_hour == Decimal("98.32")
    assert nd.gpu_count == Decimal(8)
    assert nd.price_per_gpu_hour == Decimal("12.29")
    assert (nd.gpu_name, nd.gpu_memory_gb, nd.vcpus, nd.ram_gb) == (
        "H100 SXM 80GB",
        Decimal(80),
        Decimal(96),
        Decimal(1900),
    )
    assert nd.instance_type == "Standard_ND96isr_H100_v5"
    four = offers["Standard_NC96ads_A100_v4:eastus:on_demand"]
    assert four.price_per_gpu_hour == Decimal("3.673")


def test_spot_is_a_separate_offer(offers: dict[str, Any]) -> None:
    spot = offers["Standard_NC24ads_A100_v4:eastus:spot"]
    assert spot.pricing is Pricing.spot
    assert spot.price_per_hour == Decimal("0.7345")
    assert offers["Standard_ND96isr_H100_v5:eastus:spot"].price_per_hour == Decimal("39.328")
    assert offers["Standard_NV36ads_A10_v5:westeurope:spot"].pricing is Pricing.spot
    assert "Standard_ND96isr_H100_v5:westeurope:spot" not in offers


def test_newest_meter_wins(offers: dict[str, Any]) -> None:
    # the same meter appears with an older effectiveStartDate at 3.4
    assert offers["Standard_NC24ads_A100_v4:eastus:on_demand"].price_per_hour == Decimal("3.673")


def test_second_page_and_429_followed() -> None:
    result, requests = fetch_recording(Azure)
    keys = {o.key for o in result.offers}
    assert "Standard_NC4as_T4_v3:eastus:on_demand" in keys  # only on page 2
    assert "Standard_ND40rs_v2:eastus:on_demand" in keys
    urls = [str(r.url) for r in requests]
    assert sum("%24skip=1000" in u or "$skip=1000" in u for u in urls) == 1
    # one walk per region, the first eastus request answered 429 and retried, plus eastus page 2
    assert len(requests) == len(REGIONS) + 2
    filters = [r.url.params.get("$filter", "") for r in requests]
    for region in REGIONS:
        assert sum(f"armRegionName eq '{region}'" in f for f in filters) == (3 if region == "eastus" else 1)
    assert all("authorization" not in r.headers for r in requests)


def test_regions_and_availability(result: ScrapeResult) -> None:
    assert {o.region for o in result.offers} == {"eastus", "westeurope"}
    assert all(o.available is None for o in result.offers)


def test_excluded_and_skipped_rows(result: ScrapeResult, offers: dict[str, Any]) -> None:
    assert "Standard_ND96isr_H200_v5:eastus:on_demand" not in offers  # retailPrice 0
    assert "Standard_NP10s:eastus:on_demand" not in offers  # FPGA, not a GPU
    assert not any(o.price_per_hour == Decimal("0.0908") for o in result.offers)  # Low Priority
    assert sorted(result.skipped) == [
        "Standard_NC8ads_A10_v4: GPU size not in azure.SIZES (NC8ads A10 v4)",
        "Standard_ND96isr_H200_v5 in eastus: retailPrice 0.0",
    ]


def test_fractional_a10_slice(offers: dict[str, Any]) -> None:
    slice_ = offers["Standard_NV6ads_A10_v5:eastus:on_demand"]
    assert slice_.gpu_count == Decimal("0.167")
    assert slice_.gpu_memory_gb == Decimal(4)
    assert slice_.attributes["fractional"] is True
    assert slice_.price_per_hour == Decimal("0.454")
    assert get_catalog().normalize(slice_.gpu_name).id == "A10-24GB"


def test_size_table_is_consistent() -> None:
    for sku, size in SIZES.items():
        assert sku.startswith("Standard_N"), sku
        assert size.count > 0 and size.vcpus > 0 and size.ram_gb > 0, sku
        if size.count >= 1:
            assert size.count == size.count.to_integral_value(), sku


def test_windows_and_unknown_units_are_not_offers() -> None:
    base = {
        "armSkuName": "Standard_NC6s_v3",
        "armRegionName": "eastus",
        "retailPrice": 3.06,
        "unitOfMeasure": "1 Hour",
        "productName": "Virtual Machines NCSv3 Series",
        "meterName": "NC6s v3",
    }
    windows = base | {"productName": "Virtual Machines NCSv3 Series Windows", "retailPrice": 4.0}
    monthly = base | {"unitOfMeasure": "1/Month"}
    result = parse_items([windows, monthly, base])
    assert [(o.key, o.price_per_hour) for o in result.offers] == [
        ("Standard_NC6s_v3:eastus:on_demand", Decimal("3.06"))
    ]
    assert result.skipped == ["Standard_NC6s_v3 in eastus: priced per '1/Month' in USD"]


def test_truncated_json_raises() -> None:
    assert_replay_raises(Azure, answer(200, text='{"Items": [{"currencyCode": "US', at=1), "invalid JSON")


def test_missing_items_raises() -> None:
    assert_replay_raises(Azure, json_without(1, "Items"), "'Items' missing")


def test_missing_item_field_raises() -> None:
    assert_replay_drops(Azure, json_without(2, "Items", 0, "retailPrice"), "'retailPrice' missing")


def test_repeated_500_raises() -> None:
    assert_replay_raises(Azure, answer(500, text="busy", at=(0, 1)), "gave up after 4 attempts: HTTP 500")


def test_foreign_next_link_refused() -> None:
    redirect = json_with(1, "NextPageLink", value="https://evil.example.com/api/retail/prices")
    assert_replay_raises(Azure, redirect, "next page of eastus prices is outside https://prices.azure.com")


def test_next_link_loop_detected() -> None:
    def loop(raw: dict[str, Any]) -> None:
        page2 = raw["interactions"][2]
        page2["response"]["json"]["NextPageLink"] = raw["interactions"][1]["response"]["json"]["NextPageLink"]

    assert_replay_raises(Azure, loop, "did not end")

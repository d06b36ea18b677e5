"""Nebula Block adapter against its bundled cassette (providers/cassettes/nebulablock.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.nebulablock import URL, NebulaBlock, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(NebulaBlock)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "A100-PCIE-80GB",
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "H200-SXM-141GB",
            "RTX5090-32GB",
            "L40S-48GB",
        },
        provider="nebulablock",
    )
    assert resolved["h8"] == "H100-SXM-80GB" and len(result.offers) == 7
    assert NebulaBlock.kind == ProviderKind.marketplace and NebulaBlock.credentials == ()


def test_price_is_per_instance_hour(result):
    box = by_key(result)["h8"]
    assert (box.gpu_name, box.gpu_count, box.price_per_hour, box.price_per_gpu_hour) == (
        "H100-80G-SXM",
        8,
        Decimal("16.032"),
        Decimal("2.004"),
    )
    assert (box.currency, box.pricing, box.region, box.gpu_memory_gb, box.vcpus, box.ram_gb) == (
        "USD",
        Pricing.on_demand,
        "canada",
        80,
        200,
        1440,
    )
    assert box.available is True and box.attributes["stock"] == 4 and box.attributes["region"] == "North America"


def test_spot_rows_are_spot_offers_and_stock_decides_availability(result):
    offers = by_key(result)
    assert sorted(k for k, o in offers.items() if o.pricing == Pricing.spot) == ["f-l40s-s", "hs"]
    assert offers["hs"].price_per_hour == Decimal("0.5") and offers["hs"].region == "canada"
    assert offers["u-h200-8"].available is False


def test_malformed_products_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "data.USA.RTX5090[1]: schema changed: expected a number at data.USA.RTX5090[1].price_per_hour, got NoneType"
    ]
    odd = parse({"status": "success", "data": {"X": {"H100": ["no", {"id": "z", "gpu": "", "gpu_count": 1}]}}})
    assert odd.skipped == ["data.X.H100[0]: not an object", "z: no GPU model or count"]


def test_one_anonymous_request():
    _, requests = fetch_recording(NebulaBlock)
    assert [str(r.url) for r in requests] == [URL] and "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(NebulaBlock, json_with(0, "status", value="error"), "status 'error'")
    assert_replay_raises(NebulaBlock, json_without(0, "data"), "'data'")
    assert_replay_raises(NebulaBlock, json_with(0, "data", value=[]), "not an object of countries")
    assert_replay_raises(NebulaBlock, json_with(0, "data", "USA", value=[]), "not an object of GPU types")
    assert_replay_raises(NebulaBlock, json_with(0, "data", "USA", "H200", value={}), "not a list")

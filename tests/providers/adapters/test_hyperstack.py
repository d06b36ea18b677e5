"""Hyperstack adapter against its bundled cassette (providers/cassettes/hyperstack.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.hyperstack import Hyperstack
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

FLAVORS, PRICEBOOK_502, PRICEBOOK = range(3)  # interaction indexes


result = replay_fixture(Hyperstack)


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


def test_api_key_header_and_never_in_errors():
    result, requests = fetch_recording(Hyperstack, {"HYPERSTACK_API_KEY": "hs-key-7"})
    assert len(result.offers) == 15
    assert [r.url.path for r in requests] == ["/v1/core/flavors", "/v1/pricebook", "/v1/pricebook"]  # 502 retried
    assert {r.headers["api_key"] for r in requests} == {"hs-key-7"}
    echo = answer(401, json={"status": False, "message": "api_key hs-key-7 is invalid"}, at=FLAVORS)
    assert_secrets_hidden(Hyperstack, {"HYPERSTACK_API_KEY": "hs-key-7"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(Hyperstack, "HYPERSTACK_API_KEY")


def test_status_false_raises():
    failed = json_with(FLAVORS, value={"status": False, "message": "Environment not found"})
    assert_replay_raises(Hyperstack, failed, "flavors call failed: Environment not found")


def test_truncated_json_raises():
    truncated = answer(200, text='[{"id": 1, "name": "H100-80G-PC', at=PRICEBOOK)
    assert_replay_raises(Hyperstack, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_drops(Hyperstack, json_without(FLAVORS, "data", 0, "flavors", 1, "gpu_count"), "'gpu_count' missing")

    def renamed_value(raw):
        for entry in raw["interactions"][PRICEBOOK]["response"]["json"]:
            entry["price"] = entry.pop("value")

    assert_replay_raises(Hyperstack, renamed_value, "'value' missing")
    assert_replay_raises(Hyperstack, json_with(PRICEBOOK, value={"data": []}), "pricebook is not a list")


def test_http_500_past_retries_raises():
    assert_replay_raises(Hyperstack, answer(500, text="internal error"), "gave up after 4 attempts: HTTP 500")

"""TensorDock v2 adapter against its bundled cassette (providers/cassettes/tensordock.json)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.adapters.tensordock import TensorDock
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
    json_without,
    replay_fixture,
)

SECRET = "td-key-5c4b3a2910"
DALLAS = "1a7f3e0c-55b1-4f55-8f77-0f1c1b1a2d01"
FRANKFURT = "9b42c6d8-0e2a-4a57-a8b4-6d3f6b1c9e02"


result = replay_fixture(TensorDock)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"RTX4090-24GB", "H100-SXM-80GB", "RTXA6000-48GB", "L40-48GB", "A100-PCIE-80GB"},
        allowed_unknown={"NVIDIA GeForce RTX 3060 Ti PCIe 8GB"},  # no RTX 3060 Ti in the catalog
    )
    assert resolved[f"{DALLAS}:geforcertx4090-pcie-24gb:1"] == "RTX4090-24GB"
    assert len(result.offers) == 24
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_price_is_the_smallest_valid_machine(result):
    # The listing's price_per_hr (0.35) is the GPU alone; vCPUs (0.003), RAM (0.002/GB) and disk
    # (0.00005/GB) bill on top, so an offer costs the least VM that can run: 2 vCPUs + 4 GB per GPU, 100 GB.
    offers = by_key(result)
    one, four = offers[f"{DALLAS}:geforcertx4090-pcie-24gb:1"], offers[f"{DALLAS}:geforcertx4090-pcie-24gb:4"]
    assert one.price_per_hour == Decimal("0.35") + 2 * Decimal("0.003") + 4 * Decimal("0.002") + 100 * Decimal("5e-05")
    assert (one.vcpus, one.ram_gb, one.attributes["storage_gb"]) == (2, 4, "100")
    assert four.gpu_count == 4
    assert four.price_per_hour == 4 * Decimal("0.35") + 8 * Decimal("0.003") + 16 * Decimal("0.002") + Decimal("0.005")
    assert four.gpu_memory_gb == 24
    assert four.attributes["price_scope"] == "smallest_machine" and four.attributes["gpu_price_per_hour"] == "0.35"
    assert four.attributes["per_vcpu_hr"] == "0.003" and four.attributes["min_shape_from"] == "assumed"
    assert four.attributes["cost_terms"] == {"included_disk_gb": "100", "disk_usd_per_gb_month": "0.03650"}


def test_stated_minimums_and_limits_decide_the_machine():
    from providers.adapters.tensordock import parse

    gpu: dict[str, Any] = {
        "v0Name": "geforcertx4090-pcie-24gb",
        "displayName": "NVIDIA GeForce RTX 4090 PCIe 24GB",
        "max_count": 2,
        "price_per_hr": 0.35,
        "pricing": {"per_vcpu_hr": 0.003, "per_gb_ram_hr": 0.002, "per_gb_storage_hr": 5e-05},
        "resources": {"max_vcpus": 3, "max_ram_gb": 256, "max_storage_gb": 4000},
    }
    parsed = parse({"data": {"locations": [{"id": "loc", "country": "US", "gpus": [gpu]}]}})
    # 2 GPUs need 4 vCPUs, more than the 3 this host has: no valid machine, said why.
    assert [o.key for o in parsed.offers] == ["loc:geforcertx4090-pcie-24gb:1"]
    assert parsed.skipped == ["loc:geforcertx4090-pcie-24gb:2: the smallest VM exceeds the location's limits"]
    gpu["resources"] |= {"min_vcpus": 1, "min_ram_gb": 2, "min_storage_gb": 20}
    stated = parse({"data": {"locations": [{"id": "loc", "country": "US", "gpus": [gpu]}]}}).offers[0]
    assert stated.price_per_hour == Decimal("0.35") + Decimal("0.003") + 2 * Decimal("0.002") + 20 * Decimal("5e-05")
    assert stated.attributes["min_shape_from"] == "api"


def test_counts_run_to_max_count_capped_at_eight(result):
    def counts(v0):
        return sorted(int(o.gpu_count) for o in result.offers if o.attributes["v0_name"] == v0)

    assert counts("geforcertx4090-pcie-24gb") == [1, 2, 3, 4]
    assert counts("rtxa6000-pcie-48gb") == [1, 2]
    assert counts("a100-pcie-80gb") == list(range(1, 9))  # max_count 10, capped at 8
    assert by_key(result)[f"{FRANKFURT}:a100-pcie-80gb:8"].attributes["gpu_price_per_hour"] == "1.2"


def test_region_availability_and_skips(result):
    offers = by_key(result)
    assert offers[f"{DALLAS}:h100-sxm5-80gb:1"].region == "united-states-texas-dallas"
    assert offers[f"{FRANKFURT}:rtxa6000-pcie-48gb:1"].region == "germany-hesse-frankfurt"
    assert offers[f"{DALLAS}:h100-sxm5-80gb:8"].available is True
    sold_out = offers[f"{FRANKFURT}:l40-pcie-48gb:1"]  # max_count 0: one offer, unavailable
    assert sold_out.available is False and f"{FRANKFURT}:l40-pcie-48gb:2" not in offers
    assert f"{FRANKFURT}:v100-pcie-16gb: no price" in result.skipped


def test_bearer_header():
    _, seen = fetch_recording(TensorDock, {"TENSORDOCK_API_KEY": SECRET})
    assert len(seen) == 2  # 429, then the retry
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)


def test_missing_credentials():
    assert_missing_credentials(TensorDock, "TENSORDOCK_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"message": "Unauthorized"})
    assert_secrets_hidden(TensorDock, {"TENSORDOCK_API_KEY": SECRET}, rejected, status=401)


def test_truncated_json_raises():
    assert_replay_raises(TensorDock, answer(200, text='{"data": {"locations": [{"id": "1a7f', at=1), "invalid JSON")


def test_schema_change_raises():
    no_price = json_without(1, "data", "locations", 0, "gpus", 0, "price_per_hr")
    assert_replay_drops(TensorDock, no_price, "price_per_hr")


def test_repeated_500_raises():
    assert_replay_raises(TensorDock, answer(500, text="internal"), "gave up after 4 attempts")

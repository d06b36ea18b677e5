"""Shadeform adapter against its bundled cassette (providers/cassettes/shadeform.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.shadeform import Shadeform, gpu_name
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

SECRET = "sf-live-9f8e7d6c5b4a"


result = replay_fixture(Shadeform)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB", "H100-PCIE-80GB", "A100-SXM-80GB", "RTXA6000-48GB",
            "L40S-48GB", "MI300X-192GB", "GAUDI2-96GB",
        },
    )  # fmt: skip
    assert resolved["hyperstack:H100:canada-1"] == "H100-PCIE-80GB"
    assert resolved["lambdalabs:H100_sxm5x8:us-east-1"] == "H100-SXM-80GB"
    assert len(result.offers) == 9
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_cents_per_instance(result):
    box = by_key(result)["lambdalabs:H100_sxm5x8:us-east-1"]
    assert box.gpu_count == 8
    assert box.price_per_hour == Decimal("23.92")  # 2392 cents for the 8-GPU instance
    assert box.price_per_gpu_hour == Decimal("2.99")
    assert (box.vcpus, box.ram_gb, box.gpu_memory_gb) == (208, 1800, 80)
    two = by_key(result)["datacrunch:A100_80G_sxm4x2:fin-01"]
    assert two.price_per_hour == Decimal("3.78") and two.price_per_gpu_hour == Decimal("1.89")


def test_one_offer_per_cloud_type_region_with_availability(result):
    offers = by_key(result)
    assert offers["lambdalabs:H100_sxm5x8:us-east-1"].available is True
    assert offers["lambdalabs:H100_sxm5x8:us-west-1"].available is False  # kept for history
    assert offers["vultr:L40S:ewr"].available is False
    assert offers["datacrunch:A100_80G_sxm4x2:fin-01"].region == "fin-01"
    box = offers["crusoe:MI300X_x8:us-east1-a"]
    assert box.attributes["cloud"] == "crusoe"
    assert box.attributes["cloud_instance_type"] == "mi300x-192gb-ib.8x"
    assert "paperspace:A4000: no regions listed" in result.skipped
    assert "latitude:H200_sxm5x8: no price" in result.skipped
    assert not any(k.startswith("hyperstack:CPU") for k in offers)


def test_form_factor_in_raw_name(result):
    assert gpu_name("A100_80G", "sxm4", Decimal(80)) == "A100 SXM 80GB"
    assert gpu_name("H100", "pcie", Decimal(80)) == "H100 PCIe 80GB"
    assert gpu_name("A10G", None, Decimal(24)) == "A10G 24GB"
    box = by_key(result)["datacrunch:A100_80G_sxm4x2:fin-01"]
    assert (box.gpu_name, box.attributes["raw_gpu"]) == ("A100 SXM 80GB", "A100_80G")


def test_api_key_header():
    _, seen = fetch_recording(Shadeform, {"SHADEFORM_API_KEY": SECRET})
    assert len(seen) == 2  # 429, then the retry
    assert all(r.headers["x-api-key"] == SECRET for r in seen)
    assert all("available" not in r.url.params for r in seen)  # every type, not only available ones


def test_missing_credentials():
    assert_missing_credentials(Shadeform, "SHADEFORM_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"error": "invalid api key"})
    assert_secrets_hidden(Shadeform, {"SHADEFORM_API_KEY": SECRET}, rejected, status=401)


def test_truncated_json_raises():
    truncated = answer(200, text='{"instance_types": [{"cloud": "lambdalabs", "shade_', at=1)
    assert_replay_raises(Shadeform, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_raises(Shadeform, json_without(1, "instance_types", 0, "configuration"), "configuration")


def test_repeated_500_raises():
    error = assert_replay_raises(
        Shadeform, answer(500, text="internal error"), "gave up after 4 attempts", SHADEFORM_API_KEY=SECRET
    )
    assert SECRET not in error

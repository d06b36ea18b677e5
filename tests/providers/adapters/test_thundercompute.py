"""Thunder Compute adapter against its bundled cassette (providers/cassettes/thundercompute.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.thundercompute import PRICING_URL, SPECS_URL, ThunderCompute, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

SECRET = "tnr_live_3f2e1d0c9b8a"

result = replay_fixture(ThunderCompute)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"T4-16GB", "RTXA6000-48GB", "H100-PCIE-80GB", "L40-48GB", "A100-PCIE-80GB"},
        provider="thundercompute",
    )
    assert resolved["h100_x8_production"] == "H100-PCIE-80GB"
    assert len(result.offers) == 10
    assert all(o.pricing is Pricing.on_demand and o.region == "" for o in result.offers)


def test_price_is_per_instance_and_tier_is_kept(result):
    eight = by_key(result)["h100_x8_production"]
    assert (eight.gpu_count, eight.price_per_hour, eight.price_per_gpu_hour) == (8, Decimal("15.12"), Decimal("1.89"))
    assert (eight.vcpus, eight.ram_gb) == (32, 256)  # smallest vcpuOptions entry, 8 GiB per vCPU
    shared = by_key(result)["h100_x1_prototyping"]
    assert shared.attributes == {
        "sku": "h100_x1_prototyping",
        "mode": "prototyping",
        "shared_gpu": True,
        "display_name": "H100",
    }
    assert shared.price_per_hour < by_key(result)["h100_x1_production"].price_per_hour


def test_non_gpu_keys_ignored_and_odd_rows_dropped(result):
    keys = set(by_key(result))
    assert {"disk_gb", "additional_vcpus", "snapshot_gb", "h100"}.isdisjoint(keys)
    assert "l40s_x1_production: no price" in result.skipped
    l40 = by_key(result)["l40_x1_production"]  # priced, but no spec: defaults, flagged
    assert l40.attributes["specs_missing"] is True and l40.vcpus == 4 and l40.gpu_memory_gb == 48
    unknown = parse(
        {"pricing": {"b200_x1_production": 4.5}}, {"specs": {"b200_x1_production": {"displayName": "B200"}}}
    )
    assert [o.gpu_name for o in unknown.offers] == ["B200"]


def test_token_is_optional():
    assert ThunderCompute.credentials == () and ThunderCompute.optional_credentials == ("TNR_API_TOKEN",)
    _, anonymous = fetch_recording(ThunderCompute)
    assert [str(r.url) for r in anonymous] == [PRICING_URL, SPECS_URL]
    assert all("authorization" not in r.headers for r in anonymous)
    _, signed = fetch_recording(ThunderCompute, {"TNR_API_TOKEN": SECRET})
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in signed)
    assert ThunderCompute.kind is ProviderKind.cloud


def test_secret_not_in_errors():
    rejected = answer(401, json={"error": f"invalid token {SECRET}"}, at=0)
    assert_secrets_hidden(ThunderCompute, {"TNR_API_TOKEN": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_raises(ThunderCompute, json_without(0, "pricing"), "pricing")
    assert_replay_raises(ThunderCompute, json_with(1, "specs", value=[]), "not an object")
    assert_replay_raises(ThunderCompute, json_with(0, "pricing", "t4_x1_prototyping", value="cheap"), "not a number")


def test_vcpu_options_of_another_type_is_a_schema_change_not_a_type_error():
    # Iterated as `x or []`: a number there raised TypeError out of the parser.
    from tests.factories.cassettes import assert_replay_raises, json_with

    assert_replay_raises(
        ThunderCompute, json_with(1, "specs", "t4_x1_prototyping", "vcpuOptions", value=4), "not a list"
    )

"""Daytona adapter against its bundled cassette (providers/cassettes/daytona.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.daytona import URL, Daytona, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

result = replay_fixture(Daytona)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "B300-SXM-288GB",
            "B200-SXM-180GB",
            "RTXPRO6000-96GB",
            "RTX5090-32GB",
            "RTX4090-24GB",
            "MI355X-288GB",
        },
    )
    assert resolved["RTX-5090:1"] == "RTX5090-32GB"
    # 8 priced types × 4 counts on demand, plus spot for the 7 with a spot rate
    assert len(result.offers) == 8 * 4 + 7 * 4


def test_price_is_gpu_plus_vcpu_plus_memory(result):
    one = by_key(result)["H100:1"]
    # 3.95 (GPU) + 8 vCPU × 0.0504 + 100 GiB × 0.0162
    assert one.price_per_hour == Decimal("3.95") + 8 * Decimal("0.0504") + 100 * Decimal("0.0162")
    assert (one.vcpus, one.ram_gb, one.gpu_memory_gb) == (8, 100, 80)
    assert one.attributes["gpu_price_per_hour"] == "3.95"
    eight = by_key(result)["H100:8"]
    assert eight.price_per_hour == 8 * one.price_per_hour and eight.gpu_count == 8
    consumer = by_key(result)["RTX-4090:2"]  # GeForce shape: 50 GiB per GPU
    assert consumer.ram_gb == 100 and consumer.vcpus == 16
    assert consumer.price_per_hour == 2 * Decimal("0.99") + 16 * Decimal("0.0504") + 100 * Decimal("0.0162")


# Rows of SkyPilot's published Daytona catalog (skypilot-catalog@0eb5da57:catalogs/v8/daytona/vms.csv), priced
# by its fetcher from the live feed with the same sandbox shapes: (type, count) → (on demand, spot).
PUBLISHED = {
    ("H100", 1): ("5.9732", "3.44"),
    ("H100", 8): ("47.7856", "27.52"),
    ("B300", 2): ("18.2464", "10.5"),
    ("RTX-5090", 4): ("10.0128", "5.78"),
    ("RTX-4090", 1): ("2.2032", None),
    ("MI355X", 8): ("64.1056", "36.88"),
}


def test_prices_match_the_published_catalog(result):
    offers = by_key(result)
    for (gpu, count), (on_demand, spot) in PUBLISHED.items():
        assert offers[f"{gpu}:{count}"].price_per_hour == Decimal(on_demand), (gpu, count)
        if spot is not None:
            assert offers[f"{gpu}:{count}:spot"].price_per_hour == Decimal(spot), (gpu, count)


def test_spot_uses_spot_rates(result):
    offers = by_key(result)
    spot = offers["H100:1:spot"]
    assert spot.pricing is Pricing.spot
    assert spot.price_per_hour == Decimal("2.2284") + 8 * Decimal("0.0302") + 100 * Decimal("0.0097")
    assert spot.price_per_hour < offers["H100:1"].price_per_hour
    assert "RTX-4090:1:spot" not in offers  # null spot rate: no spot offer


def test_odd_rows_dropped_with_reason(result):
    assert "A10: no on-demand price" in result.skipped
    assert not any(k.startswith("A10:") for k in by_key(result))
    doubled = parse(
        {
            "gpus": [{"type": "H100", "onDemandPricePerHour": 2}, {"type": "H100", "onDemandPricePerHour": 3}],
            "resources": {"onDemand": {"vcpuPerHour": 0, "memoryGiBPerHour": 0}},
        }
    )
    assert doubled.skipped == ["H100: listed twice"]
    assert {o.price_per_hour for o in doubled.offers} == {2, 4, 8, 16}


def test_a_priced_type_is_orderable_whatever_its_name():
    # The row of a real 2026 response that a hard-coded "not orderable" list used to drop.
    real = {"type": "B200", "onDemandPricePerHour": 6.25, "spotPricePerHour": 3.59}
    parsed = parse(
        {
            "gpus": [real],
            "resources": {
                "onDemand": {"vcpuPerHour": 0, "memoryGiBPerHour": 0},
                "spot": {"vcpuPerHour": 0, "memoryGiBPerHour": 0},
            },
        }
    )
    offers = by_key(parsed)
    assert parsed.skipped == []
    assert offers["B200:1"].price_per_hour == Decimal("6.25") and offers["B200:1"].gpu_memory_gb == 180
    assert offers["B200:8:spot"].price_per_hour == 8 * Decimal("3.59")
    # The same type without a price is what the data says is not for sale.
    unpriced = parse(
        {
            "gpus": [real | {"onDemandPricePerHour": None}],
            "resources": {"onDemand": {"vcpuPerHour": 0, "memoryGiBPerHour": 0}},
        }
    )
    assert unpriced.offers == [] and unpriced.skipped == ["B200: no on-demand price"]


def test_spot_not_below_on_demand_is_dropped():
    parsed = parse(
        {
            "gpus": [{"type": "H100", "onDemandPricePerHour": 2, "spotPricePerHour": 2.5}],
            "resources": {
                "onDemand": {"vcpuPerHour": 0, "memoryGiBPerHour": 0},
                "spot": {"vcpuPerHour": 0, "memoryGiBPerHour": 0},
            },
        }
    )
    assert all(o.pricing is Pricing.on_demand for o in parsed.offers)
    assert "H100:1:spot: spot price not below on demand" in parsed.skipped


def test_public_endpoint_no_credentials():
    assert Daytona.credentials == () and Daytona.kind is ProviderKind.cloud
    _, seen = fetch_recording(Daytona)
    assert len(seen) == 2 and str(seen[-1].url) == URL  # 429, then the retry
    assert "authorization" not in seen[-1].headers


def test_schema_change_raises():
    assert_replay_raises(Daytona, json_without(1, "resources", "onDemand"), "onDemand")
    assert_replay_drops(Daytona, json_without(1, "gpus", 0, "onDemandPricePerHour"), "onDemandPricePerHour")


def test_repeated_500_raises():
    assert_replay_raises(Daytona, answer(500, text="internal error"), "gave up after 4 attempts")

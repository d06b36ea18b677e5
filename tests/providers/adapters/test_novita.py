"""Novita adapter against its bundled cassette (providers/cassettes/novita.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.novita import URL, Novita, parse, to_dollars
from providers.contract import Pricing, ProviderKind
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

SECRET = "sk_novita_7c6b5a4d3e2f"

result = replay_fixture(Novita)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "RTX4090-24GB",
            "H100-SXM-80GB",
            "A100-SXM-80GB",
            "RTX6000ADA-48GB",
            "L40S-48GB",
            "H200-SXM-141GB",
            "RTX5090-32GB",
        },
    )
    assert resolved["2:us-ca-06"] == "H100-SXM-80GB"
    assert len(result.offers) == 16


def test_prices_are_hundred_thousandths_of_a_dollar(result):
    assert to_dollars(Decimal(258000)) == Decimal("2.58")
    h100 = by_key(result)["2:us-ca-06"]
    assert (h100.gpu_count, h100.price_per_hour, h100.pricing) == (1, Decimal("2.58"), Pricing.on_demand)
    assert h100.attributes["price_units"] == "258000"
    # memoryPerGpu is system RAM; VRAM comes from the name
    assert (h100.vcpus, h100.ram_gb, h100.gpu_memory_gb) == (24, 240, 80)
    spot = by_key(result)["2:us-ca-06:spot"]
    assert (spot.pricing, spot.price_per_hour) == (Pricing.spot, Decimal("1.29"))


def test_one_offer_per_region_with_availability(result):
    offers = by_key(result)
    assert {"1:as-sgp-02", "1:us-ca-06"} <= set(offers)
    assert offers["1:us-ca-06"].region == "us-ca-06"
    a100 = offers["3:as-sgp-02"]  # kept for history, not deployable now
    assert a100.available is False and a100.attributes["inventory_state"] == "none"
    assert "5:us-ca-06:spot" not in offers  # billingMethods without "spot": its spotPrice is no offer
    assert "7:as-sgp-02:spot" not in offers  # spotPrice "0"
    placed = offers["9"]  # no region listed: one offer Novita places
    assert (placed.region, placed.price_per_hour) == ("", Decimal("0.58"))


def test_odd_rows_dropped_with_reason(result):
    assert "8: no price" in result.skipped
    twice = parse({"data": [{"id": "x", "name": "L40S 48GB", "price": "1000", "regions": ["r1", "R1"]}]})
    assert [o.key for o in twice.offers] == ["x:r1"] and twice.skipped == ["x:r1: listed twice"]
    assert twice.offers[0].price_per_hour == Decimal("0.01") and twice.offers[0].available is None


def test_bearer_and_every_product_asked_for():
    _, seen = fetch_recording(Novita, {"NOVITA_API_KEY": SECRET})
    assert [str(r.url) for r in seen] == [URL]  # no available=true filter: sold-out products stay listed
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"
    assert Novita.kind is ProviderKind.cloud


def test_missing_credentials():
    assert_missing_credentials(Novita, "NOVITA_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(403, json={"message": f"bad key {SECRET}"})
    assert_secrets_hidden(Novita, {"NOVITA_API_KEY": SECRET}, rejected, status=403)


def test_schema_change_raises():
    assert_replay_drops(Novita, json_without(0, "data", 0, "price"), "price")
    assert_replay_raises(Novita, json_without(0, "data"), "data")
    assert_replay_raises(Novita, answer(200, text='{"data": [{"id": '), "invalid JSON")

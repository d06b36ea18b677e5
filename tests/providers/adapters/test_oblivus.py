"""Oblivus adapter against its bundled cassette (providers/cassettes/oblivus.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.oblivus import METADATA_URL, STOCK_URL, Oblivus, parse
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay,
    replay_fixture,
)

SECRET = "obl_9a8b7c6d5e4f"

result = replay_fixture(Oblivus)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-PCIE-80GB", "RTXA6000-48GB", "A100-PCIE-80GB"})
    assert resolved["H100_PCIE_80GB_x8:mon1"] == "H100-PCIE-80GB"
    assert len(result.offers) == 22


def test_per_gpu_price_times_configuration(result):
    x8 = by_key(result)["H100_PCIE_80GB_x8:mon1"]
    assert (x8.gpu_count, x8.price_per_hour, x8.currency) == (8, Decimal("17.424"), "USD")
    assert x8.pricing is Pricing.on_demand
    assert x8.price_per_gpu_hour == Decimal("2.178") and (x8.vcpus, x8.ram_gb, x8.gpu_memory_gb) == (252, 1440, 80)


def test_commit_tiers_are_reservation_terms(result):
    offers = by_key(result)
    terms = {
        o.reserved_term: o.price_per_gpu_hour
        for o in result.offers
        if o.key.startswith("A100_PCIE_80GB_x2") and o.pricing is Pricing.reserved
    }
    assert terms == {"1mo": Decimal("1.4"), "3mo": Decimal("1.35"), "1y": Decimal("1.25"), "3y": Decimal("1.1")}
    assert "H100_PCIE_80GB_x1:mon1:3mo" not in offers  # no 3m tier for the H100
    assert offers["H100_PCIE_80GB_x1:mon1:3y"].price_per_hour == Decimal("1.7")


def test_stock_is_availability(result):
    offers = by_key(result)
    assert offers["H100_PCIE_80GB_x1:mon1"].available is True
    assert offers["H100_PCIE_80GB_x1:mon1"].attributes["virtual_servers"] == 46
    assert offers["H100_PCIE_80GB_x1:osl1"].available is False
    assert offers["RTX_A6000_x1:mon1"].available is False
    assert offers["A100_PCIE_80GB_x2"].available is None and offers["A100_PCIE_80GB_x2"].region == ""


def test_malformed_items_dropped_with_reason(result):
    assert any("GPUAmount" in s and "A100_PCIE_80GB_x4" in s for s in result.skipped)
    assert any("hourlyCost" in s and "L40S" in s for s in result.skipped)
    no_stock = parse(
        {
            "data": {
                "gpu": {
                    "X": {
                        "metaName": "L4",
                        "hourlyCost": "0.5",
                        "configurations": [{"flavorID": "L4_x1", "GPUAmount": "1"}],
                    }
                }
            }
        },
        {"error": "down"},
    )
    assert [o.key for o in no_stock.offers] == ["L4_x1"] and "availability unknown" in no_stock.skipped[0]


def test_api_key_header():
    _, seen = fetch_recording(Oblivus, {"OBLIVUS_API_KEY": SECRET})
    assert [str(r.url) for r in seen] == [METADATA_URL, STOCK_URL]
    assert seen[0].headers["apikey"] == SECRET and "authorization" not in seen[0].headers


def test_missing_credentials():
    assert_missing_credentials(Oblivus, "OBLIVUS_API_KEY")


def test_secret_not_in_errors():
    assert_secrets_hidden(Oblivus, {"OBLIVUS_API_KEY": SECRET}, answer(403, json={"m": SECRET}, at=0), status=403)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Oblivus, json_without(0, "data", "gpu"), "gpu")
    assert_replay_raises(Oblivus, json_with(0, "data", "gpu", value=[]), "not an object")
    # the stock list alone going wrong costs the availability, not the prices
    degraded = replay(Oblivus, mutated_cassette(Oblivus, json_with(1, value={"data": None})))
    assert degraded.offers and all(o.available is None for o in degraded.offers)

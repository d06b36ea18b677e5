"""Spheron adapter against its bundled cassette (providers/cassettes/spheron.json)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from providers.adapters.spheron import URL, Spheron, next_page, raw_gpu_name
from providers.contract import Pricing, ProviderKind, ScrapeResult
from providers.fetching import labelled_aggregated
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

SECRET = "sph_live_6d5c4b3a2f1e"
MONTREAL = "sesterce:H100{}_668d6762247d03149a4c9474_montreal-canada-2:montreal-canada-2"

result = replay_fixture(Spheron)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "A100-PCIE-80GB",
            "RTX5090-32GB",
            "L40S-48GB",
        },
        # Spheron's "H100_NVL" rows report 80 GB: no H100 NVL (94 GB) card, so unknown rather than guessed
        allowed_unknown={"H100 NVL 80GB"},
    )
    assert resolved["verda:1H100.80S.32V_FIN-03_500:finland-3"] == "H100-SXM-80GB"
    assert len(result.offers) == 17


def test_upstream_is_the_provider_whose_machine_it_is(result):
    offers = by_key(result)
    box = offers[MONTREAL.format("x8")]
    assert box.upstream == "sesterce" and box.attributes["upstream_raw"] == "sesterce"
    # names we scrape directly carry our own provider name, so a machine can be counted once
    assert offers["verda:1H100.80S.32V_FIN-03_500:finland-3"].upstream == "verda"  # "data-crunch"
    assert offers["massedcompute:gpu_1x_DGX_A100_us-central-2:us-central-2"].upstream == "massedcompute"
    own = [o for o in result.offers if o.attributes.get("upstream_raw") == "spheron-ai"]
    assert own and all(o.upstream is None and o.key.startswith("spheron:") for o in own)  # not a resale
    copy = ScrapeResult(offers=[replace(o, attributes=dict(o.attributes)) for o in result.offers])
    labelled = by_key(labelled_aggregated(Spheron, copy))
    assert labelled[MONTREAL.format("x8")].attributes.items() >= {"via": "spheron", "upstream": "sesterce"}.items()
    assert "via" not in labelled["spheron:n3-A100x1__CANADA-1:canada-1"].attributes


def test_price_is_for_the_whole_offer(result):
    offers = by_key(result)
    # one seller's 1x/2x/4x/8x H100 rows: the price scales with the GPU count, so it is per offer
    per_gpu = {n: offers[MONTREAL.format(s)].price_per_gpu_hour for n, s in ((1, ""), (2, "x2"), (4, "x4"), (8, "x8"))}
    assert set(per_gpu.values()) == {Decimal("2.508")}
    eight = offers[MONTREAL.format("x8")]
    assert (eight.gpu_count, eight.price_per_hour, eight.vcpus, eight.ram_gb) == (8, Decimal("20.064"), 252, 1440)


def test_spot(result):
    offers = by_key(result)
    spot = offers["verda:1H100.80S.32V_FIN-03_500:finland-3:spot"]  # dedicated offer with a spot_price
    assert (spot.pricing, spot.price_per_hour) == (Pricing.spot, Decimal("0.8015"))
    assert offers["verda:1H100.80S.32V_FIN-03_500:finland-3"].pricing is Pricing.on_demand
    spot_only = offers["spheron:n3-A100x1-spot__CANADA-1:canada-1:spot"]  # instanceType SPOT: spot at `price`
    assert spot_only.price_per_hour == Decimal("1.1476")
    assert "spheron:n3-A100x1-spot__CANADA-1:canada-1" not in offers


def test_unavailable_and_maintenance_are_kept(result):
    offers = by_key(result)
    assert offers["spheron:n3-H100x1__CANADA-1:canada-1"].available is False
    maint = offers["massedcompute:gpu_1x_DGX_A100_us-central-2:us-central-2"]
    assert maint.available is False and maint.attributes["maintenance"] is True
    assert offers[MONTREAL.format("x8")].available is True


def test_odd_rows_dropped_with_reason(result):
    assert "spheron:n3-A100x2__CANADA-1: no price" in result.skipped
    assert "massedcompute:gpu_1x_a100_SXM4_us-central-3: no regions listed" in result.skipped


def test_pages_followed_to_total_pages(result):
    _, seen = fetch_recording(Spheron, {"SPHERON_API_KEY": SECRET})
    assert [(r.url.params["page"], r.url.params["limit"]) for r in seen] == [("1", "100"), ("2", "100")]
    assert all(str(r.url).startswith(URL) and r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)
    assert "sesterce:L40Sx8_67884c00280fba46a71e23ed_raleigh-usa-1:raleigh-usa-1" in by_key(result)  # page 2
    assert next_page({"totalPages": 2}, 2) == "" and next_page({"totalPages": 3}, 2) == "3"
    assert next_page({}, 1) == ""
    assert Spheron.kind is ProviderKind.marketplace


def test_names(result):
    assert raw_gpu_name("H100_SXM5", Decimal(80)) == "H100 SXM5 80GB"
    assert raw_gpu_name("A100_80G_PCIE", Decimal(80)) == "A100 80G PCIE"
    assert raw_gpu_name("L40S_PCIE_BAREMETAL", Decimal(48)) == "L40S PCIE 48GB"
    assert raw_gpu_name("rtx-4090", None) == "rtx 4090"
    bare = by_key(result)["sesterce:L40Sx8_67884c00280fba46a71e23ed_raleigh-usa-1:raleigh-usa-1"]
    assert bare.attributes["bare_metal"] is True and bare.attributes["raw_gpu"] == "L40S_PCIE_BAREMETAL"


def test_missing_credentials():
    assert_missing_credentials(Spheron, "SPHERON_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"error": f"invalid key {SECRET}"}, at=0)
    assert_secrets_hidden(Spheron, {"SPHERON_API_KEY": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_drops(Spheron, json_without(0, "data", 0, "offers"), "offers")
    assert_replay_drops(Spheron, json_without(0, "data", 0, "offers", 0, "price"), "price")

"""Shadeform adapter against its bundled cassette (providers/cassettes/shadeform.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.shadeform import Shadeform, gpu_name, parse
from providers.contract import Pricing
from providers.fetching import labelled_aggregated
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
    replay,
    replay_fixture,
)

SECRET = "sf-live-9f8e7d6c5b4a"


result = replay_fixture(Shadeform)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "RTXA6000-48GB",
            "L40S-48GB",
            "MI300X-192GB",
            "GAUDI2-96GB",
        },
    )
    assert resolved["hyperstack:H100:canada-1"] == "H100-PCIE-80GB"
    assert resolved["lambdalabs:H100_sxm5x8:us-east-1"] == "H100-SXM-80GB"
    assert resolved["hyperstack:H100:canada-1:spot"] == "H100-PCIE-80GB"
    assert len(result.offers) == 12
    spot = {o.key for o in result.offers if o.pricing is Pricing.spot}
    assert spot == {
        "hyperstack:H100:canada-1:spot",
        "hyperstack:H100:norway-1:spot",
        "datacrunch:A100_80G_sxm4x2:fin-01:spot",
    }


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


def test_spot_rows_become_spot_offers_at_their_own_price(result):
    offers = by_key(result)
    spot = offers["hyperstack:H100:canada-1:spot"]
    on_demand = offers["hyperstack:H100:canada-1"]  # the same machine, rented on demand
    assert (spot.pricing, spot.price_per_hour, spot.available) == (Pricing.spot, Decimal("1.2"), True)
    assert (on_demand.pricing, on_demand.price_per_hour) == (Pricing.on_demand, Decimal("1.9"))
    assert (spot.gpu_name, spot.gpu_count, spot.instance_type) == (on_demand.gpu_name, 1, "H100")
    assert offers["hyperstack:H100:norway-1:spot"].available is False  # the row's own flag
    two = offers["datacrunch:A100_80G_sxm4x2:fin-01:spot"]
    assert (two.price_per_hour, two.price_per_gpu_hour) == (Decimal("1.3"), Decimal("0.65"))
    # a spot row with no price of its own: skipped, never priced at the on-demand rate
    assert "massedcompute:A6000:us-central-2:spot" not in offers
    assert "massedcompute:A6000:us-central-2:spot: spot row without its own price" in result.skipped


def test_rental_types():
    def row(*zones):
        config = {"num_gpus": 1, "gpu_type": "H100", "interconnect": "pcie", "vram_per_gpu_in_gb": 80}
        base = {"cloud": "c", "shade_instance_type": "H100", "configuration": config, "hourly_price": 200}
        return {"instance_types": [base | {"availability": list(zones)}]}

    parsed = parse(
        row(
            {"region": "r1", "available": True, "hourly_price": 210},
            {"region": "r2", "rental_type": "Spot", "hourly_price": "90"},
        )
    )
    assert [(o.key, o.pricing, o.price_per_hour) for o in parsed.offers] == [
        ("c:H100:r1", Pricing.on_demand, Decimal("2.1")),  # an on-demand row's own price refines the instance's
        ("c:H100:r2:spot", Pricing.spot, Decimal("0.9")),
    ]
    odd = parse(row({"region": "r1", "rental_type": "reserved", "hourly_price": 100}))
    assert odd.offers == [] and odd.skipped == ["c:H100:r1: unknown rental_type 'reserved'"]
    odd_region = parse(row({"region": " US Central_2 ", "available": True}))
    assert [o.region for o in odd_region.offers] == ["us-central-2"]  # always a well-formed code
    spot_only = row({"region": "r1", "rental_type": "spot", "hourly_price": 80})
    spot_only["instance_types"][0]["hourly_price"] = None  # no on-demand price: the spot row still counts
    assert [o.key for o in parse(spot_only).offers] == ["c:H100:r1:spot"]


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
    assert_replay_drops(Shadeform, json_without(1, "instance_types", 0, "configuration"), "configuration")


def test_repeated_500_raises():
    error = assert_replay_raises(
        Shadeform, answer(500, text="internal error"), "gave up after 4 attempts", SHADEFORM_API_KEY=SECRET
    )
    assert SECRET not in error


def test_upstream_is_the_cloud_under_our_own_name():
    result = replay(Shadeform)
    names = {o.attributes["cloud"]: o.upstream for o in result.offers}
    assert names["datacrunch"] == "verda"  # DataCrunch is our `verda` adapter
    assert names["lambdalabs"] == "lambdalabs" and names["hyperstack"] == "hyperstack"
    assert all(o.upstream for o in result.offers)  # Shadeform runs no machines of its own
    labelled = labelled_aggregated(Shadeform, result)
    assert all(o.attributes["via"] == "shadeform" and o.attributes["upstream"] == o.upstream for o in labelled.offers)

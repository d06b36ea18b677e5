"""Vast.ai from its cassette and from a real `search offers` capture: per-offer prices cover all GPUs, an
interruptible offer is emitted only when it undercuts on-demand on the same (storage-inclusive) basis,
and availability, quality fields and regions come from the fields real bundles carry."""

from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from providers.adapters.vastai import SAME_PRICE, VastAi, interruptible_price, parse, region_of
from providers.contract import PriceKind, Pricing, ProviderError, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload
from tracker.catalog.gpus import GpuSpec, get_catalog

REAL = "vastai/vast-cli_11ecdfa_search_trimmed.json"  # vast-cli @ 11ecdfa: 221 real bundles, every field
REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

result = replay_fixture(VastAi)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "RTX4090-24GB",
            "A100-SXM-40GB",
            "A100-SXM-80GB",
            "RTXA6000-48GB",
            "RTX5090-32GB",
            "RTX3090-24GB",
            "L40S-48GB",
        },
        allowed_unknown={"GTX 1080 Ti", "Tesla V100", "RTX 3060 laptop"},  # V100: Vast does not say SXM or PCIe
        provider="vastai",
    )
    assert resolved["22005300"] == "H200-SXM-141GB"  # Vast's bare "H200" is the SXM part by convention


def test_price_covers_all_gpus_and_bid_adds_the_same_storage(result):
    offers = by_key(result)
    eight = offers["21543210"]
    assert (eight.gpu_count, eight.price_per_hour, eight.pricing) == (Decimal(8), Decimal("15.2011"), Pricing.on_demand)
    assert eight.price_per_gpu_hour == Decimal("15.2011") / 8
    bid = offers["21543210:bid"]
    # min_bid 9.6 is on the dph_base basis: the storage in dph_total (15.2011 - 15.2) is added back
    assert (bid.pricing, bid.price_per_hour) == (Pricing.spot, Decimal("9.6011"))
    assert bid.attributes["min_bid"] == "9.6"
    assert "22001234:bid" not in offers  # min_bid null → no spot offer


def test_bids_that_are_no_alternative_are_not_emitted(result):
    offers = by_key(result)
    assert "22005600:bid" not in offers  # min_bid $29.33/h on a $0.28/h box: bid up far above on-demand
    assert "22005700:bid" not in offers  # min_bid == dph_base: on-demand minus storage, not a discount
    spots = [o for o in result.offers if o.pricing is Pricing.spot]
    assert len(spots) == 8
    assert all(o.price_per_hour < offers[o.key.removesuffix(":bid")].price_per_hour for o in spots)


def test_quality_attributes_from_both_shapes(result):
    offers = by_key(result)
    real_shape = offers["21543210"].attributes  # string verification, reliability, storage_total_cost
    assert real_shape["verification"] == "verified" and real_shape["hosting"] == "datacenter"
    assert real_shape["reliability"] == 0.9976 and real_shape["storage_cost_per_hour"] == "0.0011"
    assert offers["22004999"].attributes["verification"] == "deverified"
    assert offers["22004999"].attributes["gpu_frac"] == 0.5
    docs_shape = offers["21877001"].attributes  # boolean verified, reliability2
    assert docs_shape["verification"] == "verified" and docs_shape["hosting"] == "consumer"
    assert docs_shape["reliability"] == 0.991 and docs_shape["storage_cost_per_hour"] == "0.0014"
    # no storage_total_cost: storage is what dph_total adds to dph_base, and the bid gets it too
    assert offers["22005100"].attributes["storage_cost_per_hour"] == "0.0007"
    assert offers["22005100:bid"].price_per_hour == Decimal("0.4507")
    assert offers["22001234"].attributes["verification"] == "unverified"  # verified: false


def test_quirks_null_geolocation_cpu_cores_and_gpu_ram_in_mb(result):
    offers = by_key(result)
    assert offers["22001234"].region == ""  # geolocation null
    assert offers["22004410"].vcpus is None  # cpu_cores null: still a real price
    assert offers["21543210"].gpu_memory_gb == Decimal("79.65")  # 81559 MB as GiB, snapped to 80 by the catalog
    assert offers["21877001"].region == "ca-quebec"
    assert offers["22005600"].region == "se"  # ", SE": no place, country code alone
    assert offers["22005700"].region == "ca-alberta"
    assert all(o.available is True for o in result.offers)


@pytest.mark.parametrize(
    ("raw", "region"),
    [
        ("Texas, US", "us-texas"),
        (None, ""),
        ("Somewhere", "somewhere"),
        (", US", "us"),
        (" , CA", "ca"),
        ("Québec, CA", "ca-quebec"),
        ("Vilnius City Municipality, LT", "lt-vilnius-city-municipality"),
        (",", ""),
    ],
)
def test_region(raw, region):
    assert region_of(raw) == region


def test_schema_change_and_truncation_raise_provider_error():
    with pytest.raises(ProviderError, match="offers"):
        parse({"bundles": []})
    # One malformed offer is dropped with its reason, the rest kept (it used to fail the whole provider).
    one_bad = parse({"offers": [{"id": 1, "gpu_name": "RTX 4090", "dph_total": 1}]})
    assert one_bad.offers == [] and any("offers[0]: dropped" in r and "num_gpus" in r for r in one_bad.skipped)

    def truncate(raw):
        body = json.dumps(raw["interactions"][0]["response"].pop("json"))
        raw["interactions"][0]["response"]["text"] = body[:100]

    assert_replay_raises(VastAi, truncate, "invalid JSON")


def test_server_errors_are_retried_then_reported():
    assert_replay_raises(VastAi, answer(500, text="oops", at=0), "gave up after 4 attempts: HTTP 500")


# --- the real capture (../shared/real-payloads, read at test time) -------------------------------------


@pytest.fixture(scope="module")
def bundles() -> list[dict[str, Any]]:
    return real_payload(REAL)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def real(bundles) -> ScrapeResult:
    return parse({"offers": bundles})


def _f(value: Any) -> Decimal:
    return Decimal(str(value))


def names_model(raw: str, family: str) -> bool:
    """The card's model number (or, without digits, its compact family) is written in the raw name."""
    if model := re.search(r"\d+", family):
        return model[0] in re.findall(r"\d+", raw)
    return re.sub(r"[^a-z0-9]", "", family.lower()) in re.sub(r"[^a-z0-9]", "", raw.lower())


def fits_memory(memory_gb: float, spec: GpuSpec) -> bool:
    """Within the catalog's 7 % of a size the card is sold or reported at (a figure in GB read as GiB too)."""
    sizes = (spec.memory_gb, *spec.reported_memory_gb)
    return any(abs(m - s) / s <= 0.07 for m in (memory_gb, memory_gb * 1e9 / 2**30) for s in sizes)


def test_real_interruptible_offers_emitted_and_dropped(bundles, real):
    offers = by_key(real)
    spots = {o.key.removesuffix(":bid"): o for o in real.offers if o.pricing is Pricing.spot}
    assert len(bundles) == 221 and all(b["min_bid"] is not None for b in bundles)
    # Before (parser 1) every min_bid became a spot offer: 221, of which 16 at or above dph_total.
    assert sum(_f(b["min_bid"]) >= _f(b["dph_total"]) for b in bundles) == 16
    assert len(spots) == 164 and len(bundles) - len(spots) == 57
    dropped = [b for b in bundles if str(b["id"]) not in spots]
    same_as_base = [b for b in dropped if abs(_f(b["min_bid"]) - _f(b["dph_base"])) <= _f(b["dph_base"]) * SAME_PRICE]
    above_total = [b for b in dropped if _f(b["min_bid"]) >= _f(b["dph_total"])]
    # 39 bid exactly dph_base (to Vast's 7 digits): on-demand minus storage; 16 at or above dph_total;
    # 2 above dph_base by less than the storage charge, so bid + storage still ≥ dph_total
    assert (len(same_as_base), len(above_total)) == (39, 16)
    for key, spot in spots.items():
        bundle = next(b for b in bundles if str(b["id"]) == key)
        assert spot.price_per_hour < offers[key].price_per_hour, key  # never at or above on-demand
        assert spot.price_per_hour == _f(bundle["min_bid"]) + _f(bundle["storage_total_cost"]), key
        assert offers[key].price_per_hour == _f(bundle["dph_total"])


def test_real_bid_far_above_on_demand_is_dropped(bundles):
    # the worst case in shape: a consumer box whose bid is ~100x its on-demand price
    bundle = copy.deepcopy(next(b for b in bundles if b["num_gpus"] == 2 and b["gpu_name"] == "RTX 3090"))
    bundle["min_bid"] = bundle["dph_base"] * 104.75
    assert interruptible_price(bundle, _f(bundle["dph_total"]), "bundle") is None
    assert [o.pricing for o in parse({"offers": [bundle]}).offers] == [Pricing.on_demand]


def test_real_regions_are_well_formed(bundles, real):
    assert all(o.region == "" or REGION.match(o.region) for o in real.offers), {o.region for o in real.offers}
    by_id = {str(b["id"]): b for b in bundles}
    placeless = {
        by_id[o.key]["geolocation"]: o.region
        for o in real.offers
        if o.key in by_id and o.region in {"us", "ca", "cn", "ru"}
    }
    assert placeless == {", US": "us", ", CA": "ca", ", CN": "cn", ", RU": "ru"}
    assert by_key(real)[next(k for k, b in by_id.items() if b["geolocation"] == "Quebec, CA")].region == "ca-quebec"


def test_real_availability_and_quality_fields(bundles, real):
    assert all(o.available is True for o in real.offers)  # every captured bundle: rentable, not rented
    rented = copy.deepcopy(bundles[0]) | {"rented": True}
    unrentable = copy.deepcopy(bundles[0]) | {"rentable": False}
    assert [o.available for o in parse({"offers": [rented, unrentable]}).offers[::2]] == [False, False]
    kinds = [(o.price_kind, o.orderable) for o in parse({"offers": [rented, unrentable]}).offers[::2]]
    # A rented machine's rate is what its renter pays; an unrentable one is out of stock at its asking price.
    assert kinds == [(PriceKind.transacted, False), (PriceKind.asking, True)]
    assert all((o.price_kind, o.orderable) == (PriceKind.asking, True) for o in real.offers)
    for offer in real.offers:
        a = offer.attributes
        assert a["verification"] in {"verified", "deverified", "unverified"}, a
        assert a["hosting"] in {"datacenter", "consumer"} and isinstance(a["reliability"], float), a
        assert 0 <= a["reliability"] <= 1 and Decimal(a["storage_cost_per_hour"]) >= 0, a
        assert 0 < a["gpu_frac"] <= 1, a
    counts = {
        v: sum(o.attributes["verification"] == v for o in real.offers if o.pricing is Pricing.on_demand)
        for v in ("verified", "deverified", "unverified")
    }
    assert counts == {"verified": 86, "deverified": 24, "unverified": 111}
    assert sum(o.attributes["hosting"] == "datacenter" for o in real.offers if o.pricing is Pricing.on_demand) == 24


def test_real_cards_resolve_to_the_right_card_or_are_reported_unknown(bundles, real):
    resolved, unknown = resolve_all(real, "vastai")
    by_id = {str(b["id"]): b for b in bundles}

    def card(name: str, mem_gb: int) -> str:
        key = next(k for k, b in by_id.items() if b["gpu_name"] == name and round(b["gpu_ram"] / 1024) == mem_gb)
        assert resolved.get(f"{key}:bid", resolved[key]) == resolved[key]  # the bid is the same card
        return resolved[key]

    sample = {
        ("H100 SXM", 80): "H100-SXM-80GB",
        ("H100 PCIE", 80): "H100-PCIE-80GB",
        ("H100 NVL", 94): "H100-NVL-94GB",
        ("A100 SXM4", 40): "A100-SXM-40GB",
        ("A100 SXM4", 80): "A100-SXM-80GB",
        ("A100 PCIE", 80): "A100-PCIE-80GB",
        ("RTX 4090", 24): "RTX4090-24GB",
        ("RTX 6000Ada", 45): "RTX6000ADA-48GB",
        ("RTX A6000", 45): "RTXA6000-48GB",
        ("A10", 22): "A10-24GB",
        ("L4", 22): "L4-24GB",
        ("Tesla T4", 15): "T4-16GB",
        ("Q RTX 6000", 22): "QRTX6000-24GB",
        ("RTX 4080S", 16): "RTX4080SUPER-16GB",  # provider convention: Vast's "S" is SUPER
    }
    assert {raw: card(*raw) for raw in sample} == sample
    # No wrong card, whatever cards the catalog gains meanwhile: a name it lacks (e.g. "A100X", a 12 GB
    # RTX 3080 while only the 10 GB one is listed) is reported unknown, and every card it does resolve to
    # has the model number named, at the memory the bundle reports.
    catalog = get_catalog()
    offers = by_key(real)
    for key, gpu_id in resolved.items():
        spec, offer = catalog.get(gpu_id), offers[key]
        assert names_model(offer.gpu_name, spec.family), (key, offer.gpu_name, gpu_id)
        assert fits_memory(float(offer.gpu_memory_gb or 0), spec), (key, offer.gpu_memory_gb, gpu_id)
    assert all(o.gpu_name in unknown for o in real.offers if o.key not in resolved)  # reported, never dropped
    assert len(real.offers) == 385 and len(resolved) >= 209  # 209 with the catalog of this change

"""Vultr adapter against its bundled cassette (providers/cassettes/vultr.json)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from providers.adapters.vultr import METAL_URL, PLANS_URL, Vultr, parse_metal, parse_plans
from providers.cassette import Cassette
from providers.contract import Pricing, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload
from tracker.catalog.gpus import get_catalog

REAL_PLANS = "vultr/gpuhunt_91eca44_plans.json"
REAL_METAL = "vultr/gpuhunt_91eca44_plans_metal.json"
REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

result = replay_fixture(Vultr)


def test_integrity(result):
    whole = ScrapeResult(offers=[o for o in result.offers if o.gpu_count >= 1], skipped=result.skipped)
    resolved = assert_integrity(
        whole,
        expected_gpus={
            "A100-PCIE-80GB",
            "L40S-48GB",
            "H100-SXM-80GB",
            "MI300X-192GB",
            "GH200-96GB",
            "B200-SXM-180GB",
            "A40-48GB",
            "A100-SXM-80GB",
        },
        allowed_unknown={"A2"},
    )
    assert resolved["vcg-a100-24c-240g-160vram:ewr"] == "A100-PCIE-80GB"
    assert resolved["vbm-64c-2048gb-8-l40-gpu:lax"] == "L40S-48GB"
    assert resolved["vcg-a40-24c-120g-48vram:ewr"] == "A40-48GB"  # a vdm plan: card from the plan id
    assert len(result.offers) == 24
    assert all(REGION.match(o.region) for o in result.offers)
    keys = [o.key for o in result.offers]
    assert len(keys) == len(set(keys))


def test_slices_name_the_full_card(result):
    catalog = get_catalog()
    slices = [o for o in result.offers if o.gpu_count < 1]
    assert {o.key for o in slices} == {
        "vcg-a100-1c-6g-4vram:ewr",
        "vcg-a100-2c-15g-10vram:ewr",
        "vcg-a100-2c-15g-10vram:fra",
        "vcg-a16-2c-16g-4vram:ord",
        "vcg-a40-6c-60g-24vram:sea",
    }
    # the raw name alone (full card + memory + form factor) identifies the card
    assert {catalog.normalize(o.gpu_name).id for o in slices} == {"A100-PCIE-80GB", "A16-16GB", "A40-48GB"}


def test_slices_resolve_as_ingest_resolves_them(result):
    """Ingest identifies a slice's card by its name, not by the partial memory it offers."""
    from tracker.config import Settings
    from tracker.ingest.validate import validate_batch

    prepared = validate_batch(result, get_catalog(), Settings(), "vultr")
    valid = {v.scraped.key: v.gpu.id for v in prepared.valid}
    slices = [o for o in result.offers if o.gpu_count < 1]
    assert slices and all(o.key in valid for o in slices)


def test_fractional_gpu_slices(result):
    offers = by_key(result)
    tenth = offers["vcg-a100-2c-15g-10vram:ewr"]
    assert tenth.gpu_count == Decimal("0.125")
    assert tenth.gpu_memory_gb == Decimal(10)
    assert tenth.gpu_name == "A100 PCIe 80GB"
    assert tenth.price_per_hour == Decimal("0.308")
    assert tenth.price_per_gpu_hour == Decimal("2.464")
    assert tenth.attributes["fractional"] is True
    assert offers["vcg-a100-1c-6g-4vram:ewr"].gpu_count == Decimal("0.05")
    assert offers["vcg-a16-2c-16g-4vram:ord"].gpu_count == Decimal("0.25")
    whole = offers["vcg-a100-12c-120g-80vram:ewr"]
    assert whole.gpu_count == 1 and whole.gpu_memory_gb == 80 and "fractional" not in whole.attributes


def test_multi_gpu_plan_from_second_page(result):
    two = by_key(result)["vcg-a100-24c-240g-160vram:lax"]  # only on page 2 (cursor followed)
    assert two.gpu_count == 2
    assert two.gpu_memory_gb == 80
    assert two.price_per_hour == Decimal("4.794")
    assert two.price_per_gpu_hour == Decimal("2.397")
    assert two.vcpus == 24 and two.ram_gb == Decimal("240.00")


def test_bare_metal_and_spot(result):
    offers = by_key(result)
    h100 = offers["vbm-112c-2048gb-8-h100-gpu:sea"]
    spot = offers["vbm-112c-2048gb-8-h100-gpu:sea:spot"]
    assert (h100.gpu_count, h100.price_per_hour, h100.pricing) == (8, Decimal("23.92"), Pricing.on_demand)
    assert (spot.gpu_count, spot.price_per_hour, spot.pricing) == (8, Decimal("18.4"), Pricing.spot)
    assert spot.price_per_gpu_hour == Decimal("2.3")
    assert h100.vcpus == 224 and h100.ram_gb == Decimal("2048.00")
    # no spot where the preemptible price is null or zero
    assert "vbm-72c-480gb-gh200-gpu:ewr:spot" not in offers
    assert "vbm-64c-2048gb-8-l40-gpu:lax:spot" not in offers
    assert offers["vbm-256c-3072gb-8-b200-gpu:atl"].attributes["gpu_from"] == "plan_id"
    spots = {o.key for o in result.offers if o.pricing is Pricing.spot}
    assert spots == {
        "vbm-112c-2048gb-8-h100-gpu:sea:spot",
        "vbm-112c-2048gb-8-h100-gpu:ewr:spot",
        "vbm-256c-2048gb-8-mi300x-gpu:ord:spot",
        "vbm-112c-2048gb-8-a100-gpu:fra:spot",
        "vcg-l40s-16c-180g-48vram:ord:spot",
    }


def test_vdm_gpu_plan_without_gpu_type(result):
    """`type: "vdm"`, `gpu_brand` and no `gpu_type`: a GPU plan, not a CPU one."""
    offers = by_key(result)
    a40 = offers["vcg-a40-24c-120g-48vram:ewr"]
    assert (a40.gpu_name, a40.gpu_count, a40.gpu_memory_gb) == ("A40 48GB", 1, 48)
    assert (a40.price_per_hour, a40.pricing, a40.vcpus) == (Decimal("1.712"), Pricing.on_demand, 24)
    assert a40.attributes["gpu_from"] == "plan_id"
    assert (a40.attributes["plan_type"], a40.attributes["gpu_brand"], a40.attributes["raw_gpu"]) == (
        "vdm",
        "NVIDIA",
        "NVIDIA_A40",
    )
    assert {o.region for o in result.offers if o.instance_type == "vcg-a40-24c-120g-48vram"} == {"ewr", "ord"}
    assert "vcg-a40-24c-120g-48vram:ewr:spot" not in offers  # deploy_preemptible false


def test_vdm_plan_vram_from_the_plan_id():
    plan = {
        "id": "vcg-l40s-16c-180g-48vram",
        "type": "vdm",
        "gpu_brand": "NVIDIA",
        "hourly_cost": 1.5,
        "locations": ["ams"],
    }
    (offer,) = parse_plans({"plans": [plan]}).offers
    assert (offer.gpu_name, offer.gpu_count, offer.gpu_memory_gb) == ("L40S 48GB", 1, 48)
    brandless = parse_plans({"plans": [plan | {"gpu_brand": None, "type": "vcg"}]})
    assert brandless.offers == [] and brandless.skipped == [
        "vcg-l40s-16c-180g-48vram: GPU plan without gpu_type/gpu_vram_gb"
    ]


def test_deploy_flags_and_location_cost(result):
    offers = by_key(result)
    # preemptible only: no on-demand offer, a spot one at the preemptible price
    assert "vbm-112c-2048gb-8-a100-gpu:fra" not in offers
    only_spot = offers["vbm-112c-2048gb-8-a100-gpu:fra:spot"]
    assert (only_spot.price_per_hour, only_spot.gpu_name, only_spot.gpu_count) == (Decimal("9.6"), "A100 SXM 80GB", 8)
    # preemptible where possible: location_cost turns it off in sjc and reprices it in ewr
    assert offers["vcg-l40s-16c-180g-48vram:ord:spot"].price_per_hour == Decimal("0.835")
    assert "vcg-l40s-16c-180g-48vram:sjc:spot" not in offers and "vcg-l40s-16c-180g-48vram:sjc" in offers
    assert offers["vbm-112c-2048gb-8-h100-gpu:ewr:spot"].price_per_hour == Decimal("17.6")
    assert offers["vbm-112c-2048gb-8-h100-gpu:sea:spot"].price_per_hour == Decimal("18.4")
    # neither way deployable: nothing, with the reason
    assert not any(o.instance_type == "vcg-l40s-32c-375g-96vram" for o in result.offers)
    assert (
        "vcg-l40s-32c-375g-96vram: not deployable (deploy_ondemand and deploy_preemptible are false)" in result.skipped
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, {"p:ewr", "p:ewr:spot"}),  # listings older than the flags: both prices stand
        ({"deploy_ondemand": True, "deploy_preemptible": True}, {"p:ewr", "p:ewr:spot"}),
        ({"deploy_ondemand": True, "deploy_preemptible": False}, {"p:ewr"}),
        ({"deploy_ondemand": False, "deploy_preemptible": True}, {"p:ewr:spot"}),
        ({"deploy_ondemand": False, "deploy_preemptible": False}, set()),
    ],
)
def test_deploy_flags(flags, expected):
    plan = {
        "id": "p",
        "type": "vcg",
        "gpu_type": "NVIDIA_L40S",
        "gpu_vram_gb": 48,
        "hourly_cost": 1.6,
        "hourly_cost_preemptible": 0.8,
        "locations": ["ewr"],
    } | flags
    parsed = parse_plans({"plans": [plan]})
    assert {o.key for o in parsed.offers} == expected
    assert bool(parsed.skipped) is (not expected)


def _real_cassette() -> Cassette:
    """The real `/v2/plans` and `/v2/plans-metal` items, served as single pages."""

    def page(url: str, body: dict) -> dict:
        return {
            "request": {"method": "GET", "url": url, "body": None},
            "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": body},
        }

    plans = real_payload(REAL_PLANS) | {"meta": {"total": 3, "links": {"next": "", "prev": ""}}}
    metal = real_payload(REAL_METAL) | {"meta": {"total": 2, "links": {"next": "", "prev": ""}}}
    interactions = [page(f"{PLANS_URL}?type=all&per_page=500", plans), page(f"{METAL_URL}?per_page=500", metal)]
    return Cassette.from_json({"provider": "vultr", "interactions": interactions})


def test_real_plans_and_metal():
    result = replay(Vultr, _real_cassette())
    resolved, unknown = resolve_all(result, "vultr")
    assert unknown == {} and result.skipped == []
    assert set(resolved.values()) == {"A100-PCIE-80GB", "MI300X-192GB", "H100-SXM-80GB"}
    assert {o.key: (o.gpu_count, o.gpu_memory_gb, o.price_per_hour, o.pricing) for o in result.offers} == {
        # 4 GB and 40 GB slices of the 80 GB cloud A100, and a whole one
        "vcg-a100-1c-6g-4vram:ewr": (Decimal("0.05"), 4, Decimal("0.123"), Pricing.on_demand),
        "vcg-a100-6c-60g-40vram:ewr": (Decimal("0.5"), 40, Decimal("1.397"), Pricing.on_demand),
        "vcg-a100-12c-120g-80vram:ewr": (Decimal(1), 80, Decimal("2.397"), Pricing.on_demand),
        # bare metal: count and memory from the plan-id table, the preemptible price as spot
        "vbm-256c-2048gb-8-mi300x-gpu:ord": (Decimal(8), 192, Decimal("17.52"), Pricing.on_demand),
        "vbm-256c-2048gb-8-mi300x-gpu:ord:spot": (Decimal(8), 192, Decimal("14.72"), Pricing.spot),
        "vbm-112c-2048gb-8-h100-gpu:sea": (Decimal(8), 80, Decimal("23.92"), Pricing.on_demand),
        "vbm-112c-2048gb-8-h100-gpu:sea:spot": (Decimal(8), 80, Decimal("18.4"), Pricing.spot),
    }
    offers = by_key(result)
    assert offers["vcg-a100-6c-60g-40vram:ewr"].price_per_gpu_hour == Decimal("2.794")
    assert offers["vbm-112c-2048gb-8-h100-gpu:sea:spot"].price_per_gpu_hour == Decimal("2.3")
    assert all(REGION.match(o.region) and o.available is None for o in result.offers)


def test_real_pages_parse_alone():
    assert len(parse_plans(real_payload(REAL_PLANS)).offers) == 3
    assert len(parse_metal(real_payload(REAL_METAL)).offers) == 4


def test_regions_skips_and_availability(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.instance_type == "vcg-l40s-16c-180g-48vram"} == {
        "ord",
        "sjc",
    }
    assert all(o.available is None for o in result.offers)  # `locations` is validity, not capacity
    assert not any("vc2" in k or "vhf" in k or "vbm-4c" in k for k in offers)  # CPU plans
    assert not any("free" in k for k in offers)  # zero-price plans dropped
    assert "vcg-a100-free-trial: zero price" in result.skipped
    assert "vcg-b300-32c-512g-288vram: no locations" in result.skipped


def test_no_credentials_needed_and_cursor_sent():
    _, seen = fetch_recording(Vultr)
    assert [r.url.params.get("cursor") for r in seen if r.url.path == "/v2/plans"] == [
        None,
        "bmV4dF9fdmNnLWExMDAtMjRj",
    ]
    assert sum(r.url.path == "/v2/plans-metal" for r in seen) == 2  # 429, then the retry
    assert all("authorization" not in r.headers for r in seen)


def test_truncated_json_raises():
    assert_replay_raises(Vultr, answer(200, text='{"plans": [{"id": "vcg-a100', at=0), "invalid JSON")


def test_schema_change_raises():
    assert_replay_drops(Vultr, json_without(0, "plans", 2, "hourly_cost"), "hourly_cost")


def test_wrong_type_raises():
    assert_replay_raises(Vultr, json_with(3, "plans_metal", 1, "locations", value="sea"), "not a list")


def test_repeated_500_raises():
    assert_replay_raises(Vultr, answer(500, json={"error": "internal"}), "gave up after 4 attempts")


def test_cursor_loop_raises():
    loop = json_with(1, "meta", "links", "next", value="bmV4dF9fdmNnLWExMDAtMjRj")
    assert_replay_raises(Vultr, loop, "pagination did not end: page 2 of https://api.vultr.com/v2/plans links back")

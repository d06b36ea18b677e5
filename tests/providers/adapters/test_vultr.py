"""Vultr adapter against its bundled cassette (providers/cassettes/vultr.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.vultr import Vultr
from providers.contract import Pricing, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)
from tracker.catalog.gpus import get_catalog

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
        },
        allowed_unknown={"A2"},
    )
    assert resolved["vcg-a100-24c-240g-160vram:ewr"] == "A100-PCIE-80GB"
    assert resolved["vbm-64c-2048gb-8-l40-gpu:lax"] == "L40S-48GB"
    assert len(result.offers) == 20
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
    from tracker.ingest.batch import validate_batch

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
    }


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
    assert_replay_raises(Vultr, json_without(0, "plans", 2, "hourly_cost"), "hourly_cost")


def test_wrong_type_raises():
    assert_replay_raises(Vultr, json_with(3, "plans_metal", 1, "locations", value="sea"), "not a list")


def test_repeated_500_raises():
    assert_replay_raises(Vultr, answer(500, json={"error": "internal"}), "gave up after 4 attempts")


def test_cursor_loop_raises():
    loop = json_with(1, "meta", "links", "next", value="bmV4dF9fdmNnLWExMDAtMjRj")
    assert_replay_raises(Vultr, loop, "pagination did not end: page 2 of https://api.vultr.com/v2/plans links back")

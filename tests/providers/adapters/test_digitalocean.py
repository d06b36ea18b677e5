"""DigitalOcean adapter against its bundled cassette (providers/cassettes/digitalocean.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.digitalocean import URL, DigitalOcean, gpu_name_of
from providers.cassette import Cassette
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload

PAGE_2 = "https://api.digitalocean.com/v2/sizes?page=2&per_page=200"


result = replay_fixture(DigitalOcean)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "MI300X-192GB",
            "MI325X-256GB",
            "L40S-48GB",
            "RTX4000ADA-20GB",
            "RTX6000ADA-48GB",
        },
    )
    assert resolved["gpu-h100x8-640gb:nyc2"] == "H100-SXM-80GB"
    assert resolved["gpu-mi300x8-1536gb:atl1"] == "MI300X-192GB"
    assert len(result.offers) == 13
    assert result.skipped == []


def test_total_vram_is_divided_per_gpu(result):
    offers = by_key(result)
    eight = offers["gpu-h100x8-640gb:nyc2"]
    assert (eight.gpu_count, eight.gpu_memory_gb) == (8, 80)  # vram.amount 640 is the Droplet total
    assert offers["gpu-h200x8-1128gb:atl1"].gpu_memory_gb == 141
    assert offers["gpu-mi300x8-1536gb:atl1"].gpu_memory_gb == 192
    assert offers["gpu-mi300x1-192gb:atl1"].gpu_memory_gb == 192


def test_price_is_per_droplet(result):
    eight = by_key(result)["gpu-h100x8-640gb:nyc2"]
    assert eight.price_per_hour == Decimal("23.92")
    assert eight.price_per_gpu_hour == Decimal("2.99")
    assert (eight.vcpus, eight.ram_gb) == (160, 1920)  # memory 1966080 MiB
    assert eight.gpu_name == "H100 SXM"
    assert eight.attributes["raw_gpu"] == "nvidia_h100"
    assert by_key(result)["gpu-4000adax1-20gb:tor1"].price_per_hour == Decimal("0.76")


def test_second_page_followed_after_429():
    result, requests = fetch_recording(DigitalOcean, {"DIGITALOCEAN_TOKEN": "do-tok"})
    offers = by_key(result)
    assert "gpu-l40sx1-48gb:tor1" in offers  # only on page 2
    assert offers["gpu-mi325x8-2048gb:atl1"].gpu_memory_gb == 256
    urls = [str(r.url) for r in requests]
    assert urls == ["https://api.digitalocean.com/v2/sizes?per_page=200", PAGE_2, PAGE_2]  # 429, then 200
    assert {r.headers["authorization"] for r in requests} == {"Bearer do-tok"}


def test_regions_and_availability(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.instance_type == "gpu-h100x1-80gb"} == {"nyc2", "tor1"}
    assert offers["gpu-h100x1-80gb:tor1"].available is True
    empty = offers["gpu-6000adax1-48gb"]  # regions: [] → sold out
    assert (empty.region, empty.available, empty.price_per_hour) == ("", False, Decimal("1.57"))
    retired = offers["gpu-h100x1-80gb-legacy"]  # available: false
    assert (retired.region, retired.available) == ("", False)
    assert not any(k.startswith("gpu-6000adax1-48gb:") for k in offers)


def test_cpu_sizes_skipped_and_no_spot(result):
    assert not any(o.instance_type.startswith(("s-", "c-", "so-")) for o in result.offers)
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("nvidia_h100", "H100 SXM"),
        ("amd_mi300x", "MI300X"),
        ("nvidia_rtx6000_ada", "RTX 6000 Ada"),
        ("nvidia_b300", "B300"),
        ("amd_mi355x", "MI355X"),
    ],
)
def test_gpu_name_of(model, name):
    assert gpu_name_of(model) == name


def test_token_never_in_errors():
    echo = answer(401, json={"id": "unauthorized", "message": "bad token do-tok"})
    assert_secrets_hidden(DigitalOcean, {"DIGITALOCEAN_TOKEN": "do-tok"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(DigitalOcean, "DIGITALOCEAN_TOKEN")


def test_pagination_loop_and_foreign_links_raise():
    loop = json_with(2, "links", "pages", "next", value="https://api.digitalocean.com/v2/sizes?per_page=200")
    assert_replay_raises(DigitalOcean, loop, "pagination did not end")
    elsewhere = json_with(0, "links", "pages", "next", value="https://evil.example/v2/sizes?page=2")
    assert_replay_raises(DigitalOcean, elsewhere, "outside https://api.digitalocean.com")


def test_truncated_json_raises():
    assert_replay_raises(DigitalOcean, answer(200, text='{"sizes": [{"slug": "gpu-h1', at=0), "invalid JSON")


def test_schema_change_raises():
    assert_replay_raises(DigitalOcean, json_without(2, "sizes"), "'sizes'")
    assert_replay_drops(DigitalOcean, json_without(0, "sizes", 3, "price_hourly"), "price_hourly")
    assert_replay_drops(DigitalOcean, json_without(2, "sizes", 0, "gpu_info", "count"), "'count'")


def test_http_500_past_retries_raises():
    assert_replay_raises(DigitalOcean, answer(500, text="internal error"), "gave up after 4 attempts: HTTP 500")


# --- the real `/v2/sizes` response (one CPU size, 8x H100, 8x MI300X) --------------------------------

REAL_SIZES = "digitalocean/gpuhunt_test_digitalocean_sizes.json"


def _real_cassette() -> Cassette:
    interaction = {
        "request": {"method": "GET", "url": URL, "body": None},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": real_payload(REAL_SIZES)},
    }
    return Cassette.from_json({"provider": "digitalocean", "interactions": [interaction]})


def test_real_sizes():
    result = replay(DigitalOcean, _real_cassette())
    resolved, unknown = resolve_all(result, "digitalocean")
    assert unknown == {} and result.skipped == []
    assert resolved == {"gpu-h100x8-640gb:nyc1": "H100-SXM-80GB", "gpu-mi300x8-1536gb:nyc1": "MI300X-192GB"}
    h100, mi300x = (by_key(result)[k] for k in ("gpu-h100x8-640gb:nyc1", "gpu-mi300x8-1536gb:nyc1"))
    # vram.amount is the Droplet's total (640 GiB, 1536 GiB): per GPU it is 80 and 192
    assert (h100.gpu_count, h100.gpu_memory_gb, h100.price_per_gpu_hour) == (8, 80, Decimal("2.99"))
    assert (mi300x.gpu_count, mi300x.gpu_memory_gb, mi300x.price_per_gpu_hour) == (8, 192, Decimal("1.99"))
    assert (h100.gpu_name, h100.attributes["raw_gpu"]) == ("H100 SXM", "nvidia_h100")
    for offer in (h100, mi300x):
        assert (offer.pricing, offer.region, offer.available) == (Pricing.on_demand, "nyc1", True)
        assert (offer.vcpus, offer.ram_gb) == (160, 1920)  # memory 1966080 MiB
    # the CPU size (no gpu_info) is skipped silently, and `links: {}` ends the listing
    assert len(result.offers) == 2

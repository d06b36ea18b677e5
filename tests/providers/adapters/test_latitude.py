"""Latitude.sh adapter against its bundled cassette (providers/cassettes/latitude.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.latitude import URL, Latitude, gpu_name, parse_page
from providers.cassette import Cassette
from providers.contract import Pricing, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

SECRET = "lat_live_3b2a1c0d9e8f"

result = replay_fixture(Latitude)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB", "L40S-48GB", "RTX6000ADA-48GB"})
    assert resolved["gpu-h100-4x:sao"] == "H100-SXM-80GB"
    assert len(result.offers) == 13


def test_price_is_per_box(result):
    box = by_key(result)["gpu-h100-4x:sao"]
    assert (box.gpu_count, box.price_per_hour, box.currency, box.pricing) == (4, Decimal(10), "USD", Pricing.on_demand)
    assert box.price_per_gpu_hour == Decimal("2.5") and box.region == "sao" and box.ram_gb == 1024
    monthly = by_key(result)["gpu-h100-4x:sao:1mo"]
    assert (monthly.pricing, monthly.reserved_term) == (Pricing.reserved, "1mo")
    assert monthly.price_per_hour == Decimal(5000) / 730 and monthly.attributes["monthly_price"] == "5000"
    fra = by_key(result)["gpu-rtx6000ada-1x:fra"]  # priced by the month only
    assert fra.price_per_hour == Decimal(1) and "gpu-rtx6000ada-1x:fra:1mo" not in by_key(result)


def test_stock_becomes_availability(result):
    offers = by_key(result)
    assert offers["gpu-h100-8x:dal"].available is True  # in_stock
    assert offers["gpu-h100-8x:nyc"].available is False  # available to order, not in stock
    assert offers["gpu-h100-8x:tyo"].available is False
    assert offers["gpu-h100-8x:tyo"].attributes["stock_level"] == "unavailable"
    sao = offers["gpu-h100-4x:sao"].attributes
    assert (sao["stock_level"], sao["deploys_instantly"]) == ("medium", True)


def test_gpu_name_form_factor():
    assert gpu_name({"type": "NVIDIA H100", "interconnect": "NVLink", "vram_per_gpu": 80}) == "H100 SXM 80GB"
    assert gpu_name({"type": "NVIDIA L40S", "interconnect": "PCIe", "vram_per_gpu": 48}) == "L40S PCIe 48GB"
    assert gpu_name({"type": "AMD MI300X", "vram_per_gpu": 192}) == "AMD MI300X 192GB"


def test_malformed_plan_dropped_with_reason(result):
    assert "gpu-b200-8x in 'United States': no USD price" in result.skipped
    odd = ScrapeResult()
    parse_page({"data": [{"id": "p"}, {"attributes": {"slug": "cpu-only", "specs": {}, "regions": []}}]}, 1, odd, set())
    assert not odd.offers and "attributes" in odd.skipped[0] and "cpu-only: no GPU" in odd.skipped[1]


def test_bearer_and_pages_until_total(result):
    _, seen = fetch_recording(Latitude, {"LATITUDE_API_KEY": SECRET})
    assert len(seen) == 1 and seen[0].headers["authorization"] == f"Bearer {SECRET}"
    assert seen[0].url.params["filter[gpu]"] == "true"
    row = {
        "attributes": {
            "slug": "l4",
            "specs": {"gpu": {"type": "NVIDIA L4", "count": 1, "vram_per_gpu": 24}},
            "regions": [{"pricing": {"USD": {"hour": 0.5}}, "locations": {"available": ["DAL"]}}],
        }
    }
    bodies = [{"data": [row], "meta": {"total_pages": 2}}, {"data": [], "meta": {"total_pages": 2}}]
    cassette = Cassette.from_json(
        {
            "interactions": [
                {
                    "request": {
                        "method": "GET",
                        "url": f"{URL}?filter[gpu]=true&page[size]=100&page[number]={i + 1}",
                        "body": None,
                    },
                    "response": {"status": 200, "headers": {}, "json": body},
                }
                for i, body in enumerate(bodies)
            ]
        }
    )
    got, pages = fetch_recording(Latitude, {"LATITUDE_API_KEY": SECRET}, cassette)
    assert [o.key for o in got.offers] == ["l4:dal"] and len(pages) == 2


def test_missing_credentials():
    assert_missing_credentials(Latitude, "LATITUDE_API_KEY")


def test_secret_not_in_errors():
    assert_secrets_hidden(Latitude, {"LATITUDE_API_KEY": SECRET}, answer(401, json={"e": SECRET}), status=401)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Latitude, json_without(0, "data"), "data")

"""QuantaCloud adapter against its bundled cassette (providers/cassettes/quantacloud.json)."""

from __future__ import annotations

from decimal import Decimal

import providers.adapters.quantacloud as quanta
from providers.adapters.quantacloud import URL, QuantaCloud, parse_page
from providers.cassette import Cassette
from providers.contract import Pricing, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    replay_fixture,
)

result = replay_fixture(QuantaCloud)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB", "RTXPRO6000-96GB", "RTX4090-24GB", "L40S-48GB"})
    assert resolved["h100-sxm:8:us-east"] == "H100-SXM-80GB"
    assert len(result.offers) == 6


def test_whole_box_price_and_units(result):
    box = by_key(result)["h100-sxm:8:us-east"]
    assert (box.gpu_count, box.price_per_hour, box.currency) == (8, Decimal("19.92"), "USD")
    assert box.pricing is Pricing.on_demand
    assert box.price_per_gpu_hour == Decimal("2.49")
    assert (box.region, box.vcpus, box.ram_gb, box.gpu_memory_gb, box.available) == ("us-east", 192, 1536, 80, True)
    assert by_key(result)["rtx-4090:2:eu-north"].available is False


def test_mig_slice_is_not_a_whole_card(result):
    mig = by_key(result)["rtx-pro-6000-blackwell-mig-48gb:1:eu-north"]
    # 48 GB of a 96 GB card: half a card, named as the whole card so the catalog prices the right one
    assert (mig.gpu_count, mig.gpu_memory_gb, mig.gpu_name) == (Decimal("0.5"), 48, "RTX PRO 6000 Blackwell 96GB")
    assert mig.price_per_gpu_hour == Decimal("1.9") and mig.attributes["mig_slice"] is True
    unknown = ScrapeResult()
    row = {"gpu": {"slug": "b300-mig-45gb", "count": 1, "vramGB": 45}, "priceHourly": "1", "region": "x"}
    parse_page({"offers": [row]}, 0, unknown, set())
    assert not unknown.offers and "not priced as a whole card" in unknown.skipped[0]


def test_malformed_offer_dropped_with_reason(result):
    assert any("priceHourly" in s for s in result.skipped)  # the A100 box with a null price
    odd = ScrapeResult()
    parse_page({"offers": ["junk", {"gpu": {"slug": "l40s", "count": 1}, "priceHourly": "0.9"}]}, 0, odd, set())
    assert [o.key for o in odd.offers] == ["l40s:1:"] and "expected an object" in odd.skipped[0]


def test_pages_until_a_short_one(monkeypatch):
    monkeypatch.setattr(quanta, "PAGE_SIZE", 1)
    row = {"gpu": {"slug": "l40s", "count": 1, "vramGB": 48}, "priceHourly": "0.9", "region": "a"}
    pages = [{"offers": [row]}, {"offers": [row | {"region": "b"}]}, {"offers": []}]
    cassette = Cassette.from_json(
        {
            "interactions": [
                {
                    "request": {"method": "GET", "url": f"{URL}?page={i}&size=1", "body": None},
                    "response": {"status": 200, "headers": {}, "json": body},
                }
                for i, body in enumerate(pages)
            ]
        }
    )
    got, seen = fetch_recording(QuantaCloud, cassette=cassette)
    assert [o.key for o in got.offers] == ["l40s:1:a", "l40s:1:b"] and len(seen) == 3
    assert "x-api-key" not in seen[0].headers  # the catalog is public: no key sent


def test_rate_limit_declared():
    assert QuantaCloud.requests_per_minute == 200  # 3,000 per 15 minutes
    assert QuantaCloud.credentials == ()


def test_envelope_change_fails_the_run():
    assert_replay_raises(QuantaCloud, json_with(0, value={"data": []}), "offers")
    assert_replay_raises(QuantaCloud, answer(200, text="<html>"), "invalid JSON")

"""Koyeb adapter against its bundled cassette (providers/cassettes/koyeb.json)."""

from __future__ import annotations

from decimal import Decimal

import providers.adapters.koyeb as koyeb
from providers.adapters.koyeb import URL, Koyeb, parse_page
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

SECRET = "koyeb_tok_5e4d3c2b1a"

result = replay_fixture(Koyeb)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "RTX4000SFFADA-20GB",
            "RTXA6000-48GB",
            "L40S-48GB",
            "A100-PCIE-80GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
        },
        allowed_unknown={"Tenstorrent P150b 32GB"},
    )
    assert resolved["gpu-nvidia-h100:fra"] == "H100-SXM-80GB"
    assert len(result.offers) == 13  # CPU "small" left out; B200 without a price dropped


def test_price_per_second_strings_times_3600(result):
    l40s = by_key(result)["gpu-nvidia-l40s:sin"]
    assert l40s.price_per_hour == Decimal("0.00043056") * 3600 == Decimal("1.55001600")
    assert (l40s.gpu_count, l40s.currency, l40s.pricing, l40s.region) == (1, "USD", Pricing.on_demand, "sin")
    assert l40s.attributes["price_hourly"] == "1.55" and l40s.gpu_memory_gb == 48 and l40s.ram_gb == 64
    pair = by_key(result)["2-gpu-nvidia-h100:was"]
    assert (pair.gpu_count, pair.price_per_hour) == (2, Decimal("0.00183333") * 3600)


def test_status_and_hourly_fallback(result):
    assert by_key(result)["2-gpu-nvidia-h200:was"].available is False  # COMING_SOON
    assert by_key(result)["gpu-nvidia-a100:was"].available is True
    only_hourly = ScrapeResult()
    row = {"id": "g", "type": "gpu", "gpu": {"count": 1, "name": "L4", "memory": "24GB"}, "price_hourly": "0.7"}
    parse_page({"instances": [row]}, 0, only_hourly, set())
    assert only_hourly.offers[0].price_per_hour == Decimal("0.7") and only_hourly.offers[0].region == ""


def test_malformed_instance_dropped_with_reason(result):
    assert any("gpu-nvidia-b200" in s for s in result.skipped)
    odd = ScrapeResult()
    parse_page({"instances": [{"id": "x", "type": "gpu", "gpu": None, "price_per_second": "1"}]}, 0, odd, set())
    assert not odd.offers and "gpu is not an object" in odd.skipped[0]


def test_pages_by_offset(monkeypatch):
    monkeypatch.setattr(koyeb, "PAGE_SIZE", 1)
    row = {"id": "g", "type": "gpu", "gpu": {"count": 1, "name": "L4", "memory": "24GB"}, "price_hourly": "0.7"}
    bodies = [
        {"instances": [row | {"regions": ["fra"]}], "count": 2},
        {"instances": [row | {"regions": ["was"]}], "count": 2},
    ]
    cassette = Cassette.from_json(
        {
            "interactions": [
                {
                    "request": {"method": "GET", "url": f"{URL}?limit=1&offset={i}", "body": None},
                    "response": {"status": 200, "headers": {}, "json": body},
                }
                for i, body in enumerate(bodies)
            ]
        }
    )
    got, seen = fetch_recording(Koyeb, {"KOYEB_API_TOKEN": SECRET}, cassette)
    assert [o.key for o in got.offers] == ["g:fra", "g:was"] and len(seen) == 2
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"


def test_missing_credentials():
    assert_missing_credentials(Koyeb, "KOYEB_API_TOKEN")


def test_secret_not_in_errors():
    assert_secrets_hidden(Koyeb, {"KOYEB_API_TOKEN": SECRET}, answer(401, json={"error": SECRET}), status=401)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Koyeb, json_without(0, "instances"), "instances")

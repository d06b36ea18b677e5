"""Voltage Park adapter against its bundled cassette (providers/cassettes/voltagepark.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.voltagepark import URL, VoltagePark, next_page, parse_page
from providers.contract import Pricing, ProviderKind, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay_fixture,
)

SECRET = "vp_live_9a8b7c6d5e4f"
DALLAS = "a3111bd4-550a-47d0-838a-0a52bff2ae3f"
SEATTLE = "8c7b6a59-4d3e-4f2a-9b1c-0e9d8c7b6a59"

result = replay_fixture(VoltagePark)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB"})
    assert len(result.offers) == 6
    assert set(resolved.values()) == {"H100-SXM-80GB"}
    assert all(o.pricing is Pricing.on_demand for o in result.offers)


def test_rate_is_per_vm(result):
    eight = by_key(result)[f"{DALLAS}:404645e3-4677-4f48-b023-15baaa6621e1"]
    assert (eight.gpu_count, eight.price_per_hour, eight.price_per_gpu_hour) == (8, Decimal("15.92"), Decimal("1.99"))
    assert (eight.region, eight.instance_type, eight.vcpus, eight.ram_gb) == ("dallas-tx", "8x H100", 192, 1856)
    assert eight.attributes["config_id"] == "404645e3-4677-4f48-b023-15baaa6621e1"


def test_availability_from_free_count(result):
    offers = by_key(result)
    assert offers[f"{DALLAS}:2470d2d9-347a-4186-884d-bd0350ace4e3"].available is False  # 0 free: kept
    assert offers[f"{DALLAS}:c6fd6253-cbb6-4ea8-a20c-47644b431f1c"].available is True
    assert offers["5b0e7c1a-9f3d-4e2b-8a6c-1d2e3f4a5b6c:7e1d2c3b-4a5f-4e6d-9c8b-0a1b2c3d4e5f"].available is None


def test_second_page_is_followed(result):
    _, seen = fetch_recording(VoltagePark, {"VP_API_TOKEN": SECRET})
    assert [r.url.params["page"] for r in seen] == ["1", "2"]
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" and str(r.url).startswith(URL) for r in seen)
    seattle = by_key(result)[f"{SEATTLE}:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"]  # only on page 2
    assert seattle.region == "seattle-wa" and seattle.price_per_hour == Decimal("16.72")
    assert next_page({"pagination": {"total": 3}}, 1, 2) == "2"
    assert next_page({"pagination": {"total": 3}}, 2, 3) == ""
    assert next_page({}, 1, 2) == ""  # no total: one page


def test_odd_rows_dropped_with_reason(result):
    assert "salt-lake-city-ut:8x H100 (maintenance): no price" in result.skipped
    out = ScrapeResult()
    loc = {"id": "l", "name": "X", "presets": [{"id": "p", "gpu_count": 0, "gpu_type": "", "rate_hourly": "1"}]}
    parse_page({"items": [loc, loc]}, out, set())
    assert out.offers == [] and out.skipped == ["x:p: no GPUs", "x:p: no GPUs"]


def test_an_empty_page_ends_the_listing():
    def short(raw):
        json_with(1, "items", value=[])(raw)
        json_with(1, "pagination", "total", value=99)(raw)

    parsed, seen = fetch_recording(VoltagePark, {"VP_API_TOKEN": SECRET}, mutated_cassette(VoltagePark, short))
    assert len(seen) == 2 and len(parsed.offers) == 5  # page 1 only; no third request


def test_missing_credentials():
    assert_missing_credentials(VoltagePark, "VP_API_TOKEN")
    assert VoltagePark.kind is ProviderKind.cloud


def test_secret_not_in_errors():
    rejected = answer(401, json={"detail": f"token {SECRET} expired"}, at=0)
    assert_secrets_hidden(VoltagePark, {"VP_API_TOKEN": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_drops(VoltagePark, json_without(0, "items", 0, "presets"), "presets")
    assert_replay_drops(VoltagePark, json_without(0, "items", 0, "presets", 0, "rate_hourly"), "rate_hourly")

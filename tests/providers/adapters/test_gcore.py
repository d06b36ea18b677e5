"""Gcore adapter against its bundled cassette (providers/cassettes/gcore.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.gcore import Gcore, gpu_name, ident, pick_regions
from providers.contract import Pricing, ProviderError, ScrapeResult
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

SECRET = "1207$gc0re5ecret"

result = replay_fixture(Gcore)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB", "L40S-48GB"})
    assert resolved["baremetal:76:bm3-ai-1xlarge-h100-80-8"] == "H100-SXM-80GB"
    assert len(result.offers) == 4


def test_whole_server_price_in_native_currency(result):
    h100 = by_key(result)["baremetal:76:bm3-ai-1xlarge-h100-80-8"]
    assert (h100.gpu_count, h100.price_per_hour, h100.currency, h100.pricing) == (
        8,
        Decimal("22.96"),
        "EUR",
        Pricing.on_demand,
    )
    assert h100.price_per_gpu_hour == Decimal("2.87") and h100.region == "luxembourg-2"
    assert by_key(result)["baremetal:120:bm3-ai-1xlarge-h100-80-8"].currency == "USD"  # read, never assumed


def test_capacity_and_infiniband_kept(result):
    offers = by_key(result)
    h100 = offers["baremetal:76:bm3-ai-1xlarge-h100-80-8"]
    assert h100.available is True and h100.attributes["capacity"] == 3 and h100.attributes["reserved_capacity"] == 1
    assert (h100.attributes["nic_ib"], h100.attributes["infiniband"]) == ("8x400 Gbps", True)
    assert offers["baremetal:76:bm3-ai-1xlarge-h200-141-8"].available is False  # capacity 0
    assert offers["baremetal:120:bm3-ai-1xlarge-h100-80-8"].available is None  # no capacity given
    assert "nic_ib" not in offers["virtual:76:g3-ai-32-232-1100-l40s-48-2"].attributes


def test_malformed_and_unpriced_flavors_dropped(result):
    assert any("bm2-ai-1xlarge-a100-80-8: no price" in s for s in result.skipped)
    assert any("hardware_properties" in s for s in result.skipped)
    assert "virtual:120: not sold in this region" in result.skipped  # a 404 is not a failed run
    assert not any("g3-ai-disabled" in o.key for o in result.offers)


def test_gpu_name():
    assert gpu_name({"hardware_description": {"gpu": "8 x NVIDIA H100 SXM 80GB"}}) == "NVIDIA H100 SXM 80GB"
    assert gpu_name({"hardware_properties": {"gpu_manufacturer": "NVIDIA", "gpu_model": "A100"}}) == "NVIDIA A100"


def test_apikey_header_default_project_and_deduplicated_regions():
    _, seen = fetch_recording(Gcore, {"GCORE_API_KEY": SECRET})
    assert all(r.headers["authorization"] == f"APIKey {SECRET}" for r in seen)
    flavors = [r.url.path for r in seen if "/flavors" in r.url.path]
    assert flavors == [f"/cloud/v3/gpu/{k}/1207/{r}/flavors" for r in (76, 120) for k in ("baremetal", "virtual")]
    assert seen[-1].url.params["include_prices"] == "true" and seen[-1].url.params["include_capacity"] == "true"
    given, asked = fetch_recording(Gcore, {"GCORE_API_KEY": SECRET, "GCORE_PROJECT_ID": "1207"})
    assert "/cloud/v1/projects" not in [r.url.path for r in asked] and given.offers


def test_missing_credentials():
    assert_missing_credentials(Gcore, "GCORE_API_KEY")


def test_secret_not_in_errors():
    assert_secrets_hidden(Gcore, {"GCORE_API_KEY": SECRET}, answer(401, json={"m": SECRET}, at=0), status=401)


def test_envelope_change_fails_the_run():
    assert_replay_raises(Gcore, json_without(2, "results"), "results")
    assert_replay_raises(Gcore, answer(500, json={}, at=3), "HTTP 500")


def test_ids_that_would_shape_the_url_are_refused():
    assert (ident(76), ident("ed-10"), ident("../x"), ident(True), ident(""), ident([1])) == (
        "76",
        "ed-10",
        None,
        None,
        None,
        None,
    )
    lux = {"id": 76, "display_name": "Luxembourg-2", "state": "ACTIVE", "has_ai_gpu": True}
    regions = {"results": [lux | {"id": "../../v1/keys"}, lux]}
    assert pick_regions(regions, ScrapeResult()) == [("76", "luxembourg-2")]
    with pytest.raises(ProviderError, match="not a project id"):
        fetch_recording(Gcore, {"GCORE_API_KEY": SECRET, "GCORE_PROJECT_ID": "1/../2"})

"""Scaleway adapter against its bundled cassette (providers/cassettes/scaleway.json)."""

from __future__ import annotations

import json
from decimal import Decimal

from providers.adapters.scaleway import ZONES, Scaleway, availability_url, parse_zone, servers_url
from providers.cassette import Cassette, bundled_cassette
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

result = replay_fixture(Scaleway)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"RTX3070-8GB", "P100-PCIE-16GB", "L4-24GB", "L40S-48GB", "H100-PCIE-80GB", "H100-SXM-80GB"},
        provider="scaleway",
    )
    assert resolved["H100-1-80G:fr-par-2"] == "H100-PCIE-80GB"
    assert resolved["H100-SXM-8-80G:fr-par-2"] == "H100-SXM-80GB"
    assert len(result.offers) == 11


def test_euros_per_instance_hour(result):
    assert {o.currency for o in result.offers} == {"EUR"}
    eight = by_key(result)["H100-SXM-8-80G:fr-par-2"]
    assert (eight.price_per_hour, eight.gpu_count, eight.price_per_gpu_hour) == (
        Decimal("23.028"),
        8,
        Decimal("2.8785"),
    )
    assert (eight.vcpus, eight.ram_gb, eight.gpu_memory_gb) == (128, Decimal("960.00"), Decimal("80.00"))  # bytes
    assert eight.gpu_name == "H100 SXM 80GB" and eight.attributes["monthly_price"] == "16810.44"
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


def test_pagination_follows_the_total_count():
    _, requests = fetch_recording(Scaleway)
    pages = [(r.url.path, r.url.params["page"]) for r in requests if r.url.path.endswith("/products/servers")]
    path = "/instance/v1/zones/fr-par-1/products/servers"
    assert pages[:2] == [(path, "1"), (path, "2")]
    assert all(r.url.params["per_page"] == "100" for r in requests)
    offers = by_key(fetch_recording(Scaleway)[0])
    assert "GPU-3070-S:fr-par-1" in offers  # page 1
    assert "L40S-1-48G:fr-par-1" in offers  # page 2 only


def test_availability_is_stock_per_zone(result):
    offers = by_key(result)
    assert offers["L4-1-24G:fr-par-1"].available is True
    assert offers["L4-8-24G:fr-par-1"].available is False  # "shortage": kept, sold out
    assert offers["L4-8-24G:fr-par-1"].attributes["stock"] == "shortage"
    assert offers["H100-SXM-8-80G:fr-par-2"].available is True  # "scarce" is still in stock
    assert offers["L40S-8-48G:fr-par-2"].available is None  # not in the availability listing


def test_odd_rows_and_zones_are_reported(result):
    assert result.skipped[0] == "fr-par-2/B300-SXM-8-288G: hourly_price 0"
    assert result.skipped[1].startswith("pl-waw-2: zone not served (HTTP 404")
    assert not any(o.instance_type in {"PLAY2-PICO", "POP2-2C-8G", "DEV1-S"} for o in result.offers)  # CPU-only
    nameless = parse_result({"X-1": {"hourly_price": 1, "gpu": 1, "gpu_info": {}}})
    assert nameless.offers == [] and nameless.skipped == ["fr-par-1/X-1: 1 GPU(s) without gpu_info.gpu_name"]


def test_keyless_and_token_when_configured():
    assert Scaleway.credentials == () and Scaleway.optional_credentials == ("SCW_SECRET_KEY",)
    _, requests = fetch_recording(Scaleway)
    assert all("x-auth-token" not in r.headers for r in requests)
    _, requests = fetch_recording(Scaleway, {"SCW_SECRET_KEY": "scw-secret-1"})
    assert all(r.headers["x-auth-token"] == "scw-secret-1" for r in requests)
    assert {r.url.path.split("/")[4] for r in requests} == set(ZONES)


def test_without_a_total_a_short_page_ends_the_listing():
    raw = json.loads(bundled_cassette("scaleway").read_text())
    for interaction in raw["interactions"]:
        interaction["response"]["headers"].pop("x-total-count", None)
    cassette = Cassette.from_json(raw)
    offers, requests = fetch_recording(Scaleway, cassette=cassette)
    first = [r for r in requests if str(r.url).startswith(servers_url("fr-par-1") + "?")]
    assert len(first) == 1  # page 1 held fewer than per_page types
    assert "L40S-1-48G:fr-par-1" not in by_key(offers)


def test_schema_changes_raise():
    assert_replay_raises(Scaleway, json_without(0, "servers"), "'servers'")
    assert_replay_raises(Scaleway, json_with(0, "servers", value=[]), "not an object")
    assert_replay_raises(Scaleway, json_without(3, "servers", "H100-1-80G", "hourly_price"), "hourly_price")
    assert_replay_raises(Scaleway, answer(500, json={"message": "internal"}, at=2), "HTTP 500")
    assert_replay_raises(Scaleway, answer(200, text='{"servers": {', at=0), "invalid JSON")
    assert availability_url("fr-par-1").endswith("/fr-par-1/products/servers/availability")


def parse_result(servers: dict) -> ScrapeResult:
    out = ScrapeResult()
    parse_zone("fr-par-1", servers, {}, out)
    return out


def test_a_null_price_drops_that_row_with_its_reason_not_the_run():
    # The price was read with to_decimal: one null raised ProviderError and lost every other offer.
    from tests.factories.cassettes import mutated_cassette, replay

    whole = replay(Scaleway)
    dropped = replay(
        Scaleway, mutated_cassette(Scaleway, json_with(0, "servers", "GPU-3070-S", "hourly_price", value=None))
    )
    assert 0 < len(dropped.offers) < len(whole.offers)
    assert any("GPU-3070-S" in reason for reason in dropped.skipped)

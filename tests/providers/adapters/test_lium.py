"""Lium adapter against its bundled cassette (providers/cassettes/lium.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.lium import URL, Lium, location_of, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(Lium)
H200 = "f092246d-5704-4c9e-b57f-7c0710a06deb"  # a recorded node: 8x H200, 5 free


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "RTX5090-32GB",
            "H200-SXM-141GB",
            "A100-SXM-80GB",
            "H100-SXM-80GB",
            "RTX4090-24GB",
            "RTXPRO6000-96GB",
            "B200-SXM-180GB",
            "B300-SXM-288GB",
        },
        provider="lium",
    )
    assert resolved[H200] == "H200-SXM-141GB"  # lium convention: its NVL part says "H200 NVL"
    assert len(result.offers) == 10
    assert Lium.kind == ProviderKind.marketplace and Lium.credentials == ()


def test_whole_node_price_is_per_gpu_price_times_count(result):
    node = by_key(result)["ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1"]
    assert (node.gpu_count, node.price_per_hour, node.price_per_gpu_hour) == (8, Decimal("4.0"), Decimal("0.5"))
    assert (node.region, node.vcpus, node.ram_gb, node.gpu_memory_gb) == ("jp-13", 384, 251, 32)
    assert node.attributes["rent_url"].endswith(node.key) and node.attributes["min_rentable_gpu_count"] == 8
    assert node.currency == "USD" and node.available is True


def test_partly_rented_node_offers_its_free_gpus_with_a_share_of_the_host(result):
    node = by_key(result)[H200]
    assert (node.gpu_count, node.price_per_hour) == (5, Decimal("19.95"))
    assert (node.vcpus, node.ram_gb, node.attributes["disk_gb"]) == (120, Decimal("1259.38"), "2234.38")
    assert node.attributes["partly_rented"] is True and node.attributes["node_gpu_count"] == 8
    assert node.instance_type == "8x H200"


def test_spot_tier_is_a_spot_offer(result):
    spot = [o for o in result.offers if o.pricing == Pricing.spot]
    assert [o.key for o in spot] == ["45af0308-a13c-497f-93ea-ab06144eee29"]
    assert spot[0].region == "us-mn" and spot[0].attributes["tier"] == "spot"


def test_node_price_when_the_per_gpu_price_is_missing(result):
    node = by_key(result)["00000000-0000-4000-8000-000000000006"]
    assert (node.gpu_count, node.price_per_hour, node.price_per_gpu_hour) == (2, Decimal("0.62"), Decimal("0.31"))


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "00000000-0000-4000-8000-000000000007: 3 GPU(s) free, the smallest rental is 4",
        "00000000-0000-4000-8000-000000000008: no GPU free",
        "00000000-0000-4000-8000-000000000009: no country_code",
        "00000000-0000-4000-8000-000000000010: price 0 per GPU-hour",
    ]
    odd = parse({"nodes": ["not a node", {"id": "x", "gpu_model": None, "gpu_count": 1}]})
    assert odd.offers == [] and odd.skipped == ["nodes[0]: not an object", "x: no GPU model or count"]


@pytest.mark.parametrize(
    ("country", "region", "code"), [("US", "CA", "us-ca"), ("JP", "13", "jp-13"), ("DE", None, "de"), (None, "CA", "")]
)
def test_location_of(country, region, code):
    assert location_of(country, region) == code


def test_one_anonymous_request():
    _, requests = fetch_recording(Lium)
    assert [str(r.url) for r in requests] == [URL] and "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(Lium, json_without(0, "nodes"), "'nodes'")
    assert_replay_raises(Lium, json_with(0, "nodes", value={}), "not a list")
    assert_replay_drops(Lium, json_without(0, "nodes", 0, "id"), "'id'")
    assert_replay_drops(Lium, json_with(0, "nodes", 0, "price_per_gpu_hour", value="cheap"), "price_per_gpu_hour")
    assert_replay_raises(Lium, answer(200, text='{"nodes": ['), "invalid JSON")

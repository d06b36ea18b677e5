"""CloudRift adapter against its bundled cassette (providers/cassettes/cloudrift.json)."""

from __future__ import annotations

import json
from decimal import Decimal

from providers.adapters.cloudrift import BODY, CloudRift
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

result = replay_fixture(CloudRift)


def test_integrity(result):
    resolved = assert_integrity(
        result, expected_gpus={"RTX4090-24GB", "RTX5090-32GB", "RTXPRO6000-96GB", "MI350X-288GB"}
    )
    assert resolved["rtx49-10c-kn.1:us-east-nc-nr-1"] == "RTX4090-24GB"
    assert len(result.offers) == 9
    assert all(o.pricing is Pricing.on_demand for o in result.offers)  # CloudRift has no spot


def test_cents_per_instance_to_dollars(result):
    eight = by_key(result)["rtx49-10c-kn.8:us-east-nc-nr-1"]
    assert eight.gpu_count == 8
    assert eight.price_per_hour == Decimal("3.12")  # 312 cents for the whole VM
    assert eight.price_per_gpu_hour == Decimal("0.39")
    mi350 = by_key(result)["mi350x-128c-dl.8:us-central-tx-dl-1"]
    assert mi350.price_per_hour == Decimal("22.4") and mi350.price_per_gpu_hour == Decimal("2.8")


def test_bytes_converted_per_gpu(result):
    one = by_key(result)["rtx49-10c-kn.1:us-east-nc-nr-1"]
    assert one.gpu_memory_gb == Decimal("23.99")  # vram bytes are per GPU
    assert by_key(result)["rtx49-10c-kn.2:us-east-nc-nr-1"].gpu_memory_gb == Decimal("23.99")
    assert one.ram_gb == Decimal("64.00") and one.vcpus == 10
    assert one.attributes["disk_gb"] == "500.00"


def test_availability_per_datacenter(result):
    offers = by_key(result)
    assert offers["rtx49-10c-kn.1:us-east-nc-nr-1"].available is True
    assert offers["rtx49-10c-kn.1:eu-north-se-1"].available is False
    assert offers["rtx49-10c-kn.1:eu-north-se-1"].region == "eu-north-se-1"
    assert offers["rtx49-10c-kn.8:us-east-nc-nr-1"].available is False
    nowhere = offers["rtx59-16c-nr.4"]  # empty nodes_per_dc: kept, unavailable, no region
    assert (nowhere.region, nowhere.available) == ("", False)
    assert not any(k.startswith("epyc") for k in offers)  # CPU-only variant skipped


def test_request_body_and_no_auth():
    _, seen = fetch_recording(CloudRift)
    assert len(seen) == 2  # a 503, then the retry
    assert all(r.method == "POST" and json.loads(r.content) == BODY for r in seen)
    assert BODY["version"] == "2025-03-21"
    assert all("authorization" not in r.headers for r in seen)


def test_truncated_json_raises():
    truncated = answer(200, text='{"version": "2025-03-21", "data": {"instance_types": [{"brand_short": "RTX', at=1)
    assert_replay_raises(CloudRift, truncated, "invalid JSON")


def test_schema_change_raises():
    no_cost = json_without(1, "data", "instance_types", 0, "variants", 0, "cost_per_hour")
    assert_replay_drops(CloudRift, no_cost, "cost_per_hour")


def test_renamed_envelope_raises():
    def mutate(raw):
        data = raw["interactions"][1]["response"]["json"]["data"]
        data["types"] = data.pop("instance_types")

    assert_replay_raises(CloudRift, mutate, "instance_types")


def test_repeated_500_raises():
    assert_replay_raises(CloudRift, answer(500, text="boom"), "gave up after 4 attempts")

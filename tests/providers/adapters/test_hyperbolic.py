"""Hyperbolic adapter against its bundled cassette (providers/cassettes/hyperbolic.json)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from providers.adapters.hyperbolic import API_KEY, BODY, URL, Hyperbolic, parse, raw_gpu_name
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(Hyperbolic)


def test_integrity(result):
    resolved = assert_integrity(
        result, expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB", "L40S-48GB", "RTX4090-24GB"}, provider="hyperbolic"
    )
    assert resolved["ceti12"] == "H200-SXM-141GB"  # the interface settles SXM against NVL
    assert sorted(by_key(result)) == ["ceti12", "korea-amd14-78", "l40s-eu-2", "rtx4090-9"]
    assert Hyperbolic.kind == ProviderKind.marketplace and Hyperbolic.optional_credentials == (API_KEY,)


def test_cents_per_gpu_hour_times_the_free_gpus(result):
    node = by_key(result)["korea-amd14-78"]
    assert (node.gpu_count, node.price_per_hour, node.price_per_gpu_hour) == (3, Decimal("3.87"), Decimal("1.29"))
    assert (node.gpu_name, node.region, node.currency, node.pricing) == (
        "NVIDIA-H100-80GB-HBM3 SXM5",
        "us-central-1",
        "USD",
        Pricing.on_demand,
    )
    assert node.gpu_memory_gb == Decimal("79.65")  # 81559 MiB
    assert node.attributes["partly_rented"] is True and node.attributes["cluster_name"] == "angelic-mushroom-dolphin"
    assert node.instance_type == "8x NVIDIA-H100-80GB-HBM3" and node.available is True


def test_busy_down_and_malformed_nodes_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "sfc-a100-3: no GPU free (4 of 4 reserved)",
        "h100-maint: status 'node_down'",
        "instances[6]: schema changed: '1.29$' at instances[6].pricing.price.amount is not a number",
    ]
    odd = parse({"instances": [1, {"id": "r", "reserved": True}, {"id": "m", "hardware": {"gpus": []}}]})
    assert odd.skipped == ["instances[0]: not an object", "r: reserved", "m: GPU models [], not one named model"]


@pytest.mark.parametrize(
    ("model", "interface", "name"),
    [
        ("NVIDIA-H200-141GB-HBM3E", "SXM5", "NVIDIA-H200-141GB-HBM3E SXM5"),
        ("NVIDIA-A100-SXM4-80GB", "SXM4", "NVIDIA-A100-SXM4-80GB"),
        ("NVIDIA-H100", "NVLink", "NVIDIA-H100"),
        ("NVIDIA-L4", None, "NVIDIA-L4"),
    ],
)
def test_raw_gpu_name(model, interface, name):
    assert raw_gpu_name(model, interface) == name


def test_one_post_anonymous_unless_a_key_is_configured():
    _, requests = fetch_recording(Hyperbolic)
    assert [(r.method, str(r.url)) for r in requests] == [("POST", URL)]
    assert json.loads(requests[0].content) == BODY and "authorization" not in requests[0].headers
    _, requests = fetch_recording(Hyperbolic, {API_KEY: "hb-secret"})
    assert requests[0].headers["authorization"] == "Bearer hb-secret"


def test_schema_changes_raise():
    assert_replay_raises(Hyperbolic, json_without(0, "instances"), "'instances'")
    assert_replay_raises(Hyperbolic, json_with(0, "instances", value={}), "not a list")

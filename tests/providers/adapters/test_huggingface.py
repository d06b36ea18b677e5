"""Hugging Face Inference Endpoints adapter against its bundled cassette (providers/cassettes/huggingface.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.huggingface import URL, HuggingFace, parse, raw_gpu_name
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(HuggingFace)
H200 = "aws:ap-northeast-2:nvidia-h200:x4"


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "T4-16GB",
            "L4-24GB",
            "A10G-24GB",
            "L40S-48GB",
            "A100-SXM-80GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
        },
        provider="huggingface",
    )
    # Azure's A100 states no form factor: ingest assumes the slower PCIe card and says so
    assert resolved["azure:eastus:nvidia-a100:x1"] == "A100-PCIE-80GB"
    assert len(result.offers) == 10
    assert HuggingFace.kind == ProviderKind.cloud and HuggingFace.credentials == ()


def test_price_is_per_instance_and_memory_is_the_instance_total(result):
    box = by_key(result)[H200]
    assert (box.gpu_name, box.gpu_count, box.price_per_hour, box.price_per_gpu_hour) == (
        "nvidia h200 SXM",
        4,
        Decimal(20),
        Decimal(5),
    )
    assert (box.region, box.currency, box.pricing, box.gpu_memory_gb, box.vcpus, box.ram_gb) == (
        "ap-northeast-2",
        "USD",
        Pricing.on_demand,
        141,
        92,
        1000,
    )
    assert box.instance_type == "nvidia-h200-x4" and box.available is True


def test_each_instance_names_its_hyperscaler_as_upstream(result):
    assert {o.upstream for o in result.offers} == {"aws", "azure", "gcp"}
    assert by_key(result)["gcp:us-east4:nvidia-h100:x1"].upstream == "gcp"
    assert by_key(result)["gcp:us-east4:nvidia-h100:x1"].available is False  # the compute is unavailable


def test_cpu_and_neuron_are_left_out_and_bad_prices_dropped_with_a_reason(result):
    assert not any("intel" in o.key or "inf2" in o.key for o in result.offers)
    assert result.skipped == [
        "vendors[0].regions[1].computes[1]: schema changed: expected a number at vendors[0].regions[1].computes[1]"
        ".pricePerHour, got NoneType",
        "vendors[1].regions[0].computes[1]: schema changed: 'ten' at vendors[1].regions[0].computes[1].pricePerHour"
        " is not a number",
    ]
    odd = parse({"vendors": [{"name": "aws", "regions": [{"name": "x", "computes": [3]}]}]})
    assert odd.skipped == ["vendors[0].regions[0].computes[0]: not an object"]


@pytest.mark.parametrize(
    ("instance_type", "vendor", "name"),
    [
        ("nvidia-h100", "aws", "nvidia h100 SXM"),
        ("nvidia-a100", "gcp", "nvidia a100 SXM"),
        ("nvidia-a100", "azure", "nvidia a100"),
        ("nvidia-l4", "aws", "nvidia l4"),
    ],
)
def test_raw_gpu_name(instance_type, vendor, name):
    assert raw_gpu_name(instance_type, vendor) == name


def test_one_anonymous_request():
    _, requests = fetch_recording(HuggingFace)
    assert [str(r.url) for r in requests] == [URL] and "authorization" not in requests[0].headers


def test_a_malformed_envelope_raises_and_a_malformed_vendor_or_region_is_dropped():
    assert_replay_raises(HuggingFace, json_without(0, "vendors"), "'vendors'")
    assert_replay_drops(HuggingFace, json_without(0, "vendors", 0, "regions"), "'regions'")
    assert_replay_drops(HuggingFace, json_with(0, "vendors", 2, "regions", 0, "computes", value={}), "not a list")

"""Lambda Cloud adapter against its bundled cassette (providers/cassettes/lambdalabs.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.lambdalabs import URL, LambdaLabs, parse, parse_description, parse_gpu_description
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(LambdaLabs)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={
            "H100-SXM-80GB",
            "H100-PCIE-80GB",
            "A100-SXM-80GB",
            "A100-SXM-40GB",
            "A100-PCIE-40GB",
            "A10-24GB",
            "RTXA6000-48GB",
            "GH200-96GB",
            "B200-SXM-180GB",
            "QRTX6000-24GB",
        },
        provider="lambdalabs",  # Lambda's 8x V100 is an SXM2 server (lambdalabs convention)
    )
    assert "V100-SXM-16GB" in resolved.values()
    assert resolved["gpu_8x_h100_sxm5:us-south-1"] == "H100-SXM-80GB"
    assert resolved["gpu_1x_h100_pcie:us-west-1"] == "H100-PCIE-80GB"
    assert resolved["gpu_1x_a100_sxm4:us-east-1"] == "A100-SXM-40GB"
    assert resolved["gpu_8x_a100_80gb_sxm4"] == "A100-SXM-80GB"
    assert resolved["gpu_1x_rtx6000"] == "QRTX6000-24GB"  # Lambda's "RTX 6000 (24 GB)" is the Quadro
    assert len(result.offers) == 16
    assert result.skipped == []


def test_cents_to_dollars_per_instance(result):
    eight = by_key(result)["gpu_8x_h100_sxm5:us-west-3"]
    assert eight.price_per_hour == Decimal("23.92")  # 2392 cents for the whole 8-GPU instance
    assert eight.gpu_count == 8
    assert eight.price_per_gpu_hour == Decimal("2.99")
    assert eight.gpu_memory_gb == 80
    assert (eight.vcpus, eight.ram_gb) == (208, 1800)
    one = by_key(result)["gpu_1x_a10:us-east-1"]
    assert (one.price_per_hour, one.gpu_count) == (Decimal("0.75"), 1)


def test_one_offer_per_region_with_capacity(result):
    offers = by_key(result)
    h100 = [o for o in result.offers if o.instance_type == "gpu_8x_h100_sxm5"]
    assert {o.region for o in h100} == {"us-west-3", "us-south-1"}
    assert all(o.available is True for o in h100)
    assert offers["gpu_1x_a10:europe-central-1"].attributes["region_description"] == "Germany"
    assert offers["gpu_1x_h100_sxm5:us-east-1"].gpu_name == "H100 (80 GB SXM5)"
    assert offers["gpu_1x_h100_sxm5:us-east-1"].attributes["raw_gpu"] == "1x H100 (80 GB SXM5)"


def test_sold_out_type_keeps_one_unavailable_offer(result):
    offers = by_key(result)
    sold_out = offers["gpu_8x_a100_80gb_sxm4"]
    assert sold_out.region == ""
    assert sold_out.available is False
    assert sold_out.price_per_hour == Decimal("14.32")
    assert not any(k.startswith("gpu_8x_a100_80gb_sxm4:") for k in offers)
    assert {k for k, o in offers.items() if o.available is False} == {
        "gpu_8x_a100_80gb_sxm4",
        "gpu_1x_a100",
        "gpu_1x_rtx6000",
    }


def test_gpu_description_names_the_card_when_description_is_short(result):
    offers = by_key(result)
    eight = offers["gpu_8x_h100_sxm5:us-west-3"]  # description "8x H100": no memory, no form factor
    assert (eight.gpu_name, eight.gpu_memory_gb, eight.gpu_count) == ("H100 (80 GB SXM5)", 80, 8)
    assert eight.attributes["raw_gpu"] == "8x H100"
    assert eight.attributes["gpu_description"] == "H100 (80 GB SXM5)"
    a10 = offers["gpu_1x_a10:us-east-1"]  # no gpu_description: the description alone still names it
    assert (a10.gpu_name, a10.gpu_memory_gb) == ("A10 (24 GB PCIe)", 24)
    assert "gpu_description" not in a10.attributes


def test_current_host():
    assert URL == "https://cloud.lambda.ai/api/v1/instance-types"
    _, requests = fetch_recording(LambdaLabs, {"LAMBDA_API_KEY": "k"})
    assert {r.url.host for r in requests} == {"cloud.lambda.ai"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("H100 (80 GB SXM5)", ("H100 (80 GB SXM5)", Decimal(80))),
        ("Tesla V100 (16 GB)", ("Tesla V100 (16 GB)", Decimal(16))),
        ("B200 ( 180 GB  SXM6 )", ("B200 (180 GB SXM6)", Decimal(180))),
        ("H100", None),
    ],
)
def test_parse_gpu_description(text, expected):
    assert parse_gpu_description(text) == expected


def test_short_description_without_gpu_description_is_skipped_with_reason():
    short = parse(_payload("8x H100", 8, ["us-east-1"]))
    assert short.offers == [] and short.skipped == ["t: cannot read GPU from description '8x H100'"]
    payload = _payload("8x H100", 8, ["us-east-1"])
    payload["data"]["t"]["instance_type"]["gpu_description"] = "H100 (80 GB SXM5)"
    del payload["data"]["t"]["instance_type"]["specs"]["gpus"]  # the count then comes from "8x"
    (offer,) = parse(payload).offers
    assert (offer.gpu_name, offer.gpu_count, offer.gpu_memory_gb) == ("H100 (80 GB SXM5)", 8, 80)


def test_no_spot_on_lambda(result):
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("8x H100 (80 GB SXM5)", (8, "H100 (80 GB SXM5)", Decimal(80))),
        ("1x A10 (24 GB PCIe)", (1, "A10 (24 GB PCIe)", Decimal(24))),
        ("8x Tesla V100 (16 GB)", (8, "Tesla V100 (16 GB)", Decimal(16))),
        ("1x GH200 (96 GB)", (1, "GH200 (96 GB)", Decimal(96))),
        ("16x B200 (180 GB SXM6)", (16, "B200 (180 GB SXM6)", Decimal(180))),  # multi-digit count
        ("12x  RTX A6000 ( 48 GB )", (12, "RTX A6000 (48 GB)", Decimal(48))),
        ("CPU only", None),
    ],
)
def test_parse_description(description, expected):
    assert parse_description(description) == expected


def _payload(description: str, gpus: int, regions: list[str]):
    return {
        "data": {
            "t": {
                "instance_type": {
                    "name": "t",
                    "description": description,
                    "price_cents_per_hour": 1999,
                    "specs": {"vcpus": 8, "memory_gib": 64, "storage_gib": 512, "gpus": gpus},
                },
                "regions_with_capacity_available": [{"name": r, "description": r} for r in regions],
            }
        }
    }


def test_multi_digit_count_and_cpu_only_types():
    (offer,) = parse(_payload("10x A100 (40 GB SXM4)", 10, ["US-East-1"])).offers
    assert offer.gpu_count == 10 and offer.region == "us-east-1"
    assert offer.price_per_hour == Decimal("19.99")
    assert offer.price_per_gpu_hour == Decimal("1.999")
    cpu = parse(_payload("CPU only (no GPU)", 0, ["us-east-1"]))
    assert cpu.offers == [] and cpu.skipped == ["t: no GPUs (CPU-only instance type)"]
    odd = parse(_payload("a mystery accelerator", 1, []))
    assert odd.offers == [] and "cannot read GPU" in odd.skipped[0]


def test_bearer_key_sent_and_never_in_errors():
    result, requests = fetch_recording(LambdaLabs, {"LAMBDA_API_KEY": "lam-key-123"})
    assert len(result.offers) == 16
    # The cassette answers the first call with 429: the adapter retried once, sending the key each time.
    assert [r.headers["authorization"] for r in requests] == ["Bearer lam-key-123"] * 2
    echo_key = answer(401, json={"error": {"message": "invalid API key lam-key-123"}})
    assert_secrets_hidden(LambdaLabs, {"LAMBDA_API_KEY": "lam-key-123"}, echo_key, status=401)


def test_missing_credentials():
    assert_missing_credentials(LambdaLabs, "LAMBDA_API_KEY")


def test_truncated_json_raises():
    truncated = answer(200, text='{"data": {"gpu_1x_h100_sxm5": {"inst')
    assert_replay_raises(LambdaLabs, truncated, "invalid JSON")


def test_schema_change_raises():
    drop_price = json_without(1, "data", "gpu_1x_a10", "instance_type", "price_cents_per_hour")
    assert_replay_raises(LambdaLabs, drop_price, "price_cents_per_hour")
    no_regions = json_without(1, "data", "gpu_1x_a10", "regions_with_capacity_available")
    assert_replay_raises(LambdaLabs, no_regions, "regions_with_capacity_available")
    assert_replay_raises(LambdaLabs, answer(200, json={"error": "gone"}), "'data'")
    bad_number = json_with(1, "data", "gpu_1x_a10", "instance_type", "specs", "vcpus", value="thirty")
    assert_replay_raises(LambdaLabs, bad_number, "not a number")


def test_http_500_past_retries_raises():
    assert_replay_raises(LambdaLabs, answer(500, json={"error": "internal"}), "gave up after 4 attempts: HTTP 500")

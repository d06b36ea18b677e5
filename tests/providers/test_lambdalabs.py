"""Lambda Cloud adapter against its bundled cassette (providers/cassettes/lambdalabs.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.lambdalabs import LambdaLabs, parse, parse_description
from tests.providers.helpers import assert_integrity, mutated_cassette, replay
from tracker.offers import Pricing


class SpyTransport(ReplayTransport):
    """Replays the cassette and keeps every request the adapter sent."""

    def __init__(self, cassette: Cassette) -> None:
        super().__init__(cassette)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await super().handle_async_request(request)


def fetch_with(credentials: dict[str, str], cassette: Cassette | None = None):
    spy = SpyTransport(cassette or Cassette.load(bundled_cassette("lambdalabs")))

    async def go():
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=3, backoff_base_s=0)
            return await LambdaLabs().fetch(ctx)

    return asyncio.run(go()), spy.requests


@pytest.fixture(scope="module")
def result():
    return replay(LambdaLabs)


def by_key(result):
    return {o.key: o for o in result.offers}


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
    result, requests = fetch_with({"LAMBDA_API_KEY": "lam-key-123"})
    assert len(result.offers) == 16
    # The cassette answers the first call with 429: the adapter retried once, sending the key each time.
    assert [r.headers["authorization"] for r in requests] == ["Bearer lam-key-123"] * 2

    def echo_key(raw):
        raw["interactions"] = [
            {
                "request": raw["interactions"][0]["request"],
                "response": {"status": 401, "json": {"error": {"message": "invalid API key lam-key-123"}}},
            }
        ]

    with pytest.raises(ProviderError) as err:
        fetch_with({"LAMBDA_API_KEY": "lam-key-123"}, mutated_cassette(LambdaLabs, echo_key))
    assert "HTTP 401" in str(err.value)
    assert "lam-key-123" not in str(err.value)


def test_missing_credentials():
    with pytest.raises(MissingCredentials):
        fetch_with({})


def _set_body(raw, **response):
    for interaction in raw["interactions"]:
        interaction["response"] = {"status": 200, "headers": {"content-type": "application/json"}} | response


def _data(raw):
    return raw["interactions"][1]["response"]["json"]["data"]


def test_truncated_json_raises():
    truncated = '{"data": {"gpu_1x_h100_sxm5": {"inst'
    cassette = mutated_cassette(LambdaLabs, lambda raw: _set_body(raw, text=truncated))
    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(LambdaLabs, cassette)


def test_schema_change_raises():
    def drop_price(raw):
        del _data(raw)["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"]

    with pytest.raises(ProviderError, match="price_cents_per_hour"):
        replay(LambdaLabs, mutated_cassette(LambdaLabs, drop_price))

    def no_regions(raw):
        del _data(raw)["gpu_1x_a10"]["regions_with_capacity_available"]

    with pytest.raises(ProviderError, match="regions_with_capacity_available"):
        replay(LambdaLabs, mutated_cassette(LambdaLabs, no_regions))

    with pytest.raises(ProviderError, match="'data'"):
        replay(LambdaLabs, mutated_cassette(LambdaLabs, lambda raw: _set_body(raw, json={"error": "gone"})))

    def bad_number(raw):
        _data(raw)["gpu_1x_a10"]["instance_type"]["specs"]["vcpus"] = "thirty"

    with pytest.raises(ProviderError, match="not a number"):
        replay(LambdaLabs, mutated_cassette(LambdaLabs, bad_number))


def test_http_500_past_retries_raises():
    def always_500(raw):
        _set_body(raw, json={"error": "internal"})
        for interaction in raw["interactions"]:
            interaction["response"]["status"] = 500

    with pytest.raises(ProviderError, match="gave up after 4 attempts: HTTP 500"):
        replay(LambdaLabs, mutated_cassette(LambdaLabs, always_500))

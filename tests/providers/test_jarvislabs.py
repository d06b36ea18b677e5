"""JarvisLabs adapter against its bundled cassette (providers/cassettes/jarvislabs.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from providers.base import FetchContext, MissingCredentials, ProviderError
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.jarvislabs import JarvisLabs, parse
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
    spy = SpyTransport(cassette or Cassette.load(bundled_cassette("jarvislabs")))

    async def go():
        async with httpx.AsyncClient(transport=spy, timeout=5) as client:
            ctx = FetchContext(client=client, credentials=credentials, retries=3, backoff_base_s=0)
            return await JarvisLabs().fetch(ctx)

    return asyncio.run(go()), spy.requests


@pytest.fixture(scope="module")
def result():
    return replay(JarvisLabs)


def by_key(result):
    return {o.key: o for o in result.offers}


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB", "RTXPRO6000-96GB", "L4-24GB", "A30-24GB"},
        # JarvisLabs does not say whether its A100s (80 and 40 GB) are SXM or PCIe boards.
        allowed_unknown={"A100-80GB", "A100"},
    )
    assert resolved["india-noida-01:H100:vm:8"] == "H100-SXM-80GB"
    assert resolved["europe-01:H200:any:1"] == "H200-SXM-141GB"
    assert len(result.offers) == 94
    assert result.skipped == ["server_meta[13]: no gpu_type"]


def test_per_gpu_price_times_count(result):
    offers = by_key(result)
    eight = offers["india-noida-01:H100:vm:8"]
    assert eight.price_per_hour == Decimal("21.52")  # 8 × 2.69
    assert eight.price_per_gpu_hour == Decimal("2.69")
    assert (eight.vcpus, eight.ram_gb, eight.gpu_memory_gb) == (192, 1600, 80)
    assert eight.instance_type == "H100x8"
    assert eight.gpu_name == "H100 SXM" and eight.attributes["raw_gpu"] == "H100"
    one = offers["india-noida-01:H100:vm:1"]
    assert (one.price_per_hour, one.gpu_count) == (Decimal("2.69"), 1)


def test_counts_follow_num_gpus(result):
    counts = {}
    for o in result.offers:
        if o.pricing is Pricing.on_demand:
            counts.setdefault(o.key.rsplit(":", 1)[0], set()).add(int(o.gpu_count))
    assert counts["india-noida-01:H100:vm"] == set(range(1, 9))
    assert counts["india-noida-01:A100-80GB:vm"] == {1, 2, 3, 4}  # num_gpus "4"
    assert counts["india-noida-01:L4:container"] == {1, 2}
    assert counts["europe-01:H100:any"] == {1}  # no num_gpus: one GPU per instance


def test_availability_from_free_devices(result):
    offers = by_key(result)
    # RTX-PRO6000 VM: 4 free now, 6 effective → up to 6 GPUs can be admitted.
    assert offers["india-chennai-01:RTX-PRO6000:vm:6"].available is True
    assert offers["india-chennai-01:RTX-PRO6000:vm:7"].available is False
    assert offers["india-noida-01:A100-80GB:vm:1"].available is True
    assert offers["india-noida-01:A100-80GB:vm:2"].available is False
    assert offers["india-noida-01:H100:container:1"].available is False
    assert offers["europe-01:H100:any:1"].region == "europe-01"


def test_spot_only_for_containers(result):
    offers = by_key(result)
    spots = [o for o in result.offers if o.pricing is Pricing.spot]
    assert spots and all(o.attributes["workload_type"] == "container" for o in spots)
    assert not any(k.startswith(("india-noida-01:H100:vm", "europe-01")) and k.endswith(":spot") for k in offers)
    spot = offers["india-noida-01:H200:container:8:spot"]
    assert spot.price_per_hour == Decimal("15.92")  # 8 × 1.99
    assert spot.available is False  # only 6 spot devices free
    assert offers["india-noida-01:H200:container:6:spot"].available is True
    assert offers["india-chennai-01:RTX-PRO6000:container:1:spot"].available is False  # 0 spot free


def test_bearer_key_sent_after_503_retry_and_never_in_errors():
    result, requests = fetch_with({"JARVISLABS_API_KEY": "jl-key-9"})
    assert len(result.offers) == 94
    assert [r.headers["authorization"] for r in requests] == ["Bearer jl-key-9"] * 2  # 503, then 200

    def echo(raw):
        raw["interactions"] = [
            {
                "request": raw["interactions"][0]["request"],
                "response": {"status": 401, "json": {"message": "Invalid token jl-key-9"}},
            }
        ]

    with pytest.raises(ProviderError) as err:
        fetch_with({"JARVISLABS_API_KEY": "jl-key-9"}, mutated_cassette(JarvisLabs, echo))
    assert "HTTP 401" in str(err.value) and "jl-key-9" not in str(err.value)


def test_missing_credentials():
    with pytest.raises(MissingCredentials):
        fetch_with({})


def test_parse_edge_rows():
    payload = {
        "server_meta": [
            {"gpu_type": "L4", "region": "X", "price_per_hour": None, "workload_type": "vm"},
            {"gpu_type": "L4", "region": "X", "price_per_hour": "0.5", "num_gpus": "20", "vram": "24 GB"},
            {"gpu_type": "L4", "region": "Y", "price_per_hour": "37", "currency": "INR"},
        ]
    }
    parsed = parse(payload)
    assert parsed.skipped == ["L4 in x: price_per_hour=None", "L4 in y: priced in INR"]
    assert [int(o.gpu_count) for o in parsed.offers] == list(range(1, 9))  # capped at 8
    assert all(o.available is None and o.gpu_memory_gb == 24 for o in parsed.offers)
    with pytest.raises(ProviderError, match="INR"):
        parse({"currency": "INR", "server_meta": []})


def _payload(raw):
    return raw["interactions"][1]["response"]["json"]


def test_truncated_json_raises():
    def truncate(raw):
        raw["interactions"][1]["response"] = {"status": 200, "text": '{"server_meta": [{"gpu_type": "A1'}

    with pytest.raises(ProviderError, match="invalid JSON"):
        replay(JarvisLabs, mutated_cassette(JarvisLabs, truncate))


def test_schema_change_raises():
    with pytest.raises(ProviderError, match="'server_meta'"):
        replay(JarvisLabs, mutated_cassette(JarvisLabs, lambda raw: _payload(raw).pop("server_meta")))

    with pytest.raises(ProviderError, match=r"'price_per_hour' missing at server_meta\[2\]"):
        replay(
            JarvisLabs, mutated_cassette(JarvisLabs, lambda raw: _payload(raw)["server_meta"][2].pop("price_per_hour"))
        )

    def bad_count(raw):
        _payload(raw)["server_meta"][0]["num_gpus"] = "four"

    with pytest.raises(ProviderError, match="not a number"):
        replay(JarvisLabs, mutated_cassette(JarvisLabs, bad_count))


def test_http_500_past_retries_raises():
    def always_500(raw):
        for interaction in raw["interactions"]:
            interaction["response"]["status"] = 500

    with pytest.raises(ProviderError, match="gave up after 4 attempts: HTTP 500"):
        replay(JarvisLabs, mutated_cassette(JarvisLabs, always_500))

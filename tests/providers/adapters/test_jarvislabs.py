"""JarvisLabs adapter against its bundled cassette (providers/cassettes/jarvislabs.json)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from providers.adapters.jarvislabs import URL, JarvisLabs, parse
from providers.cassette import Cassette
from providers.contract import Pricing, ProviderError
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_drops,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay,
    replay_fixture,
    resolve_all,
)
from tests.factories.real_payloads import real_payload

result = replay_fixture(JarvisLabs)


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
    counts: dict[str, set[int]] = {}  # instance name → the GPU counts it is offered with
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
    result, requests = fetch_recording(JarvisLabs, {"JARVISLABS_API_KEY": "jl-key-9"})
    assert len(result.offers) == 94
    assert [r.headers["authorization"] for r in requests] == ["Bearer jl-key-9"] * 2  # 503, then 200
    echo = answer(401, json={"message": "Invalid token jl-key-9"})
    assert_secrets_hidden(JarvisLabs, {"JARVISLABS_API_KEY": "jl-key-9"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(JarvisLabs, "JARVISLABS_API_KEY")


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


def test_truncated_json_raises():
    truncated = answer(200, text='{"server_meta": [{"gpu_type": "A1', at=1)
    assert_replay_raises(JarvisLabs, truncated, "invalid JSON")


def test_schema_change_raises():
    assert_replay_raises(JarvisLabs, json_without(1, "server_meta"), "'server_meta'")
    no_price = json_without(1, "server_meta", 2, "price_per_hour")
    assert_replay_drops(JarvisLabs, no_price, r"'price_per_hour' missing at server_meta\[2\]")
    assert_replay_drops(JarvisLabs, json_with(1, "server_meta", 0, "num_gpus", value="four"), "not a number")


def test_http_500_past_retries_raises():
    assert_replay_raises(JarvisLabs, answer(500, text="internal error"), "gave up after 4 attempts: HTTP 500")


# --- the real `server_meta` response ------------------------------------------------------------------

REAL_META = "jarvislabs/gpuhunt_310de51_server_meta.json"
REGION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@pytest.fixture(scope="module")
def real():
    interaction = {
        "request": {"method": "GET", "url": URL, "body": None},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": real_payload(REAL_META)},
    }
    return replay(JarvisLabs, Cassette.from_json({"provider": "jarvislabs", "interactions": [interaction]}))


def test_real_cards_counts_and_prices(real):
    resolved, unknown = resolve_all(real, "jarvislabs")
    assert unknown == {} and real.skipped == []
    # L4 container (8 + 8 spot) and vm (8), A100-80GB (4), two RTX PRO 6000 spellings (8 + 8), H100 (1 + 1)
    assert len(real.offers) == 46
    assert {o.attributes["raw_gpu"]: resolved[o.key] for o in real.offers} == {
        "L4": "L4-24GB",
        "A100-80GB": "A100-PCIE-80GB",  # form factor not stated: the slowest variant, flagged below
        "RTX-PRO6000": "RTXPRO6000-96GB",
        "RTX PRO 6000": "RTXPRO6000-96GB",
        "H100": "H100-SXM-80GB",
    }
    a100 = by_key(real)["india-noida-01:A100-80GB:vm:4"]
    assert "variant_assumed" in a100.attributes
    assert (a100.gpu_count, a100.gpu_memory_gb, a100.price_per_hour) == (4, 80, Decimal("5.96"))  # 4 x 1.49
    eight = by_key(real)["india-chennai-01:RTX-PRO6000:vm:8"]
    assert (eight.price_per_hour, eight.price_per_gpu_hour) == (Decimal("15.12"), Decimal("1.89"))
    assert (eight.vcpus, eight.ram_gb) == (224, 1280)  # 28 and 160 per GPU
    assert all(REGION.match(o.region) for o in real.offers)


def test_real_spot_only_for_container_rows(real):
    offers = by_key(real)
    spot = [o for o in real.offers if o.pricing is Pricing.spot]
    assert {o.attributes["workload_type"] for o in spot} == {"container"}
    assert len(spot) == 8
    assert offers["india-noida-01:L4:container:8:spot"].price_per_hour == Decimal("2.32")  # 8 x 0.29
    # the L4 vm row carries spot_price 0.29 too, but JarvisLabs sells no spot VMs
    assert not any(k.startswith("india-noida-01:L4:vm:") and k.endswith(":spot") for k in offers)
    assert "india-noida-01:A100-80GB:vm:1:spot" not in offers


def test_real_availability_from_free_devices(real):
    offers = by_key(real)
    # L4: 3 free on demand, 2 free for spot
    assert [offers[f"india-noida-01:L4:container:{n}"].available for n in (1, 3, 4)] == [True, True, False]
    assert [offers[f"india-noida-01:L4:container:{n}:spot"].available for n in (1, 2, 3)] == [True, True, False]
    assert [offers[f"india-noida-01:A100-80GB:vm:{n}"].available for n in (1, 2)] == [True, False]
    # rows without num_gpus are single-GPU offers; workload null is keyed "any"
    assert offers["europe-01:H100:any:1"].available is True
    assert not any(k.startswith("europe-01:H100:any:2") for k in offers)
    assert offers["unknown-region:H100:vm:1"].region == "unknown-region"  # kept as listed (source-edited row)

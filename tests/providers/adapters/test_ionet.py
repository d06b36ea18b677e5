"""io.net adapter against its bundled cassette (providers/cassettes/ionet.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.ionet import CAAS_URL, VMAAS_URL, IoNet, parse, raw_gpu_name
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    mutated_cassette,
    replay,
    replay_fixture,
)

result = replay_fixture(IoNet)
H100 = "8H100.80S.176V__FI"  # a recorded configuration


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"H100-SXM-80GB", "B300-SXM-288GB", "H200-SXM-141GB", "RTX4090-24GB"},
        provider="ionet",
    )
    assert resolved[H100] == "H100-SXM-80GB"
    assert len(result.offers) == 5
    assert IoNet.kind == ProviderKind.marketplace and IoNet.credentials == ()


def test_price_is_for_the_whole_configuration(result):
    box = by_key(result)[H100]
    assert (box.gpu_name, box.gpu_count, box.price_per_hour) == ("H100 SXM5", 8, Decimal("27.875342465753423"))
    assert box.price_per_gpu_hour.quantize(Decimal("0.0001")) == Decimal("3.4844")
    assert (box.currency, box.pricing, box.region, box.gpu_memory_gb) == ("USD", Pricing.on_demand, "fi", 80)
    assert (box.vcpus, box.ram_gb, box.instance_type) == (176, 1480, "8H100.80S.176V")
    assert box.available is True and box.attributes["available_replicas"] == 3


def test_stock_comes_from_sold_out_and_replicas(result):
    offers = by_key(result)
    assert offers["8B300.240V__FI"].available is False  # sold out
    assert offers["8H200.141S.192V__US"].available is False  # not sold out, but no replica free
    assert offers["1RTX4090.16V__DE"].available is True  # no caas row: sold_out says
    assert "available_replicas" not in offers["1RTX4090.16V__DE"].attributes


def test_cpu_rows_are_left_out_and_bad_rows_dropped_with_a_reason(result):
    assert "1CPU__US" not in by_key(result)
    assert result.skipped == [
        "1L40S.0V__US: price 0",
        "hardware[7]: schema changed: 'two dollars' at hardware[7].price is not a number",
    ]
    odd = parse({"data": {"hardware": [17, {"name": "H100", "num_cards": 1, "price": 2}]}})
    assert odd.skipped == [
        "hardware[0]: not an object",
        "hardware[1]: schema changed: field 'id' missing at hardware[1]",
    ]


def test_a_failing_stock_call_keeps_the_prices():
    failed = replay(IoNet, mutated_cassette(IoNet, answer(503, text="down", at=1)))
    assert len(failed.offers) == 5 and by_key(failed)["8H200.141S.192V__US"].available is True
    assert failed.skipped[-1].startswith("caas: stock from sold_out only (") and "HTTP 503" in failed.skipped[-1]


@pytest.mark.parametrize(
    ("name", "link", "raw"),
    [("H100", "sxm5", "H100 SXM5"), ("L40S", None, "L40S"), ("A100", "pcie", "A100 PCIE"), ("H100", "nvlink", "H100")],
)
def test_raw_gpu_name(name, link, raw):
    assert raw_gpu_name(name, link) == raw


def test_two_anonymous_requests():
    _, requests = fetch_recording(IoNet)
    assert [str(r.url) for r in requests] == [VMAAS_URL, CAAS_URL]
    assert not any("authorization" in r.headers for r in requests)


def test_schema_changes_raise():
    assert_replay_raises(IoNet, json_without(0, "data"), "'data'")
    assert_replay_raises(IoNet, json_with(0, "data", "hardware", value={}), "not a list")
    assert_replay_raises(IoNet, answer(200, text='{"data": ', at=0), "invalid JSON")

"""SAKURA internet adapter against its bundled cassette (providers/cassettes/sakura.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.sakura import ZONES, Sakura, parse, url_for
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

result = replay_fixture(Sakura)
H100 = "is1a:plan/24core-240gb-1gpu-nvidia_h100_80gbvram-g2"


def test_integrity(result):
    # Neither name says SXM or PCIe: ingest assumes the slower variant and notes it on the offer.
    resolved = assert_integrity(result, expected_gpus={"H100-PCIE-80GB", "V100-PCIE-32GB"}, provider="sakura")
    assert resolved[H100] == "H100-PCIE-80GB" and "variant_assumed" in by_key(result)[H100].attributes
    assert sorted(by_key(result)) == [
        "is1a:plan/24core-240gb-1gpu-nvidia_h100_80gbvram-g2",
        "is1a:plan/4core-56gb-1gpu-g2",
        "is1b:plan/24core-240gb-1gpu-nvidia_h100_80gbvram",
    ]
    assert Sakura.kind == ProviderKind.cloud and Sakura.credentials == ()


def test_price_stays_in_yen_per_instance_hour(result):
    plan = by_key(result)[H100]
    assert (plan.gpu_name, plan.gpu_count, plan.price_per_hour, plan.currency) == ("H100 80GB", 1, Decimal(990), "JPY")
    assert (plan.region, plan.pricing, plan.vcpus, plan.ram_gb, plan.gpu_memory_gb) == (
        "is1a",
        Pricing.on_demand,
        24,
        240,
        80,
    )
    assert (plan.attributes["daily_price"], plan.attributes["monthly_price"]) == ("23100", "385000")


def test_v100_memory_is_the_known_card(result):
    v100 = by_key(result)["is1a:plan/4core-56gb-1gpu-g2"]
    assert (v100.gpu_name, v100.gpu_memory_gb, v100.price_per_hour, v100.vcpus, v100.ram_gb) == (
        "V100 32GB",
        32,
        481,
        4,
        56,
    )


def test_non_gpu_classes_are_left_out_and_bad_plans_dropped_with_a_reason(result):
    assert result.skipped == [
        "is1a.ServiceClasses.4: schema changed: '未定' at is1a.ServiceClasses.4.Price.Hourly is not a number",
        "is1b:plan/4core-56gb-1gpu: 2 GPU(s) in DisplayName, 1 in the class name",
    ]
    odd = parse(
        {"ServiceClasses": {"0": [], "1": {"ServiceClassName": "plan/8core-64gb-1gpu", "DisplayName": "x"}}}, "is1a"
    )
    assert odd.skipped == [
        "is1a.ServiceClasses.0: not an object",
        "is1a:plan/8core-64gb-1gpu: no GPU model in DisplayName 'x'",
    ]


def test_one_request_per_zone_with_the_xhr_header():
    _, requests = fetch_recording(Sakura)
    assert [str(r.url) for r in requests] == [url_for(z) for z in ZONES]
    assert all(r.headers["x-requested-with"] == "XMLHttpRequest" and "authorization" not in r.headers for r in requests)


def test_schema_changes_raise():
    assert_replay_raises(Sakura, json_without(0, "ServiceClasses"), "'ServiceClasses'")
    assert_replay_raises(Sakura, json_with(1, "ServiceClasses", value=[]), "is1b is not an object")

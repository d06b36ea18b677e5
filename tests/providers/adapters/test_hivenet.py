"""Hivenet adapter against its bundled cassette (providers/cassettes/hivenet.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.hivenet import URL, Hivenet, parse
from providers.contract import Pricing, ProviderKind
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    replay_fixture,
)

result = replay_fixture(Hivenet)
R5090 = "11111111-1111-1111-1111-111111111111"


def test_integrity(result):
    assert_integrity(result, expected_gpus={"RTX5090-32GB", "RTX4090-24GB"}, provider="hivenet")
    assert sorted(by_key(result)) == [
        R5090,
        "22222222-2222-2222-2222-222222222222",
        "44444444-4444-4444-4444-444444444444",
    ]
    assert Hivenet.kind == ProviderKind.cloud and Hivenet.credentials == ()


def test_node_price_stays_in_eur(result):
    node = by_key(result)["22222222-2222-2222-2222-222222222222"]
    assert (node.gpu_name, node.gpu_count, node.price_per_hour, node.price_per_gpu_hour) == (
        "RTX 4090",
        4,
        Decimal("1.6"),
        Decimal("0.4"),
    )
    assert (node.currency, node.pricing, node.region, node.vcpus, node.ram_gb) == (
        "EUR",
        Pricing.on_demand,
        "cntxt",
        32,
        192,
    )
    one = by_key(result)[R5090]
    assert (one.price_per_hour, one.currency, one.region, one.instance_type) == (
        Decimal("0.75"),
        "EUR",
        "france-2",
        "1x-RTX-5090",
    )


def test_discount_is_kept_but_not_the_price(result):
    node = by_key(result)["44444444-4444-4444-4444-444444444444"]
    assert node.price_per_hour == Decimal("6.0") and node.attributes["hourly_price_discounted"] == "5.4"


def test_demo_presets_and_bad_rows_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "c7e6cd7d-3f36-4d72-8020-86915ecf35e0: €0 per hour (a demo preset)",
        "presets[5]: schema changed: '0,40' at presets[5].hourly_price is not a number",
        "66666666-6666-6666-6666-666666666666: GPU models ['RTX 4090', 'RTX 5090'], not one named model",
    ]
    assert parse([None]).skipped == ["presets[0]: not an object"]


def test_one_anonymous_request():
    _, requests = fetch_recording(Hivenet)
    assert [str(r.url) for r in requests] == [URL] and "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(Hivenet, json_with(0, value={"presets": []}), "not a list")
    # one preset's broken field is that preset's problem, not the run's
    assert parse([{"id": "x", "gpu": "RTX 5090"}]).skipped == [
        "presets[0]: schema changed: gpu is not a list at presets[0]"
    ]

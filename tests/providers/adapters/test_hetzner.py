"""Hetzner dedicated GPU servers against the bundled cassette (providers/cassettes/hetzner.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.hetzner import URL, Hetzner, parse
from providers.contract import Pricing, ProviderKind
from providers.cost_terms import COST_TERMS
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    replay_fixture,
)

result = replay_fixture(Hetzner)
GEX131 = "1666-1667-1670:hel1"


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"RTXPRO6000MAXQ-96GB", "RTX4000SFFADA-20GB"}, provider="hetzner")
    assert resolved[GEX131] == "RTXPRO6000MAXQ-96GB"
    assert sorted(by_key(result)) == ["1564-1565:fsn1", "1564-1565:nbg1", "1666-1667-1670:fsn1", GEX131]
    assert Hetzner.kind == ProviderKind.cloud and Hetzner.credentials == ()


def test_hourly_price_in_eur_and_the_setup_fee_apart(result):
    server = by_key(result)[GEX131]
    assert (server.gpu_name, server.gpu_count, server.price_per_hour, server.currency) == (
        "RTX PRO 6000 Blackwell Max-Q",
        1,
        Decimal("1.4364"),
        "EUR",
    )
    assert (server.region, server.pricing, server.vcpus, server.ram_gb, server.gpu_memory_gb) == (
        "hel1",
        Pricing.on_demand,
        48,
        256,
        96,
    )
    assert server.attributes[COST_TERMS] == {"setup_fee": "2912.0000"}
    assert server.attributes["monthly_price"] == "896.3000" and server.available is True
    assert by_key(result)["1666-1667-1670:fsn1"].available is False  # quantity 0


def test_monthly_only_price_is_turned_hourly_by_the_stated_rule(result):
    fsn1, nbg1 = by_key(result)["1564-1565:fsn1"], by_key(result)["1564-1565:nbg1"]
    assert fsn1.price_per_hour == Decimal("184") / 730 and fsn1.attributes["price_basis"] == "monthly/730"
    assert nbg1.price_per_hour == Decimal("0.2949") and "price_basis" not in nbg1.attributes
    assert fsn1.attributes[COST_TERMS] == {"setup_fee": "79.0000"}


def test_cpu_servers_are_left_out_and_bad_rows_dropped_with_a_reason(result):
    assert not any(o.instance_type == "EX44" for o in result.offers)
    assert result.skipped == [
        "configurations[3]: schema changed: 'auf Anfrage' at configurations[3].availabilities.HEL1.price.monthly"
        " is not a number"
    ]
    odd = parse(["x", {"product_name": "GEX999", "configuration_id": "1"}])
    assert odd.skipped == ["configurations[0]: not an object", "GEX999: a GEX product we do not know"]


def test_one_anonymous_request_in_eur():
    _, requests = fetch_recording(Hetzner)
    assert [str(r.url) for r in requests] == [f"{URL}?currency=EUR"] and "authorization" not in requests[0].headers


def test_schema_changes_raise():
    assert_replay_raises(Hetzner, json_with(0, value={"configurations": []}), "not a list")

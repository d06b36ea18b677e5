"""Clore.ai adapter against its bundled cassette (providers/cassettes/clore.json)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters.clore import API_KEY, URL, Clore, parse, split_gpu
from providers.contract import PriceKind, Pricing, ProviderKind
from tests.factories.cassettes import (
    assert_integrity,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(Clore)


def test_integrity(result):
    assert_integrity(
        result,
        expected_gpus={
            "RTX5090-32GB",
            "RTX4090-24GB",
            "RTX3090-24GB",
            "V100-SXM-32GB",
            "RTX5070TI-16GB",
            "RTX5080-16GB",
        },
        provider="clore",
    )
    assert len(result.offers) == 9
    assert (
        Clore.kind == ProviderKind.marketplace and Clore.credentials == () and Clore.optional_credentials == (API_KEY,)
    )


def test_price_per_day_becomes_per_hour(result):
    server = by_key(result)["41230"]
    assert (server.gpu_name, server.gpu_count, server.price_per_hour) == ("NVIDIA GeForce RTX 5090", 1, Decimal("1.25"))
    assert (server.currency, server.pricing, server.region, server.gpu_memory_gb) == (
        "USD",
        Pricing.on_demand,
        "us",
        32,
    )
    assert server.attributes["usd_per_day"] == "30" and server.available is True
    spot = by_key(result)["41230:spot"]
    assert (spot.pricing, spot.price_per_hour, spot.attributes["usd_per_day"]) == (Pricing.spot, Decimal("0.625"), "15")


def test_count_from_the_name_or_the_field_and_rented_servers(result):
    v100 = by_key(result)["41234"]
    assert (v100.gpu_name, v100.gpu_count, v100.price_per_hour) == ("Tesla V100SXM232GB", 8, Decimal("11.25") / 24)
    assert v100.available is False  # rented
    assert by_key(result)["41232"].price_per_gpu_hour == Decimal(65) / 24 / 2


def test_usd_listing_when_the_usd_block_is_missing(result):
    assert by_key(result)["41235"].price_per_hour == Decimal("9.75") / 24


def test_odd_servers_and_dear_bids_are_dropped_with_a_reason(result):
    assert "41237" in by_key(result) and "41237:spot" not in by_key(result)
    assert result.skipped == [
        "41236: '2x Mixed GPUs' names no one card",
        "servers[8]: schema changed: 'twenty' at servers[8].price.usd.on_demand_usd is not a number",
        "41237:spot: $30/day bid is above the $23/day on-demand price",
    ]
    assert parse({"code": 0, "servers": [[], {"id": 1, "specs": {"gpu": ""}, "price": {}}]}).skipped == [
        "servers[0]: not an object",
        "1: no GPU model or count",
    ]


@pytest.mark.parametrize(
    ("text", "split"),
    [("2x NVIDIA GeForce RTX 5090", (2, "NVIDIA GeForce RTX 5090")), ("Tesla T4", (None, "Tesla T4"))],
)
def test_split_gpu(text, split):
    assert split_gpu(text) == split


def test_anonymous_unless_a_key_is_configured():
    _, requests = fetch_recording(Clore)
    assert [str(r.url) for r in requests] == [URL] and "auth" not in requests[0].headers
    _, requests = fetch_recording(Clore, {API_KEY: "k-123"})
    assert requests[0].headers["auth"] == "k-123"


def test_schema_changes_raise():
    assert_replay_raises(Clore, json_with(0, "code", value=1), "code 1")
    assert_replay_raises(Clore, json_without(0, "servers"), "'servers'")
    assert_replay_raises(Clore, json_with(0, "servers", value={}), "not a list")


def test_a_rented_servers_prices_are_its_renters_not_an_asking_price(result):
    rented = [o for o in result.offers if o.available is False]
    free = [o for o in result.offers if o.available is True]
    assert rented and free
    assert all((o.price_kind, o.orderable) == (PriceKind.transacted, False) for o in rented)
    assert all((o.price_kind, o.orderable) == (PriceKind.asking, True) for o in free)

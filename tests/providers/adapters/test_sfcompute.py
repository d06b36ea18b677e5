"""SF Compute adapter against its bundled cassette (providers/cassettes/sfcompute.json)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from providers.adapters.sfcompute import CLUSTER_NODES, INSTANCE_TYPES, TERMS, SfCompute, parse_quote, quote_params
from providers.contract import Pricing, ProviderError, ProviderKind, ScrapeResult
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_without,
    replay_fixture,
)

SECRET = "sfc_live_5e4d3c2b1a09"
NOW = datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)

result = replay_fixture(SfCompute)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB"})
    assert resolved["h200ki:7d"] == "H200-SXM-141GB"
    assert len(result.offers) == 7 + 5  # one node of each type and term, and the 4-node InfiniBand clusters


def test_a_cluster_is_its_own_offer_at_its_own_price(result):
    one, four = by_key(result)["h100i:7d"], by_key(result)["h100i:7d:4n"]
    assert (four.gpu_count, four.attributes["cluster_nodes"], four.attributes["block_nodes"]) == (32, 4, 4)
    assert four.attributes["network"] == "infiniband" and four.attributes["gpus_per_node"] == 8
    assert four.price_per_gpu_hour != one.price_per_gpu_hour  # the order book prices the cluster on its own
    assert "h200ki:1d:4n: no block on offer" in result.skipped


def test_block_price_becomes_dollars_per_gpu_hour(result):
    week = by_key(result)["h100i:7d"]
    # 1 node × 8 GPUs × 168 h at 211 cents = 283584 cents for the block
    assert week.attributes["block_price_cents"] == "283584"
    assert (week.gpu_count, week.price_per_gpu_hour) == (8, Decimal("2.11"))
    assert week.price_per_hour == Decimal("2835.84") / 168
    assert week.attributes["block_hours"] == "168" and week.attributes["block_nodes"] == 1
    assert week.attributes["block_gpus"] == 8


def test_every_offer_is_a_reservation_with_its_term(result):
    assert all(o.pricing is Pricing.reserved for o in result.offers)
    assert {o.reserved_term for o in result.offers} == set(TERMS)
    month = by_key(result)["h100i:1mo"]
    assert month.reserved_term == "1mo" and month.attributes["block_hours"] == "730"  # term_hours("1mo")
    assert month.price_per_gpu_hour == Decimal("1.94")
    assert all(o.price_per_hour > 0 and o.available is True for o in result.offers)


def test_no_block_on_offer_is_dropped_with_reason(result):
    assert "h100v:1mo: no block on offer" in result.skipped
    assert "h200ki:1d: no block on offer" in result.skipped
    assert {"h100v:1mo", "h200ki:1d"}.isdisjoint(by_key(result))


def test_now_start_is_measured_from_the_next_minute():
    out = ScrapeResult()
    quote = {
        "price": 9600,
        "quantity": 2,
        "instance_type": "h100i",
        "start_at": "NOW",
        "end_at": "2026-12-01T00:31:00Z",
    }
    parse_quote({"object": "quote", "quote": quote}, "h100i", "1d", NOW, out)
    (offer,) = out.offers
    # the block runs 00:01 → 00:31 (half an hour) on 16 GPUs: $96 / 0.5 h / 16 = $12 per GPU-hour
    assert offer.gpu_count == 16 and offer.price_per_gpu_hour == 12
    assert offer.attributes["block_start"] == "2026-12-01T00:01:00+00:00"


def test_odd_quotes():
    out = ScrapeResult()
    empty = {"price": 0, "quantity": 1, "start_at": "2026-12-01T00:00:00Z", "end_at": "2026-12-01T01:00:00Z"}
    parse_quote({"quote": empty}, "h100i", "1d", NOW, out)
    assert out.offers == [] and out.skipped == ["h100i:1d: quote without a price"]
    with pytest.raises(ProviderError, match="not a date-time"):
        parse_quote({"quote": empty | {"price": 5, "end_at": "soon"}}, "h100i", "1d", NOW, out)


def test_quote_requests():
    _, seen = fetch_recording(SfCompute, {"SFCOMPUTE_API_KEY": SECRET})
    assert len(seen) == sum(len(CLUSTER_NODES[t]) for t in INSTANCE_TYPES) * len(TERMS)
    assert sum("quantity=4" in str(r.url) for r in seen) == 2 * len(TERMS)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)
    week = quote_params("h100i", TERMS["7d"])
    assert week["min_duration"] == 544320 and week["max_duration"] == 665280  # −10 % … +10 % of 7 days
    assert quote_params("h100i", 3600)["max_duration"] == 7200  # at least an hour of slack
    assert TERMS == {"1d": 86400, "7d": 604800, "1mo": 2628000}
    assert {r.url.params["side"] for r in seen} == {"buy"} and SfCompute.kind is ProviderKind.marketplace


def test_missing_credentials():
    assert_missing_credentials(SfCompute, "SFCOMPUTE_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"error": f"bad token {SECRET}"}, at=0)
    assert_secrets_hidden(SfCompute, {"SFCOMPUTE_API_KEY": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_raises(SfCompute, json_without(0, "quote", "price"), "price")
    assert_replay_raises(SfCompute, json_without(0, "quote"), "quote")

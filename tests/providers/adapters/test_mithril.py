"""Mithril adapter against its bundled cassette (providers/cassettes/mithril.json)."""

from __future__ import annotations

from decimal import Decimal

from providers.adapters.mithril import PRICING_URL, Mithril, dollars, parse, raw_gpu_name
from providers.contract import PriceKind, Pricing, ProviderKind
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
    replay_fixture,
)

SECRET = "mithril-live-4b3c2d1e0f"

result = replay_fixture(Mithril)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"H100-SXM-80GB", "H200-SXM-141GB"})
    assert resolved["ccs-h200.sxm.1x:us-central2-b"] == "H200-SXM-141GB"
    assert len(result.offers) == 5
    assert all(o.pricing is Pricing.spot and o.available is True for o in result.offers)


def test_clearing_price_per_instance(result):
    box = by_key(result)["h100-80gb.sxm.8x:us-central2-a"]
    assert (box.gpu_count, box.price_per_hour, box.price_per_gpu_hour) == (8, Decimal("12.00"), Decimal("1.5"))
    assert box.attributes["price_source"] == "last_instance_price"
    assert box.attributes["minimum_price"] == "8"  # 800 cents reserve
    assert (box.vcpus, box.ram_gb, box.gpu_memory_gb) == (168, 1814, 80)
    assert by_key(result)["h100-80gb.sxm.8x:us-central1-b"].price_per_hour == Decimal("9.60")


def test_reserve_price_stands_in_for_a_blank_clearing_price(result):
    h200 = by_key(result)["ccs-h200.sxm.8x:us-central2-b"]
    assert h200.price_per_hour == Decimal(8) and h200.attributes["price_source"] == "minimum_price"


def test_odd_rows_dropped_with_reason(result):
    assert "a100-80gb.sxm.8x: no region with spot capacity" in result.skipped
    assert not any(k.startswith("cpu.") for k in by_key(result))
    types = [{"fid": "f", "name": "h100-80gb.sxm.8x", "gpu_type": "H100", "num_gpus": 8}]
    spot = [{"instance_type": "f", "region": "r", "last_instance_price": None}]
    assert parse(types, {"f": None}, spot).skipped == ["h100-80gb.sxm.8x:r: no clearing or reserve price"]


def test_names_and_units():
    assert raw_gpu_name("H100", "h100-80gb.sxm.8x", Decimal(80)) == "H100 SXM 80GB"
    assert raw_gpu_name("H200", "ccs-h200.sxm.1x", Decimal(141)) == "H200 SXM 141GB"
    assert raw_gpu_name("L40S", "l40s-48gb.pcie.1x", Decimal(48)) == "L40S PCIe 48GB"
    assert dollars("$1,234.50", "x") == Decimal("1234.50") and dollars("", "x") is None


def test_bearer_and_one_pricing_call_per_gpu_type():
    _, seen = fetch_recording(Mithril, {"MITHRIL_API_KEY": SECRET})
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in seen)
    priced = [r.url.params["instance_type"] for r in seen if str(r.url).startswith(PRICING_URL)]
    assert len(priced) == 5 and "it_Cpu9aaaaaaaaaaaa" not in priced  # CPU type not priced
    assert Mithril.kind is ProviderKind.marketplace


def test_missing_credentials():
    assert_missing_credentials(Mithril, "MITHRIL_API_KEY")


def test_secret_not_in_errors():
    rejected = answer(401, json={"error": f"invalid token {SECRET}"}, at=0)
    assert_secrets_hidden(Mithril, {"MITHRIL_API_KEY": SECRET}, rejected, status=401)


def test_schema_change_raises():
    assert_replay_raises(Mithril, json_without(1, "minimum_price_cents"), "minimum_price_cents")
    assert_replay_raises(Mithril, json_with(6, value={"items": []}), "not a list")
    assert_replay_drops(Mithril, json_without(0, 0, "fid"), "fid")  # one type, not the run


def test_clearing_prices_are_transacted_and_reserves_floors_neither_orderable(result):
    kinds = {o.key: (o.price_kind, o.orderable) for o in result.offers}
    assert kinds["h100-80gb.sxm.8x:us-central2-a"] == (PriceKind.transacted, False)  # the last auction's clear
    assert kinds["ccs-h200.sxm.8x:us-central2-b"] == (PriceKind.floor, False)  # the reserve stands in
    assert {o.price_kind for o in result.offers} <= {PriceKind.transacted, PriceKind.floor}

"""Massed Compute adapter against its bundled cassette (providers/cassettes/massedcompute.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from providers.adapters.massedcompute import URL, MassedCompute, parse, parse_description
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_missing_credentials,
    assert_replay_raises,
    assert_secrets_hidden,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)
from tracker.pipeline.scraping import ScrapeJob, run_scrape

result = replay_fixture(MassedCompute)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"RTXA6000-48GB", "L40S-48GB", "H100-SXM-80GB", "A100-SXM-80GB", "RTX6000ADA-48GB"},
        provider="massedcompute",
    )
    assert resolved["gpu_8x_h100_sxm5:us-central-2:spot"] == "H100-SXM-80GB"
    assert len(result.offers) == 9


def test_cents_per_vm_to_dollars_and_count_from_description(result):
    four = by_key(result)["gpu_4x_a6000:us-central-2"]
    assert (four.gpu_count, four.price_per_hour, four.price_per_gpu_hour) == (4, Decimal("2.28"), Decimal("0.57"))
    assert (four.vcpus, four.ram_gb, four.attributes["storage_gb"]) == (24, 192, 1024)
    assert four.attributes["billing"] == "per-minute" and four.attributes["capacity_available"] == 2
    h100 = by_key(result)["gpu_8x_h100_sxm5"]
    assert (h100.gpu_name, h100.gpu_memory_gb) == ("H100 SXM5 80GB", 80)
    assert all(o.currency == "USD" for o in result.offers)


def test_spot_products_are_spot_offers_of_the_same_machine(result):
    offers = by_key(result)
    spot = offers["gpu_1x_a6000:us-central-3:spot"]
    on_demand = offers["gpu_1x_a6000:us-central-3"]
    assert spot.pricing == Pricing.spot and on_demand.pricing == Pricing.on_demand
    assert spot.instance_type == "gpu_1x_a6000_spot" and spot.price_per_hour < on_demand.price_per_hour


def test_regions_with_capacity_and_sold_out_products(result):
    offers = by_key(result)
    assert {o.region for o in result.offers if o.instance_type == "gpu_1x_a6000"} == {"us-central-3", "us-central-2"}
    assert offers["gpu_1x_a6000:us-central-3"].attributes["region_description"] == "Des Moines, IA"
    sold_out = offers["gpu_8x_h100_sxm5"]
    assert (sold_out.region, sold_out.available, sold_out.price_per_hour) == ("", False, Decimal("21.52"))
    assert all(o.available is True for o in result.offers if o.region)


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "gpu_1x_l40: price_cents_per_hour=0",
        "cpu_32c: cannot read a GPU count and model from 'CPU Only (32 vCPU)'",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1x RTX A6000", (1, "RTX A6000")), ("8x  H100 SXM5 80GB ", (8, "H100 SXM5 80GB")), ("RTX A6000", None)],
)
def test_parse_description(text, expected):
    assert parse_description(text) == expected


def test_duplicate_regions_are_one_offer():
    item = {
        "instance_type": {"name": "p", "description": "2x L40S", "price_cents_per_hour": 158, "specs": {}},
        "regions_with_capacity_available": [{"name": "US-Central-3"}, {"name": "us-central-3"}],
    }
    (offer,) = parse({"gpu_inventory": {"p": item}}).offers
    assert (offer.key, offer.region, offer.price_per_hour) == ("p:us-central-3", "us-central-3", Decimal("1.58"))


def test_bearer_token_sent_and_never_in_errors():
    _, requests = fetch_recording(MassedCompute, {"MASSED_COMPUTE_API_KEY": "mc-key-7"})
    assert [str(r.url) for r in requests] == [URL] and requests[0].headers["authorization"] == "Bearer mc-key-7"
    echo = answer(401, json={"error": "invalid token mc-key-7"})
    assert_secrets_hidden(MassedCompute, {"MASSED_COMPUTE_API_KEY": "mc-key-7"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(MassedCompute, "MASSED_COMPUTE_API_KEY")


def test_a_live_run_without_credentials_is_skipped(engine, settings, clock):
    (report,) = asyncio.run(run_scrape([ScrapeJob(MassedCompute)], engine, settings, clock=clock))
    assert report.status == "skipped" and "MASSED_COMPUTE_API_KEY" in (report.error or ""), report


def test_schema_changes_raise():
    assert_replay_raises(MassedCompute, json_without(0, "gpu_inventory"), "'gpu_inventory'")
    assert_replay_raises(MassedCompute, json_with(0, "gpu_inventory", value=[]), "not an object")
    drop_price = json_without(0, "gpu_inventory", "gpu_1x_l40s", "instance_type", "price_cents_per_hour")
    assert_replay_raises(MassedCompute, drop_price, "price_cents_per_hour")
    no_regions = json_without(0, "gpu_inventory", "gpu_1x_l40s", "regions_with_capacity_available")
    assert_replay_raises(MassedCompute, no_regions, "regions_with_capacity_available")
    assert_replay_raises(MassedCompute, answer(200, text='{"gpu_inventory": {'), "invalid JSON")


def test_a_null_price_drops_that_row_with_its_reason_not_the_run():
    # The price was read with to_decimal: one null raised ProviderError and lost every other offer.
    from tests.factories.cassettes import mutated_cassette, replay

    whole = replay(MassedCompute)
    dropped = replay(
        MassedCompute,
        mutated_cassette(
            MassedCompute,
            json_with(0, "gpu_inventory", "gpu_1x_a6000", "instance_type", "price_cents_per_hour", value=None),
        ),
    )
    assert 0 < len(dropped.offers) < len(whole.offers)
    assert any("price_cents_per_hour" in reason for reason in dropped.skipped)

"""Seeweb adapter against its bundled cassette (providers/cassettes/seeweb.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from providers.adapters.seeweb import URL, Seeweb, currency_of, number_in, parse
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

result = replay_fixture(Seeweb)


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"L40S-48GB", "L4-24GB", "RTXA6000-48GB", "A30-24GB", "QRTX6000-24GB", "MI300X-192GB"},
        provider="seeweb",
    )
    assert resolved["ECS1GPU7:it-mi2"] == "L40S-48GB"
    assert len(result.offers) == 11


def test_one_offer_per_plan_and_region(result):
    offers = by_key(result)
    assert {k for k in offers if k.startswith("ECS1GPU7:")} == {"ECS1GPU7:it-fr2", "ECS1GPU7:it-mi2"}
    # a region listed twice is one offer
    assert [k for k in offers if k.startswith("ECS1GPU12:")] == ["ECS1GPU12:it-mi2"]
    two = offers["ECS2GPU7:it-fr2"]
    assert (two.gpu_count, two.price_per_hour, two.price_per_gpu_hour) == (2, Decimal("1.7"), Decimal("0.85"))
    assert (two.vcpus, two.ram_gb, two.gpu_memory_gb) == (16, Decimal("64.00"), 48)  # ram MiB → GiB
    assert all(o.available is None and o.pricing == Pricing.on_demand for o in result.offers)


def test_prices_are_euros_by_default(result):
    assert {o.currency for o in result.offers} == {"EUR"}
    assert by_key(result)["ECS1GPU7:it-fr2"].attributes["currency_source"] == "provider default"


def test_strings_with_units_are_read():
    offer = by_key(result_of(cpu="8 cores", ram="32768 MB", gpu="1 GPU", hourly_price="€0.85"))["p:it-fr2"]
    assert (offer.vcpus, offer.ram_gb, offer.gpu_count, offer.price_per_hour) == (8, 32, 1, Decimal("0.85"))
    assert offer.currency == "EUR" and offer.attributes["currency_source"] == "price text"


def test_currency_from_sign_or_field_and_ambiguity_drops_the_plan():
    assert by_key(result_of(hourly_price="$0.85"))["p:it-fr2"].currency == "USD"
    assert by_key(result_of(currency="usd"))["p:it-fr2"].currency == "USD"
    odd = result_of(hourly_price="0.85 XYZ")
    assert odd.offers == [] and odd.skipped == [
        "p: price '0.85 XYZ' at hourly_price: currency 'XYZ' is unknown; refused rather than guessed"
    ]  # the money reader's own reason (was: "currency cannot be told from the price text")
    assert result_of(currency="doubloons").skipped == ["p: currency cannot be told from the currency field"]
    assert currency_of({"hourly_price": "$0.85 EUR"}) == (None, "price text '$0.85 EUR'")


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == [
        "ECS1GPU20: 'Tenstorrent Grayskull e150' is not a GPU the catalog tracks",
        "ECS1GPU4: plan not available (retired)",
        "ECS1GPU21: no available_regions",
    ]
    assert not any(o.instance_type == "eCS4" for o in result.offers)  # CPU-only: silently not a GPU offer
    assert result_of(hourly_price="0").skipped == ["p: hourly_price '0'"]
    assert result_of(hourly_price="n/a").skipped == ["p: unreadable price 'n/a' at hourly_price"]


@pytest.mark.parametrize(("value", "expected"), [(8, 8), ("32768 MB", 32768), ("$0.85", Decimal("0.85")), ("x", None)])
def test_number_in(value, expected):
    assert number_in(value) == expected


def test_token_sent_and_never_in_errors():
    _, requests = fetch_recording(Seeweb, {"SEEWEB_API_TOKEN": "sw-token-9"})
    assert [str(r.url) for r in requests] == [URL] and requests[0].headers["x-apitoken"] == "sw-token-9"
    echo = answer(401, json={"status": "error", "message": "bad token sw-token-9"})
    assert_secrets_hidden(Seeweb, {"SEEWEB_API_TOKEN": "sw-token-9"}, echo, status=401)


def test_missing_credentials():
    assert_missing_credentials(Seeweb, "SEEWEB_API_TOKEN")


def test_a_live_run_without_credentials_is_skipped(engine, settings, clock):
    (report,) = asyncio.run(run_scrape([ScrapeJob(Seeweb)], engine, settings, clock=clock))
    assert report.status == "skipped" and "SEEWEB_API_TOKEN" in (report.error or ""), report


def test_schema_changes_raise():
    assert_replay_raises(Seeweb, json_without(0, "plans"), "'plans'")
    assert_replay_raises(Seeweb, json_with(0, "plans", value={}), "not a list")
    assert_replay_raises(Seeweb, json_without(0, "plans", 1, "hourly_price"), "hourly_price")
    assert_replay_raises(Seeweb, answer(200, text='{"plans": ['), "invalid JSON")


def result_of(**overrides):
    plan = {
        "name": "p",
        "cpu": "8",
        "ram": "32768",
        "disk": "500",
        "gpu": "1",
        "gpu_label": "L40s 48GB",
        "hourly_price": 0.85,
        "available": True,
        "available_regions": [{"location": "it-fr2"}],
    } | overrides
    return parse({"plans": [plan]})

"""Hot Aisle adapter against its bundled cassette (providers/cassettes/hotaisle.json)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from providers.adapters.hotaisle import REGION, USER_URL, HotAisle, parse, team_of, url_for
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
    replay_fixture,
)
from tracker.pipeline.scraping import ScrapeJob, run_scrape

result = replay_fixture(HotAisle)


def test_integrity(result):
    resolved = assert_integrity(result, expected_gpus={"MI300X-192GB"}, provider="hotaisle")
    assert set(resolved.values()) == {"MI300X-192GB"}
    assert len(result.offers) == 3


def test_cents_per_vm_to_dollars(result):
    offers = by_key(result)
    one = offers["1x-mi300x-13c-224g"]
    assert (one.price_per_hour, one.gpu_count, one.price_per_gpu_hour) == (Decimal("1.99"), 1, Decimal("1.99"))
    eight = offers["8x-mi300x-104c-1792g"]
    assert eight.price_per_hour == Decimal("15.92") and eight.gpu_count == 8
    assert (eight.vcpus, eight.ram_gb) == (104, Decimal("1792.00"))  # bytes → GiB
    assert eight.attributes["disk_gb"] == "12288.00" and eight.attributes["cpu_model"] == "Xeon Platinum 8470"
    assert all(o.region == REGION and o.available is True and o.currency == "USD" for o in result.offers)
    assert {o.pricing for o in result.offers} == {Pricing.on_demand}


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == ["[4]: 1x MI300X OnDemandPrice=0", "[5]: no GPUs in Specs.gpus (CPU-only shape)"]


def test_same_shape_on_two_hosts_is_one_offer_at_the_lower_price():
    vm = {"OnDemandPrice": 300, "Specs": {"cpu_cores": 4, "ram_capacity": 2**34, "gpus": [{"count": 1, "model": "X"}]}}
    cheaper = {**vm, "OnDemandPrice": 250}
    (offer,) = parse([vm, cheaper]).offers
    assert offer.price_per_hour == Decimal("2.5")


def test_null_listing_means_nothing_free():
    assert parse(None).offers == [] and parse([]).offers == []


def test_team_comes_from_the_user_unless_configured():
    _, requests = fetch_recording(HotAisle, {"HOTAISLE_API_KEY": "ha-key-1"})
    assert [str(r.url) for r in requests] == [USER_URL, url_for("demo-team")]
    assert all(r.headers["authorization"] == "Token ha-key-1" for r in requests)
    other, requests = fetch_recording(HotAisle, {"HOTAISLE_API_KEY": "k", "HOTAISLE_TEAM_HANDLE": "second-team"})
    assert str(requests[-1].url) == url_for("second-team") and other.offers == []
    user = {"teams": [{"handle": "a"}]}
    assert team_of(user, None) == "a"
    with pytest.raises(ProviderError, match="not one of the user's 1 team"):
        team_of(user, "b")
    with pytest.raises(ProviderError, match="no team"):
        team_of({"teams": []}, None)


def test_missing_credentials():
    assert_missing_credentials(HotAisle, "HOTAISLE_API_KEY")


def test_a_live_run_without_credentials_is_skipped(engine, settings, clock):
    (report,) = asyncio.run(run_scrape([ScrapeJob(HotAisle)], engine, settings, clock=clock))
    assert report.status == "skipped" and "HOTAISLE_API_KEY" in (report.error or ""), report


def test_key_never_in_errors():
    echo = answer(401, json={"detail": "invalid token ha-key-1"}, at=0)
    assert_secrets_hidden(HotAisle, {"HOTAISLE_API_KEY": "ha-key-1"}, echo, status=401)


def test_schema_changes_raise():
    assert_replay_drops(HotAisle, json_without(1, 0, "OnDemandPrice"), "OnDemandPrice")
    assert_replay_drops(HotAisle, json_without(1, 0, "Specs"), "Specs")
    assert_replay_drops(HotAisle, json_with(1, 0, "OnDemandPrice", value="cheap"), "OnDemandPrice")
    assert_replay_raises(HotAisle, json_with(1, value={"vms": []}), "not a list")
    assert_replay_raises(HotAisle, json_without(0, "teams"), "teams")
    assert_replay_raises(HotAisle, answer(200, text="[{", at=1), "invalid JSON")


def test_a_null_price_drops_that_row_with_its_reason_not_the_run():
    # The price was read with to_decimal: one null raised ProviderError and lost every other offer.
    from tests.factories.cassettes import mutated_cassette, replay

    whole = replay(HotAisle)
    dropped = replay(HotAisle, mutated_cassette(HotAisle, json_with(1, 0, "OnDemandPrice", value=None)))
    assert 0 < len(dropped.offers) < len(whole.offers)
    assert any("OnDemandPrice" in reason for reason in dropped.skipped)

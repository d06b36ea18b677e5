"""OVHcloud adapter against its bundled cassette (providers/cassettes/ovhcloud.json)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal

import pytest

from providers.adapters.ovhcloud import HOURS_PER_MONTH, SUBSIDIARIES, OvhCloud, parse
from providers.cassette import bundled_cassette
from providers.contract import Pricing
from tests.factories.cassettes import (
    answer,
    assert_integrity,
    assert_replay_drops,
    assert_replay_raises,
    by_key,
    fetch_recording,
    json_with,
    json_without,
    replay_fixture,
)

result = replay_fixture(OvhCloud)


def _catalog(index: int = 0) -> dict:
    raw = json.loads(bundled_cassette("ovhcloud").read_text())
    return copy.deepcopy(raw["interactions"][index]["response"]["json"])


def test_integrity(result):
    resolved = assert_integrity(
        result,
        expected_gpus={"L40S-48GB", "L4-24GB", "A10-24GB"},
        provider="ovhcloud",
    )
    assert resolved["fr:l40s-90:waw1"] == "L40S-48GB"
    assert len(result.offers) == 72  # (11 region × plan pairs × 2 plans, less none) × 3 subsidiaries


def test_one_request_per_subsidiary_and_no_credentials():
    assert OvhCloud.credentials == ()
    _, requests = fetch_recording(OvhCloud)
    assert [(r.url.host, r.url.params["ovhSubsidiary"]) for r in requests] == [
        ("eu.api.ovh.com", "FR"),
        ("ca.api.ovh.com", "CA"),
        ("api.us.ovhcloud.com", "US"),
    ]
    assert [s for s, _ in SUBSIDIARIES] == ["FR", "CA", "US"]


def test_price_units_are_1e8_of_the_locale_currency(result):
    offers = by_key(result)
    fr = offers["fr:h100-380:gra11"]
    assert (fr.price_per_hour, fr.currency, fr.gpu_count) == (Decimal("2.99"), "EUR", 1)
    assert fr.attributes["tax_included"] is False and fr.attributes["tax_rate"] == "20"
    assert offers["ca:h100-380:gra11"].currency == "CAD"
    assert offers["ca:h100-380:gra11"].price_per_hour == Decimal("4.186")  # 418600000 × 1e-8
    assert offers["us:h100-380:gra11"].currency == "USD"
    four = offers["fr:h100-1520:gra11"]
    assert (four.gpu_count, four.price_per_gpu_hour, four.gpu_memory_gb) == (4, Decimal("2.99"), 80)
    assert (four.vcpus, four.ram_gb, four.gpu_name) == (120, 1520, "H100 80GB")


def test_monthly_plan_is_a_one_month_reservation_never_on_demand(result):
    offers = by_key(result)
    month = offers["fr:h100-380:gra11:1mo"]
    assert (month.pricing, month.reserved_term) == (Pricing.reserved, "1mo")
    assert month.price_per_hour == Decimal(1598) / HOURS_PER_MONTH
    assert month.attributes["monthly_price"] == "1598" and month.attributes["hours_per_month"] == 730
    assert month.price_per_hour > 0
    on_demand = [o for o in result.offers if o.pricing == Pricing.on_demand]
    assert on_demand and all(o.reserved_term is None for o in on_demand)
    assert all(o.key.endswith(":1mo") for o in result.offers if o.pricing == Pricing.reserved)


def test_a_flavor_sold_only_by_the_month_is_reserved_only():
    catalog = _catalog()
    catalog["addons"] = [a for a in catalog["addons"] if a["planCode"] != "h100-380.consumption"]
    offers = [o for o in parse(catalog, "FR").offers if o.instance_type == "h100-380"]
    assert offers and all(o.pricing == Pricing.reserved and o.reserved_term == "1mo" for o in offers)
    assert all(o.price_per_hour > 0 for o in offers)


def test_regions_are_merged_across_a_flavors_plans(result):
    # the hourly plans list no region; their monthly plans list them
    assert {o.region for o in result.offers if o.instance_type == "l40s-90"} == {"gra11", "bhs5", "waw1"}
    assert all(o.available is None for o in result.offers)


def test_odd_rows_are_dropped_with_a_reason(result):
    assert result.skipped == [f"{s}: rtx5000-28.consumption: price 0" for s in ("FR", "CA", "US")]
    flavors = {o.instance_type for o in result.offers}
    assert "win-l4-90" not in flavors and "b3-8" not in flavors  # Windows licence, CPU-only


def test_a_catalog_without_currency_yields_no_offer():
    catalog = _catalog()
    del catalog["locale"]["currencyCode"]
    parsed = parse(catalog, "FR")
    assert parsed.offers == []
    assert "FR: h100-380.consumption: catalog has no locale.currencyCode" in parsed.skipped


def test_flavor_without_any_region_keeps_one_regionless_offer_per_plan():
    catalog = _catalog()
    for addon in catalog["addons"]:
        addon["configurations"] = []
    parsed = by_key(parse(catalog, "FR"))
    assert parsed["fr:h100-380"].region == "" and parsed["fr:h100-380:1mo"].reserved_term == "1mo"


def test_without_a_project_plan_instances_are_found_by_product():
    catalog = _catalog()
    catalog["plans"] = []
    assert len(parse(catalog, "FR").offers) == 24


@pytest.mark.parametrize("unit", ["day", "year"])
def test_other_billing_units_are_reported(unit):
    catalog = _catalog()
    catalog["addons"][0]["pricings"][0]["intervalUnit"] = unit
    assert f"FR: h100-380.consumption: priced per {unit!r}" in parse(catalog, "FR").skipped


def test_schema_changes_raise():
    assert_replay_raises(OvhCloud, json_without(0, "addons"), "'addons'")
    assert_replay_raises(OvhCloud, json_without(0, "locale"), "'locale'")
    assert_replay_drops(OvhCloud, json_with(0, "addons", 0, "pricings", value={}), "not a list")
    assert_replay_drops(OvhCloud, json_without(1, "addons", 0, "pricings", 0, "price"), "price")
    assert_replay_raises(OvhCloud, answer(200, text='{"addons": [', at=2), "invalid JSON")


@pytest.mark.parametrize(
    "mutate",
    [
        json_with(0, "addons", 0, "configurations", value=7),
        json_with(0, "addons", 0, "configurations", 0, "values", value=True),
    ],
)
def test_a_list_field_of_another_type_is_a_schema_change_not_a_type_error(mutate):
    # These were iterated as `x or []`: a number there raised TypeError out of the parser. In one addon it
    # now drops that addon only (providers.parsing.dropping); in the catalog's envelope it fails the run.
    assert_replay_drops(OvhCloud, mutate, "not a list")


def test_a_malformed_envelope_list_still_fails_the_run():
    assert_replay_raises(OvhCloud, json_with(0, "plans", 0, "addonFamilies", value=7), "not a list")


def test_a_null_price_drops_that_row_with_its_reason_not_the_run():
    # The price was read with to_decimal: one null raised ProviderError and lost every other offer.
    from tests.factories.cassettes import mutated_cassette, replay

    whole = replay(OvhCloud)
    dropped = replay(
        OvhCloud, mutated_cassette(OvhCloud, json_with(0, "addons", 0, "pricings", 0, "price", value=None))
    )
    assert 0 < len(dropped.offers) < len(whole.offers)
    assert any("h100-380.consumption" in reason for reason in dropped.skipped)

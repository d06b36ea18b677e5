"""The change-only rules of `tracker.ingest.diff`, without a database: a stored offer (as the diff reads it)
against its new observation, one rule per test."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from typing import Any

from providers.contract import Pricing, ScrapedOffer
from tracker.catalog.gpus import get_catalog
from tracker.ingest.diff import ChangeKind, Changes, diff
from tracker.ingest.fx import AppliedRate, convert
from tracker.ingest.validate import ValidOffer
from tracker.storage.tables import QUALITY_ATTRIBUTES

H100 = "H100-SXM-80GB"
EUR = AppliedRate("EUR", Decimal("1.10"), date(2026, 11, 2), "ecb")


@dataclass(frozen=True)
class Listed:
    """A stored offer as `tracker.ingest.apply.read_listed` yields it."""

    id: int
    price_per_hour: Decimal
    currency: str | None = "USD"
    price_native_per_hour: Decimal | None = None
    delisted: bool = False
    available: bool | None = True
    gpu_id: str = H100
    gpu_count: Decimal = Decimal(1)
    region: str = ""
    demo: bool = False
    price_kind: str = "asking"
    orderable: bool = True
    quality: str | None = None
    observed_digest: str | None = None
    price_per_gpu_hour: Decimal = Decimal(0)  # not compared: the price-level check reads the hour and count


def valid(
    key: str,
    price: str,
    *,
    count: str = "1",
    gpu: str = H100,
    rate: AppliedRate | None = None,
    available: bool | None = True,
    **kw: Any,  # any other ScrapedOffer field
) -> ValidOffer:
    scraped = ScrapedOffer(
        key=key,
        gpu_name=gpu,
        gpu_count=Decimal(count),
        price_per_hour=Decimal(price),
        available=available,
        currency=rate.currency if rate else "USD",
        **kw,
    )
    money = convert(scraped.price_per_hour, scraped.gpu_count, rate)
    return ValidOffer(scraped, get_catalog().get(gpu), money.usd_per_hour, money.usd_per_gpu_hour, money)


def stored(v: ValidOffer, offer_id: int = 1, **kw: object) -> Listed:
    """The stored row `v` leaves behind: diffing `v` against it again changes nothing."""
    money = v.conversion
    assert money is not None
    quality = json.dumps([v.scraped.attributes.get(k) for k in QUALITY_ATTRIBUTES])
    row = Listed(
        offer_id,
        money.usd_per_hour,
        money.currency,
        money.native_per_hour,
        False,
        v.scraped.available,
        v.gpu.id,
        v.scraped.gpu_count,
        v.scraped.region,
        False,
        v.scraped.price_kind.value,
        v.scraped.orderable,
        quality,
    )
    return replace(row, **kw)  # type: ignore[arg-type]


def nothing_written(changes: Changes) -> bool:
    return not (
        changes.new
        or changes.rewritten
        or changes.prices
        or changes.availability
        or changes.gone
        or changes.close_prices
        or changes.close_availability
    )


def test_a_new_offer_is_an_offer_a_price_and_an_availability_row():
    changes = diff({}, [valid("a", "2.50")])
    assert [v.scraped.key for v in changes.new] == ["a"]
    assert changes.price_rows == 1 and changes.fx_rows == 0
    assert not changes.prices and not changes.close_prices and not changes.gone
    assert changes.level.fresh[(H100, Pricing.on_demand)] == [2.5]


def test_the_same_observation_again_writes_nothing():
    v = valid("a", "2.50", attributes={"verification": "verified"})
    changes = diff({"a": stored(v)}, [v])
    assert nothing_written(changes)
    assert changes.price_rows == 0 and changes.level.same[(H100, Pricing.on_demand)] == 1


def test_a_new_price_closes_the_open_row_and_writes_a_price_row():
    changes = diff({"a": stored(valid("a", "2.50"), 7)}, [valid("a", "2.00")])
    assert [(oid, kind) for oid, _, kind in changes.prices] == [(7, ChangeKind.price)]
    assert changes.close_prices == [7] and [oid for oid, _ in changes.rewritten] == [7]
    assert changes.price_rows == 1 and changes.fx_rows == 0
    assert not changes.availability  # the price moved, availability did not
    assert changes.level.moved[(H100, Pricing.on_demand)] == [0.8]


def test_an_fx_only_move_is_an_fx_row_not_a_price_change():
    before = valid("a", "10", rate=EUR)
    after = valid("a", "10", rate=replace(EUR, usd_per_unit=Decimal("1.20"), day=date(2026, 11, 3)))
    changes = diff({"a": stored(before, 3)}, [after])
    assert [(oid, kind) for oid, _, kind in changes.prices] == [(3, ChangeKind.fx)]
    assert changes.fx_rows == 1 and changes.price_rows == 0
    assert changes.close_prices == [3] and [oid for oid, _ in changes.rewritten] == [3]


def test_a_rate_move_too_small_for_the_usd_figure_writes_nothing():
    before = valid("a", "10", rate=EUR)
    after = valid("a", "10", rate=replace(EUR, usd_per_unit=Decimal("1.1000000001")))
    assert after.price_per_hour == before.price_per_hour
    assert nothing_written(diff({"a": stored(before)}, [after]))


def test_the_same_amount_in_another_currency_is_a_price_change():
    before = valid("a", "10")
    changes = diff({"a": stored(before)}, [valid("a", "10", rate=replace(EUR, usd_per_unit=Decimal(1)))])
    assert [kind for _, _, kind in changes.prices] == [ChangeKind.price]


def test_a_row_from_before_native_amounts_compares_its_usd_figure_as_the_quote():
    v = valid("a", "2.50")
    assert nothing_written(diff({"a": stored(v, price_native_per_hour=None)}, [v]))


def test_the_same_instance_price_over_another_gpu_count_is_a_price_row():
    changes = diff({"a": stored(valid("a", "8", count="8"), 5)}, [valid("a", "8", count="4")])
    assert [(oid, kind) for oid, _, kind in changes.prices] == [(5, ChangeKind.price)]
    assert changes.close_prices == [5] and changes.price_rows == 1
    assert changes.level.moved[(H100, Pricing.on_demand)] == [2.0]  # per GPU-hour: $1 → $2


def test_the_same_price_resolved_to_another_card_is_a_price_row():
    changes = diff({"a": stored(valid("a", "2.50"), 5, gpu_id="H100-PCIE-80GB")}, [valid("a", "2.50")])
    assert [(oid, kind) for oid, _, kind in changes.prices] == [(5, ChangeKind.price)]
    assert [oid for oid, _ in changes.rewritten] == [5]


def test_availability_is_change_only():
    v = valid("a", "2.50", available=True)
    flipped = diff({"a": stored(v, 4)}, [valid("a", "2.50", available=False)])
    assert [oid for oid, _ in flipped.availability] == [4] and flipped.close_availability == [4]
    assert not flipped.prices and [oid for oid, _ in flipped.rewritten] == [4]
    unknown = diff({"a": stored(v, 4)}, [valid("a", "2.50", available=None)])  # "not stated" is a change too
    assert [oid for oid, _ in unknown.availability] == [4]


def test_a_delisted_offer_listed_again_reopens_without_closing_anything():
    v = valid("a", "2.50")
    changes = diff({"a": stored(v, 9, delisted=True)}, [v])
    assert changes.reopened == 1
    assert [(oid, kind) for oid, _, kind in changes.prices] == [(9, ChangeKind.price)]
    assert [oid for oid, _ in changes.availability] == [9]
    assert changes.close_prices == [] and changes.close_availability == []  # closed when it was delisted
    assert changes.level.fresh[(H100, Pricing.on_demand)] == [2.5]  # its old price is not the last run's


def test_an_offer_missing_from_the_batch_is_gone_once():
    kept, dropped = valid("a", "2.50"), valid("b", "3.00")
    listed = {"a": stored(kept, 1), "b": stored(dropped, 2), "c": stored(dropped, 3, delisted=True)}
    changes = diff(listed, [kept])
    assert changes.gone == [2]  # an offer already delisted is not closed twice
    assert not changes.close_prices  # gone offers' rows are closed as gone, not as superseded


def test_description_changes_rewrite_the_offer_without_a_price_row():
    v = valid("a", "2.50", attributes={"verification": "verified"}, region="us-east")
    for change in (
        {"region": "eu-west"},
        {"demo": True},
        {"quality": json.dumps(["unverified"] + [None] * (len(QUALITY_ATTRIBUTES) - 1))},
    ):
        changes = diff({"a": stored(v, 6, **change)}, [v])
        assert [oid for oid, _ in changes.rewritten] == [6], change
        assert not changes.prices and not changes.availability, change


def test_attributes_outside_the_quality_set_may_lag():
    v = valid("a", "2.50", attributes={"verification": "verified", "cpu": "EPYC 9654"})
    row = stored(valid("a", "2.50", attributes={"verification": "verified", "cpu": "EPYC 7763"}))
    assert nothing_written(diff({"a": row}, [v]))


def test_a_demo_batch_matches_demo_rows():
    v = valid("a", "2.50")
    assert nothing_written(diff({"a": stored(v, demo=True)}, [v], demo=True))


def test_lists_keep_the_batch_order():
    offers = [valid(k, p) for k, p in (("c", "3"), ("a", "1"), ("b", "2"))]
    listed = {v.scraped.key: stored(v, i, price_per_hour=Decimal(9)) for i, v in enumerate(offers)}
    changes = diff(listed, offers)
    assert [oid for oid, _, _ in changes.prices] == [0, 1, 2] == changes.close_prices

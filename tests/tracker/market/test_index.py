"""The price index's methodology (tracker.market.index), on hand-built histories with known answers."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tracker.config import Settings
from tracker.market import index
from tracker.market.index import IndexHistory, IndexOffer, IndexPrice, compute

DAY0 = datetime(2026, 3, 2, tzinfo=UTC)
H100 = "H100-SXM-80GB"


def _offer(provider, key, region="us-east-1", **kw):
    fields: dict[str, Any] = {
        "gpu_id": H100,
        "gpu_family": "H100",
        "gpu_count": Decimal(8),
        "pricing": "on_demand",
        "reserved_term": None,
        "attributes": {"hosting": "datacenter"},
        "last_seen": DAY0 + timedelta(days=5),
    } | kw
    return IndexOffer(provider, key, region=region, **fields)


def _history(*rows, observations=None):
    """rows: (offer, price, valid_from, valid_to) — valid_from defaults to DAY0, valid_to to open."""
    offers, prices = [], []
    for o, price, *span in rows:
        frm = span[0] if span else DAY0
        to = span[1] if len(span) > 1 else None
        if o not in offers:
            offers.append(o)
        prices.append(IndexPrice(o.provider, o.offer_key, index.epoch_us(frm), to and index.epoch_us(to), float(price)))
    return IndexHistory(offers, prices, observations or {})


def _run(history, days=1, **kw):
    kw.setdefault("areas", ("global",))
    return compute(
        history,
        gpu_ids=[H100],
        basket="H100",
        start=DAY0.date(),
        end=DAY0.date() + timedelta(days=days),
        settings=Settings(),
        **kw,
    )


def test_one_marketplace_with_a_thousand_listings_weighs_no_more_than_the_cap():
    rows = [(_offer("market", f"k{i}"), "1.00") for i in range(1000)]
    rows += [(_offer("a", "x"), "2.00"), (_offer("b", "x"), "3.00"), (_offer("c", "x"), "4.00")]
    [value] = _run(_history(*rows))
    # Four providers at a 25 % cap weigh 1/4 each; 10 % trimmed from each tail of 1, 2, 3, 4.
    assert value.value == Decimal("2.500000")
    assert {p: w for p, _, w in value.providers} == dict.fromkeys(("a", "b", "c", "market"), Decimal("0.250000"))
    assert value.offers == 1003
    assert dict((p, n) for p, n, _ in value.providers)["market"] == 1000
    assert (value.p25, value.p75) == (Decimal("1.000000"), Decimal("3.000000"))
    assert value.spread == Decimal("0.800000")
    assert value.version == "gpi-1"


def test_capped_shares_redistribute_the_excess_in_proportion():
    shares = index._capped(__import__("numpy").array([100.0, 1, 1, 1, 1, 1]), 0.25)
    assert shares[0] == pytest.approx(0.25)
    assert shares[1:] == pytest.approx([0.15] * 5)
    assert shares.sum() == pytest.approx(1.0)


def test_too_few_providers_publish_no_value_and_say_why():
    [value] = _run(_history((_offer("a", "x"), "2"), (_offer("b", "x"), "3")))
    assert value.value is None and not value.published
    assert "fewer than the 3" in value.reason
    assert [p for p, _, _ in value.providers] == ["a", "b"]


def test_time_weighting_over_the_utc_day_from_change_only_rows():
    noon = DAY0 + timedelta(hours=12)
    a = _offer("a", "x")
    rows = [(a, "1.00", DAY0, noon), (a, "3.00", noon), (_offer("b", "x"), "2.00"), (_offer("c", "x"), "2.00")]
    [value] = _run(_history(*rows))
    # a's day mean is 2.00 (half a day at 1, half at 3): every provider at 2.
    assert value.value == Decimal("2.000000")


def test_a_stale_open_price_stops_counting_after_the_freshness_window():
    gone = _offer("gone", "x", last_seen=DAY0 - timedelta(days=3))  # last seen long before the day
    rows = [(gone, "9.00", DAY0 - timedelta(days=4)), (_offer("a", "x"), "2"), (_offer("b", "x"), "2")]
    rows.append((_offer("c", "x"), "2"))
    [value] = _run(_history(*rows))
    assert "gone" not in [p for p, _, _ in value.providers]
    assert value.value == Decimal("2.000000")


def test_a_provider_down_all_day_is_absent_and_its_old_price_is_not_carried():
    # "down" was observed hourly, then not at all on the second day: an outage, cut out of its open row.
    seen = [DAY0 - timedelta(days=1) + timedelta(hours=h) for h in range(48)] + [DAY0 + timedelta(days=2)]
    seen = [t for t in seen if not DAY0 + timedelta(hours=1) <= t < DAY0 + timedelta(days=2)]
    down = _offer("down", "x")
    rows = [(down, "9.00", DAY0 - timedelta(days=1)), (_offer("a", "x"), "2"), (_offer("b", "x"), "2")]
    rows.append((_offer("c", "x"), "2"))
    first, second = _run(_history(*rows, observations={"down": [index.epoch_us(t) for t in seen]}), days=2)
    assert "down" in [p for p, _, _ in first.providers]  # observed, within its window, on the first day
    assert "down" not in [p for p, _, _ in second.providers]
    assert second.value == Decimal("2.000000")


def test_spot_reserved_and_consumer_hosted_offers_do_not_count():
    rows = [
        (_offer("a", "x"), "2"),
        (_offer("b", "x"), "2"),
        (_offer("c", "x"), "2"),
        (_offer("d", "spot", pricing="spot"), "0.10"),
        (_offer("e", "res", pricing="reserved", reserved_term="1y"), "0.10"),
        (_offer("f", "home", attributes={"hosting": "consumer"}), "0.10"),
        (_offer("g", "unstated", attributes={}), "0.10"),  # a marketplace host that does not say
    ]
    [value] = _run(_history(*rows))
    assert [p for p, _, _ in value.providers] == ["a", "b", "c"]
    assert index.offer_excluded(rows[3][0], index.METHODS["gpi-1"]) == "pricing"
    assert index.offer_excluded(rows[5][0], index.METHODS["gpi-1"]) == "hosting"
    # A cloud provider vouches for its own machines without stating it.
    assert index.offer_excluded(_offer("aws", "p5", attributes={}), index.METHODS["gpi-1"]) is None


def test_an_aggregator_resale_of_a_machine_listed_directly_is_dropped():
    resale = _offer("shadeform", "lambda-8x", attributes={"via": "shadeform", "upstream": "a", "hosting": "datacenter"})
    rows = [(_offer("a", "x"), "2"), (_offer("b", "x"), "2"), (_offer("c", "x"), "2"), (resale, "9.00")]
    [value] = _run(_history(*rows))
    assert [p for p, _, _ in value.providers] == ["a", "b", "c"]
    assert value.offers == 3


def test_areas_from_the_region_table():
    rows = [
        (_offer("a", "x", region="us-east-1"), "2"),
        (_offer("b", "x", region="eu-west-1"), "3"),
        (_offer("c", "x", region="ap-northeast-1"), "4"),
        (_offer("d", "x", region="nowhere-known"), "5"),
    ]
    values = {v.area: v for v in _run(_history(*rows), areas=index.AREAS)}
    assert {a: [p for p, _, _ in v.providers] for a, v in values.items()} == {
        "global": ["a", "b", "c", "d"],
        "us": ["a"],
        "eu": ["b"],
        "apac": ["c"],
    }
    with pytest.raises(ValueError, match="area must be one of"):
        _run(_history(*rows), areas=("mars",))


def test_the_result_does_not_depend_on_the_order_of_the_input():
    rows = [(_offer(p, f"k{i}"), f"{1 + i * 0.37 + ord(p[0]) * 0.01:.2f}") for p in "abcde" for i in range(7)]
    h = _history(*rows)
    shuffled = IndexHistory(list(reversed(h.offers)), h.prices[::2] + h.prices[1::2], {})
    assert _run(h, days=2) == _run(shuffled, days=2)


def test_every_published_version_keeps_its_parameters():
    """A change of method is a new version id: a version's parameters never change under it."""
    assert set(index.METHODS) == set(index.FINGERPRINTS)
    for version, m in index.METHODS.items():
        assert m.version == version
        assert index.fingerprint(m) == index.FINGERPRINTS[version], f"{version}'s parameters changed: add a version"
    changed = replace(index.METHODS["gpi-1"], provider_cap=0.3)
    assert index.fingerprint(changed) != index.FINGERPRINTS["gpi-1"]
    with pytest.raises(ValueError, match="version must be one of gpi-1"):
        _run(_history((_offer("a", "x"), "2")), version="gpi-0")


def test_days_without_offers_say_so():
    [value] = _run(_history((_offer("a", "x"), "2", DAY0 + timedelta(days=1))))
    assert value.reason == "no offers" and value.offers == 0
    assert value.day == date(2026, 3, 2)


def test_only_orderable_asking_prices_of_republishable_sources_count():
    rows = [
        (_offer("a", "x"), "2"),
        (_offer("b", "x"), "2"),
        (_offer("c", "x"), "2"),
        (_offer("d", "rented", price_kind="rented"), "0.50"),
        (_offer("e", "floor", orderable=False), "0.50"),
        (_offer("f", "forbidden", republish=False), "0.50"),
    ]
    [value] = _run(_history(*rows))
    assert [p for p, _, _ in value.providers] == ["a", "b", "c"]
    gpi1 = index.METHODS["gpi-1"]
    assert index.offer_excluded(rows[3][0], gpi1) == "not an orderable asking price"
    assert index.offer_excluded(rows[4][0], gpi1) == "not an orderable asking price"
    assert index.offer_excluded(rows[5][0], gpi1) == "terms forbid republication"

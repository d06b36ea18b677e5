"""Rate-sheet rows (providers.sheet.parse_sheet): one price per row, per GPU or per instance, per hour or
per second; a reserved rate with its term and only it with one; no zero price; the page's label kept."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.contract import PriceKind, Pricing, ProviderError
from providers.sheet import parse_sheet

SHEET = {
    "source": "https://example.test/pricing, read 2026-11-30",
    "as_of": "2026-11-30",
    "source_type": "price_page",
    "url": "https://example.test/pricing",
}


@pytest.mark.parametrize(
    ("row", "per_hour"),
    [
        ({"price_per_gpu_hour": "2.00", "gpu_count": 4}, "8.00"),
        ({"price_per_hour": "8.00", "gpu_count": 4}, "8.00"),
        ({"price_per_gpu_second": "0.001", "gpu_count": 2}, "7.2"),
        ({"price_per_second": "0.002", "gpu_count": 2}, "7.2"),
    ],
)
def test_every_price_form_is_an_instance_hour(row, per_hour):
    (o,) = parse_sheet(SHEET | {"rates": [{"gpu": "H100-SXM-80GB"} | row]}).offers
    assert o.price_per_hour == Decimal(per_hour)
    assert o.attributes["source_type"] == "price_page" and o.attributes["url"] == SHEET["url"]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({}, "exactly one of"),
        ({"price_per_gpu_hour": "1", "price_per_hour": "1"}, "exactly one of"),
        ({"price_per_gpu_hour": "0"}, "must be positive"),
        ({"price_per_gpu_second": "NaN"}, "not a finite number"),  # was InvalidOperation at `price <= 0`
        ({"gpu_count": "NaN", "price_per_hour": "1"}, "must be positive"),
        ({"price_per_gpu_hour": "1", "pricing": "reserved"}, "needs its reserved_term"),
        ({"price_per_gpu_hour": "1", "reserved_term": "1y"}, "only it has one"),
        ({"price_per_gpu_hour": "1", "pricing": "reserved", "reserved_term": "sometime"}, "reservation term"),
    ],
)
def test_a_malformed_row_is_refused(row, problem):
    with pytest.raises(ProviderError, match=problem):
        parse_sheet(SHEET | {"rates": [{"gpu": "H100-SXM-80GB"} | row]})


def test_terms_and_instances_are_part_of_the_key():
    rows = [
        {"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "3.00"},
        {"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "2.50", "pricing": "reserved", "reserved_term": "12 months"},
        {"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "2.00", "pricing": "reserved", "reserved_term": "3y"},
        {"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "3.20", "instance_type": "big"},
    ]
    offers = parse_sheet(SHEET | {"rates": rows}).offers
    assert [o.key for o in offers] == [
        "H100-SXM-80GB:1:on_demand:",
        "H100-SXM-80GB:1:reserved::1y",
        "H100-SXM-80GB:1:reserved::3y",
        "H100-SXM-80GB:1:on_demand::big",
    ]
    assert [(o.pricing, o.reserved_term) for o in offers[1:3]] == [(Pricing.reserved, "1y"), (Pricing.reserved, "3y")]
    assert offers[3].instance_type == "big"


def test_a_from_price_row_is_a_floor_and_never_orderable():
    rows = [
        {"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "2.40", "price_kind": "floor", "note": "from $2.40"},
        {"gpu": "A100-SXM-80GB", "price_per_gpu_hour": "1.50"},
    ]
    floor, listed = parse_sheet(SHEET | {"rates": rows}).offers
    assert (floor.price_kind, floor.orderable) == (PriceKind.floor, False)
    assert (listed.price_kind, listed.orderable) == (PriceKind.asking, True)


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"price_kind": "cheap"}, "price_kind 'cheap' is not one of"),
        ({"price_kind": "floor", "orderable": True}, "true only for an asking price"),
        ({"orderable": "yes"}, "must be a boolean"),
    ],
)
def test_a_bad_price_kind_is_refused(row, problem):
    with pytest.raises(ProviderError, match=problem):
        parse_sheet(SHEET | {"rates": [{"gpu": "H100-SXM-80GB", "price_per_gpu_hour": "1"} | row]})

"""The offer limits of the provider contract are the stored offer's column sizes: kept equal here."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import Numeric, String

from providers.contract import NUMBER_LIMITS, TEXT_LIMITS, PriceKind, ScrapedOffer, offer_problem
from tracker.storage.tables import Offer, OfferPrice

COLUMN_OF = {"key": "offer_key", "gpu_name": "raw_gpu_name", "price_per_hour": "price_native_per_hour"}


def test_text_limits_are_the_column_lengths():
    for name, limit in TEXT_LIMITS.items():
        column = Offer.__table__.c[COLUMN_OF.get(name, name)]
        assert isinstance(column.type, String) and column.type.length == limit, name


def test_number_limits_are_the_column_ranges():
    for name, bound in NUMBER_LIMITS.items():
        for table in (Offer, OfferPrice) if name == "price_per_hour" else (Offer,):
            if COLUMN_OF.get(name, name) not in table.__table__.c:
                continue
            column = table.__table__.c[COLUMN_OF.get(name, name)]
            assert isinstance(column.type, Numeric), name
            precision, scale = column.type.precision, column.type.scale
            assert precision is not None and scale is not None, name
            assert 10 ** (precision - scale) == bound, name


def test_only_an_asking_price_can_be_orderable():
    def one(**kw):
        return ScrapedOffer(key="k", gpu_name="H100", gpu_count=Decimal(1), price_per_hour=Decimal(2), **kw)

    assert offer_problem(one()) is None
    assert offer_problem(one(price_kind=PriceKind.transacted, orderable=False)) is None
    assert offer_problem(one(price_kind=PriceKind.transacted)) == "a transacted price cannot be orderable"
    assert offer_problem(one(price_kind=PriceKind.floor)) == "a floor price cannot be orderable"
    assert "price_kind 'bid' is not one of" in (offer_problem(one(price_kind="bid")) or "")


def test_the_quick_check_passes_only_what_the_reasons_pass(monkeypatch):
    import providers.contract as contract

    def one(**kw: Any) -> ScrapedOffer:
        base: dict[str, Any] = {"key": "k", "gpu_name": "H100", "gpu_count": Decimal(1), "price_per_hour": Decimal(2)}
        return ScrapedOffer(**(base | kw))

    cases = [one(), one(region="r" * 128, instance_type="i", reserved_term="1y", vcpus=Decimal(8))]
    for name, limit in TEXT_LIMITS.items():
        cases += [one(**{name: "x" * limit}), one(**{name: "x" * (limit + 1)}), one(**{name: None}), one(**{name: 7})]
    for name, bound in NUMBER_LIMITS.items():
        for value in (Decimal(0), Decimal(-1), Decimal(bound), Decimal(bound) - 1, Decimal("NaN"), 3, None):
            cases.append(one(**{name: value}))
    cases += [one(orderable=None), one(orderable=False, price_kind=PriceKind.floor), one(price_kind="asking")]
    quick = [offer_problem(o) for o in cases]
    monkeypatch.setattr(contract, "_fits", lambda o: False)  # the reasons alone
    assert quick == [offer_problem(o) for o in cases]
    assert quick.count(None) >= 10 and len(set(quick)) > 15  # both outcomes, many reasons

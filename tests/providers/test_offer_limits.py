"""The offer limits of the provider contract are the stored offer's column sizes: kept equal here."""

from __future__ import annotations

from sqlalchemy import Numeric, String

from providers.contract import NUMBER_LIMITS, TEXT_LIMITS
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

"""Asking, transacted and floor prices: which prices a market statistic, a ranking or the index counts.

A provider can publish more than what it asks: SF Compute's order book, a Vast or Clore machine's rate while
it is rented, an auction's last clearing price (Mithril), a "from $X" on a pricing page, a reserve price.
The adapters say which (`providers.contract.PriceKind` in `price_kind`, and `orderable`: whether a buyer can
order at that price now); ingest stores both on the offer and on each price row. The rule here is the one
every consumer applies: by default only **orderable asking prices** count, so a trade never moves an asking
distribution and a floor never reads as a list price. Stock is a separate question (`available`): an
asking price that is sold out right now is still the price asked.

`is_orderable_asking` decides one offer (a stored row, a scraped offer, a row dict); `orderable_asking` is
the same rule as SQL on `offers` or `offer_prices`; `kinds_mask` over the live table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import ColumnElement, and_

from providers.contract import PriceKind
from tracker.storage.tables import Offer, OfferPrice

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["DEFAULT_KINDS", "PriceKind", "is_orderable_asking", "kinds_condition", "kinds_mask", "orderable_asking"]

# What a statistic counts unless asked otherwise: the prices a buyer is asked now.
DEFAULT_KINDS: tuple[str, ...] = (PriceKind.asking.value,)


def _get(offer: Any, name: str) -> Any:
    return offer.get(name) if isinstance(offer, Mapping) else getattr(offer, name, None)


def is_orderable_asking(offer: Any) -> bool:
    """True when `offer` (an `Offer` or `OfferPrice` row, a `ScrapedOffer`, or a mapping with `price_kind` and
    `orderable`) is an asking price a buyer can order at now. A row written before price kinds were kept has
    neither: it was read as an asking price then, and still is."""
    kind = _get(offer, "price_kind")
    orderable = _get(offer, "orderable")
    # bool(): a numpy bool from the live table is not the `False` singleton.
    return (kind is None or str(kind) == PriceKind.asking.value) and (orderable is None or bool(orderable))


def orderable_asking(model: type[Offer] | type[OfferPrice] = Offer) -> ColumnElement[bool]:
    """`is_orderable_asking` as SQL on `offers` or `offer_prices`."""
    return and_(model.price_kind == PriceKind.asking.value, model.orderable.is_(True))


def kinds_condition(kinds: Sequence[str] | None, model: type[Offer] | type[OfferPrice] = Offer) -> ColumnElement[bool]:
    """Offers of these price kinds; None: the default, orderable asking prices only. An asked-for kind
    counts whether or not it is orderable (a transacted price never is)."""
    if kinds is None:
        return orderable_asking(model)
    return model.price_kind.in_(sorted({PriceKind(k).value for k in kinds}))


def kinds_mask(
    price_kind: npt.NDArray[Any], orderable: npt.NDArray[Any], kinds: Sequence[str] | None
) -> npt.NDArray[np.bool_]:
    """`kinds_condition` over the live table's columns, vectorised: every ranking applies it to every live
    offer, so it must cost a comparison per row, not a Python call (`is_orderable_asking`'s rule: a row
    without a kind, None here, reads as asking)."""
    # As text, None is "None": no price kind is spelled so (providers.contract.PriceKind).
    text = np.asarray(price_kind, dtype=object).astype(str)
    if kinds is None:
        asking = (text == PriceKind.asking.value) | (text == "None")
        flags = np.asarray(orderable)
        if flags.dtype != np.bool_:  # rows read without the column's type (None: written before it, orderable)
            flags = np.array([True if v is None else bool(v) for v in flags.tolist()], dtype=bool)
        out: npt.NDArray[np.bool_] = asking & flags
        return out
    wanted = sorted({PriceKind(k).value for k in kinds})
    return np.isin(text, wanted)

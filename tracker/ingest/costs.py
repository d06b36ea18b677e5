"""Change-only history of the cost terms an offer's API states (`providers.cost_terms`).

Called by the batch ingest once its offers are written: an offer gets a new `offer_cost_terms` row when
its stated terms change (the open row is closed at the same instant), its open row is closed when it is
delisted or stops stating any term, and an unchanged scrape writes nothing. The attribute is read from
the scraped offer, never from `offers.attributes` (which may lag: tracker.storage.tables).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from providers.contract import ScrapedOffer
from providers.cost_terms import COST_TERMS, TERM_KEYS
from tracker.money import to_money
from tracker.storage.bulk import insert_rows
from tracker.storage.tables import Offer, OfferCostTerms

__all__ = ["COLUMNS", "record_cost_terms", "stated_terms"]

COLUMNS = tuple(TERM_KEYS)
_CHUNK = 500
# Column scales (tracker.storage.tables.OfferCostTerms): a value is compared as it will read back.
# Dollar rates are money (rounded by the one rule, tracker.money); the rest are sizes and durations,
# kept to a thousandth of their unit.
MONEY_TERMS = frozenset({"disk_usd_per_gb_month", "egress_usd_per_gb", "ingress_usd_per_gb"})


class _Valid(Protocol):
    @property
    def scraped(self) -> ScrapedOffer: ...


def _number(raw: object, is_money: bool) -> Decimal | None:
    if raw is None or isinstance(raw, bool) or not isinstance(raw, int | float | str | Decimal):
        return None
    return _parsed(raw, is_money)


# A marketplace states the same few rates on thousands of offers, and every ingest reads them again and
# the stored ones back: parsing each distinct figure once took this step from ~0.5 s to a fraction of
# it on a 20,000-offer batch. Equal keys (1, 1.0, Decimal(1)) parse to equal values, so sharing is safe.
@lru_cache(maxsize=65536)
def _parsed(raw: int | float | str | Decimal, is_money: bool) -> Decimal | None:
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        return None
    if not value.is_finite() or value < 0 or value >= Decimal(10) ** 8:
        return None  # not a usable figure: the term is "not said"
    return to_money(value) if is_money else value.quantize(Decimal("0.001"))


def stated_terms(attributes: dict[str, Any] | None) -> dict[str, Any] | None:
    """The offer's stated terms as column values (None: it states none). A malformed value is dropped."""
    found = _stated(attributes)
    return dict(found[0]) if found is not None else None


def _stated(attributes: dict[str, Any] | None) -> tuple[tuple[tuple[str, Any], ...], str] | None:
    """(normalised terms, their digest), or None. A marketplace repeats a few combinations of figures
    across thousands of offers, so each combination is normalised and digested once."""
    raw = (attributes or {}).get(COST_TERMS)
    if not isinstance(raw, dict):
        return None
    values = tuple(map(raw.get, COLUMNS))
    # The types are part of the key: True == 1 and 1 == 1.0 would otherwise share a cached answer.
    try:
        return _terms(values, tuple(map(type, values)))
    except TypeError:  # an unhashable value (a list, a dict): not a figure, so no cache
        return _terms.__wrapped__(values, ())


@lru_cache(maxsize=16384)
def _terms(values: tuple[Any, ...], _types: tuple[type, ...]) -> tuple[tuple[tuple[str, Any], ...], str] | None:
    row: dict[str, Any] = {}
    for name, value in zip(COLUMNS, values, strict=True):
        if name == "stopped_bills":
            row[name] = value if isinstance(value, bool) else None
        else:
            number = _number(value, name in MONEY_TERMS)
            row[name] = None if name == "download_mbps" and not number else number  # 0 Mbit/s: not measured
    if all(v is None for v in row.values()):
        return None
    return tuple(row.items()), terms_digest(row)


def terms_digest(terms: dict[str, Any]) -> str:
    """A stable digest of normalised terms (Decimals by value: 0.1 and 0.100000 are the same term)."""
    text = "|".join(f"{name}={_canonical(terms.get(name))}" for name in COLUMNS)
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _canonical(value: object) -> str:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return repr(value)


def record_cost_terms(
    session: Session,
    provider: str,
    valid: Iterable[_Valid],
    ids: Mapping[str, int],
    observed_at: datetime,
    run_id: int | None,
) -> int:
    """Write the provider's changed cost terms (`ids`: offer key -> stored offer id, as ingest has
    them); returns the number of rows opened."""
    stated = {
        ids[v.scraped.key]: found
        for v in valid
        if (found := _stated(v.scraped.attributes)) is not None and v.scraped.key in ids
    }
    open_rows: dict[int, str] = dict(
        session.execute(
            select(OfferCostTerms.offer_id, OfferCostTerms.digest)
            .join(Offer, Offer.id == OfferCostTerms.offer_id)
            .where(Offer.provider == provider, OfferCostTerms.valid_to.is_(None))
        ).all()
    )
    close = [oid for oid, old in open_rows.items() if oid not in stated or stated[oid][1] != old]
    closing = set(close)
    new = [
        {"offer_id": oid, "valid_from": observed_at, "valid_to": None, "run_id": run_id, "digest": digest} | dict(terms)
        for oid, (terms, digest) in stated.items()
        if oid not in open_rows or oid in closing
    ]
    for i in range(0, len(close), _CHUNK):
        session.execute(
            update(OfferCostTerms)
            .where(OfferCostTerms.offer_id.in_(close[i : i + _CHUNK]), OfferCostTerms.valid_to.is_(None))
            .values(valid_to=observed_at)
        )
    insert_rows(session, OfferCostTerms, new)
    return len(new)

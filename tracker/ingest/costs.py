"""Change-only history of the cost terms an offer's API states (`providers.cost_terms`).

Called by the batch ingest once its offers are written: an offer gets a new `offer_cost_terms` row when
its stated terms change (the open row is closed at the same instant), its open row is closed when it is
delisted or stops stating any term, and an unchanged scrape writes nothing. The attribute is read from
the scraped offer, never from `offers.attributes` (which may lag: tracker.storage.tables).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal, InvalidOperation
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
    if raw is None or isinstance(raw, bool):
        return None
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        return None
    if not value.is_finite() or value < 0 or value >= Decimal(10) ** 8:
        return None  # not a usable figure: the term is "not said"
    return to_money(value) if is_money else value.quantize(Decimal("0.001"))


def stated_terms(attributes: dict[str, Any] | None) -> dict[str, Any] | None:
    """The offer's stated terms as column values (None: it states none). A malformed value is dropped."""
    raw = (attributes or {}).get(COST_TERMS)
    if not isinstance(raw, dict):
        return None
    row: dict[str, Any] = {}
    for name in COLUMNS:
        value = raw.get(name)
        if name == "stopped_bills":
            row[name] = value if isinstance(value, bool) else None
        else:
            number = _number(value, name in MONEY_TERMS)
            row[name] = None if name == "download_mbps" and not number else number  # 0 Mbit/s: not measured
    return row if any(v is not None for v in row.values()) else None


def record_cost_terms(
    session: Session, provider: str, valid: Iterable[_Valid], observed_at: datetime, run_id: int | None
) -> int:
    """Write the provider's changed cost terms; returns the number of rows opened."""
    ids = dict(session.execute(select(Offer.offer_key, Offer.id).where(Offer.provider == provider)).all())
    stated = {ids[v.scraped.key]: terms for v in valid if (terms := stated_terms(v.scraped.attributes)) is not None
              and v.scraped.key in ids}  # fmt: skip
    cols = [getattr(OfferCostTerms, c) for c in COLUMNS]
    open_rows = {
        row[0]: dict(zip(COLUMNS, row[1:], strict=True))
        for row in session.execute(
            select(OfferCostTerms.offer_id, *cols)
            .join(Offer, Offer.id == OfferCostTerms.offer_id)
            .where(Offer.provider == provider, OfferCostTerms.valid_to.is_(None))
        ).all()
    }
    close = [oid for oid, old in open_rows.items() if stated.get(oid) != _normal(old)]
    new = [
        {"offer_id": oid, "valid_from": observed_at, "valid_to": None, "run_id": run_id} | terms
        for oid, terms in stated.items()
        if oid not in open_rows or oid in close
    ]
    for i in range(0, len(close), _CHUNK):
        session.execute(
            update(OfferCostTerms)
            .where(OfferCostTerms.offer_id.in_(close[i : i + _CHUNK]), OfferCostTerms.valid_to.is_(None))
            .values(valid_to=observed_at)
        )
    insert_rows(session, OfferCostTerms, new)
    return len(new)


def _normal(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as `stated_terms` writes it (Decimals at the column's scale, booleans as booleans)."""
    return {k: (v if k == "stopped_bills" or v is None else _number(v, k in MONEY_TERMS)) for k, v in row.items()}

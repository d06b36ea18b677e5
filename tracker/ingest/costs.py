"""Change-only history of the cost terms an offer's API states (`providers.cost_terms`).

Called by the batch ingest once its offers are written: an offer gets a new `offer_cost_terms` row when
its stated terms change (the open row is closed at the same instant), its open row is closed when it is
delisted or stops stating any term, and an unchanged scrape writes nothing. The attribute is read from
the scraped offer, never from `offers.attributes` (which may lag: tracker.storage.tables).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol, cast

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from providers.contract import ScrapedOffer
from providers.cost_terms import COST_TERMS, TERM_KEYS
from tracker.money import to_money
from tracker.storage.bulk import insert_tuples
from tracker.storage.sql import select_in
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
    @property
    def same_as(self) -> int | None: ...  # taken as stored (tracker.ingest.digest): its terms are the open row's


def _number(raw: object, is_money: bool, parsed: Callable[[Any, bool], Decimal | None]) -> Decimal | None:
    if raw is None or isinstance(raw, bool) or not isinstance(raw, int | float | str | Decimal):
        return None
    return parsed(raw, is_money)


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
    values = _values(attributes)
    found = None if values is None else _normalised(values, _parsed)
    return dict(found) if found is not None else None


Terms = tuple[tuple[str, Any], ...]  # normalised (column, value) pairs, in COLUMNS order


def _values(attributes: dict[str, Any] | None) -> tuple[Any, ...] | None:
    raw = (attributes or {}).get(COST_TERMS)
    return tuple(map(raw.get, COLUMNS)) if isinstance(raw, dict) else None


def _normalised(values: tuple[Any, ...], parsed: Callable[[Any, bool], Decimal | None]) -> Terms | None:
    row: dict[str, Any] = {}
    for name, value in zip(COLUMNS, values, strict=True):
        if name == "stopped_bills":
            row[name] = value if isinstance(value, bool) else None
        else:
            number = _number(value, name in MONEY_TERMS, parsed)
            row[name] = None if name == "download_mbps" and not number else number  # 0 Mbit/s: not measured
    if all(v is None for v in row.values()):
        return None
    return tuple(row.items())


_MISSING = object()


class _BatchMemo:
    """The normalising and digesting of one provider batch's stated terms, each distinct combination once.

    A marketplace repeats a few combinations of figures across many offers, and a repeated scrape states
    the same combinations again. Global LRU caches (16,384 / 65,536 entries) held that at 20,000 offers,
    but Vast alone states ~129,000 distinct per-host combinations at 200,000 offers: cycling through more
    keys than an LRU holds misses every time, so a repeated scrape cost as much as a first one (5.4 s of
    term work on the 2-core bench machine). Here the memo is sized by the batch instead: combination ->
    digest for the provider's previous batch is carried to its next one (and only what that batch states
    again is carried on), so memory is bounded by the provider's batch and an unchanged scrape digests
    nothing. Normalised terms are kept for the batch only: rows are written just for new or changed offers.
    """

    def __init__(self, carried: dict[Hashable, str | None]) -> None:
        self.carried = carried
        self.digests: dict[Hashable, str | None] = {}
        # Normalised values in COLUMNS order, without the column names: a first 200,000-offer batch keeps
        # ~129,000 of them until its rows are written, and a (name, value) pair each cost ~90 MB more.
        self.rows: dict[Hashable, tuple[Any, ...] | None] = {}
        self.figures: dict[tuple[Any, type, bool], Decimal | None] = {}
        self.pieces: dict[tuple[str, type, Any], str] = {}

    def _figure(self, raw: Any, is_money: bool) -> Decimal | None:
        # The type is part of the key: True == 1 and 1 == 1.0 would otherwise share an answer.
        key = (raw, type(raw), is_money)
        try:
            return self.figures[key]
        except KeyError:
            found = self.figures[key] = _parsed(raw, is_money)
            return found
        except TypeError:  # unhashable: _number lets only figures through, so this is not reached today
            return _parsed(raw, is_money)

    def digest(self, values: tuple[Any, ...]) -> str | None:
        """The digest of these stated values' normalised terms (None: they state no usable term)."""
        # The types are part of the key: True == 1 and 1 == 1.0 would otherwise share an answer.
        key = (values, tuple(map(type, values)))
        try:
            found: object = self.digests.get(key, _MISSING)
        except TypeError:  # an unhashable value (a list, a dict): not a figure, so not memoised
            terms = _normalised(values, _parsed)
            return None if terms is None else terms_digest(dict(terms))
        if found is _MISSING:
            found = self.carried.get(key, _MISSING)
            if found is _MISSING:
                terms = _normalised(values, self._figure)
                self.rows[key] = _row_of(terms)
                found = None if terms is None else self._digest(terms)
            self.digests[key] = cast("str | None", found)  # not _MISSING any more
        return cast("str | None", found)

    def _digest(self, terms: Terms) -> str:
        """terms_digest of normalised terms, each `name=value` piece of its text built once per batch: a first
        200,000-offer batch digests ~129,000 combinations of a few hundred distinct figures."""
        pieces = []
        for name, value in terms:  # every column, in COLUMNS order, as terms_digest reads them
            key = (name, type(value), value)  # Decimals equal by value share a canonical text
            piece = self.pieces.get(key)
            if piece is None:
                piece = self.pieces[key] = _piece(name, value)
            pieces.append(piece)
        return _hexdigest(pieces)

    def normalised(self, values: tuple[Any, ...]) -> Terms | None:
        """The normalised terms of values `digest` has seen (computed again only for a carried combination)."""
        row = self.row(values)
        return None if row is None else tuple(zip(COLUMNS, row, strict=True))

    def row(self, values: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """`normalised`'s values alone, in COLUMNS order: a written row's term columns."""
        key = (values, tuple(map(type, values)))
        try:
            hash(key)
        except TypeError:
            return _row_of(_normalised(values, _parsed))
        if key not in self.rows:
            self.rows[key] = _row_of(_normalised(values, self._figure))
        return self.rows[key]


def _row_of(terms: Terms | None) -> tuple[Any, ...] | None:
    return None if terms is None else tuple(value for _, value in terms)


# provider -> its last batch's combination -> digest (see _BatchMemo). Replaced whole after each batch, so
# concurrent ingests of different providers never share a dict being written.
_CARRIED: dict[str, dict[Hashable, str | None]] = {}


def terms_digest(terms: dict[str, Any]) -> str:
    """A stable digest of normalised terms (Decimals by value: 0.1 and 0.100000 are the same term)."""
    return _hexdigest([_piece(name, terms.get(name)) for name in COLUMNS])


def _piece(name: str, value: object) -> str:
    return f"{name}={_canonical(value)}"


def _hexdigest(pieces: list[str]) -> str:
    return hashlib.sha1("|".join(pieces).encode(), usedforsecurity=False).hexdigest()


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
    reread: Collection[int] | None = None,
) -> int:
    """Write the provider's changed cost terms (`ids`: offer key -> stored offer id, as ingest has
    them); returns the number of rows opened. An offer taken as stored keeps its open row. `reread`: the
    stored offers whose open rows may change, when ingest knows them (those compared in full and those
    gone): only theirs are read, since every other open row belongs to an offer taken as stored or has
    none (a new offer). None: every open row of the provider."""
    memo = _BatchMemo(_CARRIED.get(provider, {}))
    stated: dict[int, tuple[tuple[Any, ...], str]] = {}
    kept: set[int] = set()
    for v in valid:
        if v.same_as is not None:
            kept.add(v.same_as)
            continue
        oid = ids.get(v.scraped.key)
        if oid is None or (values := _values(v.scraped.attributes)) is None:
            continue
        if (digest := memo.digest(values)) is not None:
            stated[oid] = (values, digest)
    open_rows = _open_rows(session, provider, reread)
    close = [oid for oid, old in open_rows.items() if oid not in kept and (oid not in stated or stated[oid][1] != old)]
    closing = set(close)
    opening = [oid for oid in stated if oid not in open_rows or oid in closing]
    new = (  # a generator: written as built (insert_tuples), not a tuple per offer held at once
        (oid, observed_at, None, run_id, stated[oid][1], *_terms_values(memo, stated[oid][0])) for oid in opening
    )
    for i in range(0, len(close), _CHUNK):
        session.execute(
            update(OfferCostTerms)
            .where(OfferCostTerms.offer_id.in_(close[i : i + _CHUNK]), OfferCostTerms.valid_to.is_(None))
            .values(valid_to=observed_at)
        )
    # Rows as built, without a dict each: a first 200,000-offer batch opens a row per offer.
    insert_tuples(session, OfferCostTerms, _ROW_COLUMNS, new)
    _CARRIED[provider] = memo.digests  # only what this batch stated: the memo never outgrows a batch
    return len(opening)


def _open_rows(session: Session, provider: str, offer_ids: Collection[int] | None) -> dict[int, str]:
    """Open rows' digests by offer: the provider's, or only those of `offer_ids` (the provider's offers)."""
    query = select(OfferCostTerms.offer_id, OfferCostTerms.digest).where(OfferCostTerms.valid_to.is_(None))
    if offer_ids is None:
        rows = list(
            session.execute(query.join(Offer, Offer.id == OfferCostTerms.offer_id).where(Offer.provider == provider))
        )
    else:
        rows = select_in(session, query, OfferCostTerms.offer_id, offer_ids)
    return {oid: digest for oid, digest in rows}


_ROW_COLUMNS = ("offer_id", "valid_from", "valid_to", "run_id", "digest", *COLUMNS)


def _terms_values(memo: _BatchMemo, values: tuple[Any, ...]) -> tuple[Any, ...]:
    row = memo.row(values)
    assert row is not None  # only values with a digest (some usable term) are written
    return row

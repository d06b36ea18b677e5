"""Apply: the writes of one batch's `Changes` (tracker.ingest.diff), in the caller's transaction.

Set-based and bulk throughout: a 20,000-offer scrape is one narrow read of the listed offers
(`read_known`) and one full read of those compared (`read_listed`), bulk inserts (COPY on Postgres, the
driver's executemany on SQLite: `tracker.storage.bulk`) and chunked UPDATEs, never one statement per offer.

On Postgres the writes go further (`_write_set_based`): new offers are COPYed straight into `offers` and
their first price and availability rows are made from those rows by `INSERT … SELECT`; the rewritten
offers (price changes, relists, description changes) are COPYed into a temporary staging table, from
which one `UPDATE … FROM` rewrites them, one closes their superseded history rows and one `INSERT …
SELECT` each writes their new price and availability rows. Per offer, Python only builds the one row it
COPYs. A profile of a first 200,000-offer batch put 14 s of its 24 s in these writes, most of it building
a dict per price and availability row and formatting it for COPY, and the changed batch's rewrite of 4,000
offers by an executemany UPDATE at ~0.2 ms an offer. Both paths write the same rows, ids included
(tests/tracker/ingest/test_set_based.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from itertools import chain
from typing import Any, TypeVar, cast

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    Column,
    CursorResult,
    Integer,
    Select,
    String,
    Table,
    all_,
    any_,
    bindparam,
    insert,
    literal,
    null,
    select,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from tracker.catalog.locations import get_locations, location_row
from tracker.ingest.diff import ChangeKind, Changes, ListedOffer
from tracker.ingest.fx import NATIVE_COLUMNS, Conversion, convert
from tracker.ingest.validate import KnownOffer, Prepared, ValidOffer
from tracker.storage.bulk import INSERT_CHUNK, copy_rows, insert_rows, staging_table, table_of
from tracker.storage.sql import IN_CHUNK, json_members, select_in
from tracker.storage.tables import (
    QUALITY_ATTRIBUTES,
    DataVersion,
    Offer,
    OfferAvailability,
    OfferPrice,
    RegionLocation,
    ScrapeRun,
    UnresolvedGpuName,
    UTCDateTime,
)

CHUNK = IN_CHUNK  # stays under SQLite's bound-parameter limit for IN lists (tracker.storage.sql)
_T = TypeVar("_T")
# The backends whose writes take `_write_set_based` (COPY, staging, set-based SQL); the others take the
# portable statements. A name, so a test can run Postgres through the portable path and compare.
SET_BASED_DIALECTS = frozenset({"postgresql"})

# The offer row's columns that describe the offer as observed now (`offer_values`), in `_offer_tuple` order.
OFFER_VALUE_COLUMNS = (
    "gpu_id",
    "gpu_family",
    "raw_gpu_name",
    "gpu_count",
    "gpu_memory_gb",
    "form_factor",
    "pricing",
    "reserved_term",
    "region",
    "instance_type",
    "available",
    "vcpus",
    "ram_gb",
    "attributes",
    "price_kind",
    "orderable",
    "demo",
    "price_per_hour",
    "price_per_gpu_hour",
    *NATIVE_COLUMNS,
    "observed_digest",
)
# A price row's columns, each the offer's column of the same name but for these (`_history_select`).
PRICE_COLUMNS = (
    "offer_id",
    "gpu_id",
    "pricing",
    "valid_from",
    "valid_to",
    "price_per_hour",
    "price_per_gpu_hour",
    "run_id",
    "change_kind",
    "price_kind",
    "orderable",
    *NATIVE_COLUMNS,
)
AVAILABILITY_COLUMNS = ("offer_id", "available", "valid_from", "valid_to", "run_id")


def read_known(session: Session, provider: str) -> dict[str, KnownOffer]:
    """The provider's stored offers by key, as validation and the diff first need them: ids, digests and the
    live prices. Only the offers the batch does not state unchanged are then read in full (`read_listed`):
    at 200,000 offers this read takes a quarter of the full one, which parses every row's attributes."""
    # Core rows, through the connection and fetched at once: the ORM's result loading, or a fetch per row,
    # cost as much as the read itself here.
    rows = (
        session.connection()
        .execute(
            select(
                Offer.id,
                Offer.offer_key,
                Offer.delisted_at.is_not(None).label("delisted"),
                Offer.gpu_id,
                Offer.observed_digest,
                Offer.price_per_hour,
                Offer.price_per_gpu_hour,
            ).where(Offer.provider == provider)
        )
        .all()
    )
    return {row.offer_key: cast(KnownOffer, row) for row in rows}


def read_listed(session: Session, provider: str, ids: Collection[int] | None = None) -> dict[str, ListedOffer]:
    """The provider's stored offers by key (only those of `ids` if given), with the columns the diff compares."""
    query = select(
        Offer.id,
        Offer.offer_key,
        Offer.price_per_hour,
        Offer.price_per_gpu_hour,
        Offer.currency,
        Offer.price_native_per_hour,
        # A flag, not the timestamp: skips 20,000 conversions for the only thing the diff needs.
        Offer.delisted_at.is_not(None).label("delisted"),
        Offer.available,
        Offer.gpu_id,
        Offer.gpu_count,
        Offer.region,
        Offer.demo,
        Offer.price_kind,
        Offer.orderable,
        # The quality attributes alone, read in SQL: decoding 20,000 attribute documents to compare
        # four members cost an unchanged scrape a third of its time.
        json_members(Offer.attributes, QUALITY_ATTRIBUTES).label("quality"),
        Offer.observed_digest,
    ).where(Offer.provider == provider)
    rows = select_in(session, query, Offer.id, ids)
    return {row.offer_key: cast(ListedOffer, row) for row in rows}


def write_changes(
    session: Session,
    provider: str,
    changes: Changes,
    listed: Mapping[str, KnownOffer],
    *,
    observed_at: datetime,
    run_id: int | None,
    demo: bool,
) -> Mapping[str, int]:
    """Write `changes`; returns every listed and new offer's id by key."""
    if session.connection().dialect.name in SET_BASED_DIALECTS:
        return _write_set_based(session, provider, changes, listed, observed_at=observed_at, run_id=run_id, demo=demo)
    ids = _insert_new(session, provider, changes.new, observed_at, demo)
    # Generators, written a chunk at a time (insert_rows): a first batch has a price and an availability
    # row per offer, and a dict each for all of them at once was the worker's largest allocation.
    price_rows = chain(
        (_price_row(oid, v, observed_at, run_id, kind) for oid, v, kind in changes.prices),
        (_price_row(ids[v.scraped.key], v, observed_at, run_id) for v in changes.new),
    )
    availability_rows = chain(
        (_availability_row(oid, v, observed_at, run_id) for oid, v in changes.availability),
        (_availability_row(ids[v.scraped.key], v, observed_at, run_id) for v in changes.new),
    )
    for rewritten in _chunks(changes.rewritten, INSERT_CHUNK):
        session.execute(
            update(Offer),
            [
                {"id": oid, "last_seen": observed_at, "delisted_at": None} | offer_values(v, demo)
                for oid, v in rewritten
            ],
        )
    # Close open rows before inserting their successors, so at most one row per offer is open.
    _close_open(session, OfferPrice, changes.close_prices + changes.gone, observed_at)
    _close_open(session, OfferAvailability, changes.close_availability + changes.gone, observed_at)
    for chunk in _chunks(changes.gone):
        session.execute(update(Offer).where(Offer.id.in_(chunk)).values(delisted_at=observed_at))
    _seen_now(session, provider, observed_at)
    insert_rows(session, OfferPrice, price_rows)
    insert_rows(session, OfferAvailability, availability_rows)
    return _Ids(listed, ids)


def _seen_now(session: Session, provider: str, observed_at: datetime) -> None:
    # Every offer still listed was seen now: one set-based statement, not one per unchanged offer
    # (on Postgres the table's fillfactor leaves room for these to be HOT updates; last_seen is unindexed).
    session.execute(
        update(Offer)
        .where(Offer.provider == provider, Offer.delisted_at.is_(None), Offer.last_seen != observed_at)
        .values(last_seen=observed_at)
    )


def _write_set_based(
    session: Session,
    provider: str,
    changes: Changes,
    listed: Mapping[str, KnownOffer],
    *,
    observed_at: datetime,
    run_id: int | None,
    demo: bool,
) -> Mapping[str, int]:
    """`write_changes` on Postgres: the same rows, in the same order (so with the same ids), written by COPY
    and set-based statements (the module docstring)."""
    offers, prices, availability = table_of(Offer), table_of(OfferPrice), table_of(OfferAvailability)
    ids, earlier = _copy_new(session, provider, changes.new, listed, observed_at, demo)
    stage = _stage_rewritten(session, changes, demo) if changes.rewritten else None
    if stage is not None:
        values: dict[str, Any] = {c: stage.c[c] for c in OFFER_VALUE_COLUMNS}
        session.execute(
            update(offers)
            .where(offers.c.id == stage.c.id)
            .values(values | {"last_seen": observed_at, "delisted_at": None})
        )
    # Close open rows before inserting their successors, so at most one row per offer is open.
    gone = bindparam("gone", changes.gone, type_=ARRAY(BigInteger()))
    for history, superseded in ((prices, "close_price"), (availability, "close_availability")):
        if stage is not None:
            session.execute(
                update(history)
                .where(history.c.offer_id == stage.c.id, stage.c[superseded], history.c.valid_to.is_(None))
                .values(valid_to=observed_at)
            )
        if changes.gone:  # one statement with an array, however many went
            session.execute(
                update(history)
                .where(history.c.offer_id == any_(gone), history.c.valid_to.is_(None))
                .values(valid_to=observed_at)
            )
    if changes.gone:
        session.execute(update(offers).where(offers.c.id == any_(gone)).values(delisted_at=observed_at))
    _seen_now(session, provider, observed_at)
    # The successors: the rewritten offers' rows from the staging table (in the diff's order), then the new
    # offers' from their stored rows (in id order: the batch's), as the portable path writes them.
    at = sql_cast(literal(observed_at, UTCDateTime()), UTCDateTime())
    run = sql_cast(literal(run_id, BigInteger()), BigInteger())
    if stage is not None:
        kind = stage.c.change_kind
        session.execute(
            insert(prices).from_select(
                PRICE_COLUMNS,
                _history_select(stage, PRICE_COLUMNS, at, run, kind).where(kind.is_not(None)).order_by(stage.c.seq),
            )
        )
        session.execute(
            insert(availability).from_select(
                AVAILABILITY_COLUMNS,
                _history_select(stage, AVAILABILITY_COLUMNS, at, run, kind)
                .where(stage.c.new_availability)
                .order_by(stage.c.seq),
            )
        )
        stage.drop(session.connection())
    if changes.new:
        fresh = [offers.c.provider == provider, offers.c.first_seen == observed_at]
        if earlier:  # offers of this provider first seen at this same instant by an earlier batch
            fresh.append(offers.c.id != all_(bindparam("earlier", earlier, type_=ARRAY(BigInteger()))))
        price = sql_cast(literal(ChangeKind.price.value), String())
        for history, columns in ((prices, PRICE_COLUMNS), (availability, AVAILABILITY_COLUMNS)):
            session.execute(
                insert(history).from_select(
                    columns, _history_select(offers, columns, at, run, price).where(*fresh).order_by(offers.c.id)
                )
            )
    return _Ids(listed, ids)


class _Ids(Mapping[str, int]):
    """Every listed and new offer's id by key, read through the listed rows rather than copied out of them
    (a dict of 200,000 ids per batch, for the few the cost terms look up)."""

    def __init__(self, listed: Mapping[str, KnownOffer], new: dict[str, int]) -> None:
        self._listed, self._new = listed, new

    def __getitem__(self, key: str) -> int:
        found = self._new.get(key)
        return found if found is not None else self._listed[key].id

    def __iter__(self) -> Iterator[str]:
        yield from self._new
        yield from (key for key in self._listed if key not in self._new)

    def __len__(self) -> int:
        return len(self._new) + sum(key not in self._new for key in self._listed)


def _history_select(
    source: Table, columns: tuple[str, ...], at: ColumnElement[Any], run: ColumnElement[Any], kind: ColumnElement[Any]
) -> Select[Any]:
    """SELECT of a history row per `source` row (offers, or the staging table): its `id` is the offer's."""
    special: dict[str, ColumnElement[Any]] = {
        "offer_id": source.c.id,
        "valid_from": at,
        "valid_to": sql_cast(null(), UTCDateTime()),
        "run_id": run,
        "change_kind": kind,
    }
    return select(*(special[c] if c in special else source.c[c] for c in columns))


def _copy_new(
    session: Session,
    provider: str,
    new: list[ValidOffer],
    listed: Mapping[str, KnownOffer],
    observed_at: datetime,
    demo: bool,
) -> tuple[dict[str, int], list[int]]:
    """COPY the new offers into `offers`; their ids by key, and the ids of any listed offer first seen at
    this same instant (an earlier batch's: not new, so the history rows `_write_set_based` makes for the
    offers first seen now must skip them)."""
    if not new:
        return {}, []
    offers = table_of(Offer)
    copy_rows(
        session,
        offers,
        ("provider", "offer_key", "first_seen", "last_seen", "delisted_at", *OFFER_VALUE_COLUMNS),
        ((provider, v.scraped.key, observed_at, observed_at, None, *_offer_tuple(v, demo, json.dumps)) for v in new),
    )
    ids = _new_ids(session, provider, observed_at)
    return ids, [oid for key, oid in ids.items() if key in listed]


def _stage_rewritten(session: Session, changes: Changes, demo: bool) -> Table:
    """The rewritten offers in a staging table: each with its description as observed now, its place in the
    diff's order (`seq`), the kind of the price row it gets (NULL: none), whether it gets an availability
    row, and which of its open rows that supersedes."""
    kinds = {oid: kind.value for oid, _, kind in changes.prices}
    available, close_price, close_availability = (
        {oid for oid, _ in changes.availability},
        set(changes.close_prices),
        set(changes.close_availability),
    )
    # Everything staged rides on a rewritten offer's row (tracker.ingest.diff rewrites every offer that gets a
    # history row or closes one): a write outside them would be lost here, not merely slow, so refuse it.
    if not (kinds.keys() | available | close_price | close_availability) <= {oid for oid, _ in changes.rewritten}:
        raise RuntimeError("a history write for an offer the diff did not rewrite: the staging would drop it")
    extra = ("change_kind", "new_availability", "close_price", "close_availability")
    stage = staging_table(
        session,
        "staging_offers",
        table_of(Offer),
        ("id", *OFFER_VALUE_COLUMNS),
        [
            Column("seq", Integer()),
            Column("change_kind", String(8)),
            Column("new_availability", Boolean()),
            Column("close_price", Boolean()),
            Column("close_availability", Boolean()),
        ],
    )
    copy_rows(
        session,
        stage,
        ("id", *OFFER_VALUE_COLUMNS, "seq", *extra),
        (
            (
                oid,
                *_offer_tuple(v, demo, json.dumps),
                seq,
                kinds.get(oid),
                oid in available,
                oid in close_price,
                oid in close_availability,
            )
            for seq, (oid, v) in enumerate(changes.rewritten)
        ),
    )
    return stage


def _insert_new(
    session: Session, provider: str, new: list[ValidOffer], observed_at: datetime, demo: bool
) -> dict[str, int]:
    if not new:
        return {}
    rows = (
        {
            "provider": provider,
            "offer_key": v.scraped.key,
            "first_seen": observed_at,
            "last_seen": observed_at,
            "delisted_at": None,
        }
        | offer_values(v, demo)
        for v in new
    )
    insert_rows(session, Offer, rows)
    return _new_ids(session, provider, observed_at)


def _new_ids(session: Session, provider: str, observed_at: datetime) -> dict[str, int]:
    # New offers are this provider's rows first seen now: one read instead of RETURNING (with, rarely, an
    # earlier batch's offers first seen at the same instant: listed, so their ids are known anyway).
    found = session.execute(
        select(Offer.offer_key, Offer.id).where(Offer.provider == provider, Offer.first_seen == observed_at)
    )
    return {key: offer_id for key, offer_id in found}


def _close_open(
    session: Session, model: type[OfferPrice] | type[OfferAvailability], offer_ids: list[int], at: datetime
) -> None:
    for chunk in _chunks(offer_ids):
        session.execute(update(model).where(model.offer_id.in_(chunk), model.valid_to.is_(None)).values(valid_to=at))


def _chunks(items: list[_T], size: int = CHUNK) -> Iterator[list[_T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _conversion(v: ValidOffer) -> Conversion:
    """The offer's native-currency quote (a USD quote converts to itself)."""
    return v.conversion or convert(v.price_per_hour, v.scraped.gpu_count, None)


def offer_values(v: ValidOffer, demo: bool) -> dict[str, Any]:
    """The offer row's columns that describe the offer as observed now (all but its key and times)."""
    return dict(zip(OFFER_VALUE_COLUMNS, _offer_tuple(v, demo), strict=True))


def _offer_tuple(v: ValidOffer, demo: bool, as_json: Callable[[Any], str] | None = None) -> tuple[Any, ...]:
    """`offer_values`' values in `OFFER_VALUE_COLUMNS` order; the attributes through `as_json` if given
    (`json.dumps` for COPY, which takes JSON as text)."""
    s = v.scraped
    return (
        v.gpu.id,
        v.gpu.family,
        s.gpu_name,
        s.gpu_count,
        s.gpu_memory_gb if s.gpu_memory_gb is not None else Decimal(str(v.gpu.memory_gb)),
        v.gpu.form_factor,
        s.pricing.value,
        s.reserved_term,
        s.region,
        s.instance_type,
        s.available,
        s.vcpus,
        s.ram_gb,
        s.attributes if as_json is None else as_json(s.attributes),
        s.price_kind.value,
        s.orderable,
        demo,
        v.price_per_hour,
        v.price_per_gpu_hour,
        *_conversion(v).row_tuple(),
        v.digest,
    )


def _price_row(
    offer_id: int, v: ValidOffer, at: datetime, run_id: int | None, change_kind: ChangeKind = ChangeKind.price
) -> dict[str, Any]:
    return {
        "offer_id": offer_id,
        "gpu_id": v.gpu.id,
        "pricing": v.scraped.pricing.value,
        "valid_from": at,
        "valid_to": None,
        "price_per_hour": v.price_per_hour,
        "price_per_gpu_hour": v.price_per_gpu_hour,
        "run_id": run_id,
        "change_kind": change_kind.value,  # the plain string: COPY writes it as is
        "price_kind": v.scraped.price_kind.value,
        "orderable": v.scraped.orderable,
    } | _conversion(v).row_values()


def _availability_row(offer_id: int, v: ValidOffer, at: datetime, run_id: int | None) -> dict[str, Any]:
    return {
        "offer_id": offer_id,
        "available": v.scraped.available,
        "valid_from": at,
        "valid_to": None,
        "run_id": run_id,
    }


def record_unknown(session: Session, run: ScrapeRun, prepared: Prepared, at: datetime) -> None:
    """Count the batch's unresolved GPU names per provider, for `gpu-tracker gpus --unknown`."""
    if not prepared.unknown_counts:
        return
    names = list(prepared.unknown_counts)
    existing = {
        u.raw_name: u
        for u in session.scalars(
            select(UnresolvedGpuName).where(
                UnresolvedGpuName.provider == run.provider, UnresolvedGpuName.raw_name.in_(names)
            )
        )
    }
    for name, count in prepared.unknown_counts.items():
        row = existing.get(name)
        if row is None:
            row = UnresolvedGpuName(provider=run.provider, raw_name=name, first_seen=at, times_seen=0)
            session.add(row)
        row.last_seen, row.last_run_id = at, run.id
        row.times_seen += count
        row.reason = prepared.unknown[name][:1000]


def record_locations(session: Session, provider: str, valid: list[ValidOffer]) -> int:
    """Where each of the batch's regions is (tracker.catalog.locations), for the region filter's SQL:
    a new region gets its row, and one the shipped table now places differently is rewritten. Returns
    the rows written."""
    regions = {v.scraped.region for v in valid if v.scraped.region}
    if not regions:
        return 0
    table = get_locations()
    stored = {
        r.region: r
        for r in session.scalars(select(RegionLocation).where(RegionLocation.provider == provider))
        if r.region in regions
    }
    written = 0
    for region in sorted(regions):
        row = location_row(table, provider, region)
        have = stored.get(region)
        if have is None:
            session.add(RegionLocation(**row))
        elif (have.located, have.country, have.areas, have.metro) != (
            row["located"],
            row["country"],
            row["areas"],
            row["metro"],
        ):
            have.located, have.country, have.areas, have.metro = (
                row["located"],
                row["country"],
                row["areas"],
                row["metro"],
            )
        else:
            continue
        written += 1
    return written


def bump_data_version(session: Session, at: datetime) -> None:
    """Invalidate derived caches everywhere; last in the transaction so the row lock is held briefly."""
    bumped: CursorResult[Any] = session.execute(  # type: ignore[assignment]  # an UPDATE's result is a cursor result
        update(DataVersion).where(DataVersion.id == 1).values(version=DataVersion.version + 1, changed_at=at)
    )
    if bumped.rowcount == 0:  # the migration creates the row; only a hand-emptied table lacks it
        session.add(DataVersion(id=1, version=1, changed_at=at))

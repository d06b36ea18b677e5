"""Apply: the writes of one batch's `Changes` (tracker.ingest.diff), in the caller's transaction.

Set-based and bulk throughout: a 20,000-offer scrape is one read of the listed offers, bulk inserts
(COPY on Postgres, `tracker.storage.bulk`) and chunked UPDATEs, never one statement per offer.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from tracker.catalog.locations import get_locations, location_row
from tracker.ingest.diff import ChangeKind, Changes, ListedOffer
from tracker.ingest.fx import convert
from tracker.ingest.validate import Prepared, ValidOffer
from tracker.storage.bulk import insert_rows
from tracker.storage.sql import json_members
from tracker.storage.tables import (
    QUALITY_ATTRIBUTES,
    DataVersion,
    Offer,
    OfferAvailability,
    OfferPrice,
    RegionLocation,
    ScrapeRun,
    UnresolvedGpuName,
)

CHUNK = 900  # stays under SQLite's bound-parameter limit for IN lists


def read_listed(session: Session, provider: str) -> dict[str, ListedOffer]:
    """The provider's stored offers by key, with only the columns the diff compares."""
    rows = session.execute(
        select(
            Offer.id,
            Offer.offer_key,
            Offer.price_per_hour,
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
        ).where(Offer.provider == provider)
    )
    return {row.offer_key: cast(ListedOffer, row) for row in rows}


def write_changes(
    session: Session,
    provider: str,
    changes: Changes,
    listed: dict[str, ListedOffer],
    *,
    observed_at: datetime,
    run_id: int | None,
    demo: bool,
) -> dict[str, int]:
    """Write `changes`; returns every listed and new offer's id by key."""
    ids = _insert_new(session, provider, changes.new, observed_at, demo)
    price_rows = [_price_row(oid, v, observed_at, run_id, kind) for oid, v, kind in changes.prices]
    price_rows += [_price_row(ids[v.scraped.key], v, observed_at, run_id) for v in changes.new]
    availability_rows = [_availability_row(oid, v, observed_at, run_id) for oid, v in changes.availability]
    availability_rows += [_availability_row(ids[v.scraped.key], v, observed_at, run_id) for v in changes.new]
    if changes.rewritten:
        session.execute(
            update(Offer),
            [
                {"id": oid, "last_seen": observed_at, "delisted_at": None} | offer_values(v, demo)
                for oid, v in changes.rewritten
            ],
        )
    # Close open rows before inserting their successors, so at most one row per offer is open.
    _close_open(session, OfferPrice, changes.close_prices + changes.gone, observed_at)
    _close_open(session, OfferAvailability, changes.close_availability + changes.gone, observed_at)
    for chunk in _chunks(changes.gone):
        session.execute(update(Offer).where(Offer.id.in_(chunk)).values(delisted_at=observed_at))
    # Every offer still listed was seen now: one set-based statement, not one per unchanged offer
    # (on Postgres the table's fillfactor leaves room for these to be HOT updates; last_seen is unindexed).
    session.execute(
        update(Offer)
        .where(Offer.provider == provider, Offer.delisted_at.is_(None), Offer.last_seen != observed_at)
        .values(last_seen=observed_at)
    )
    insert_rows(session, OfferPrice, price_rows)
    insert_rows(session, OfferAvailability, availability_rows)
    return {key: row.id for key, row in listed.items()} | ids


def _insert_new(
    session: Session, provider: str, new: list[ValidOffer], observed_at: datetime, demo: bool
) -> dict[str, int]:
    if not new:
        return {}
    rows = [
        {
            "provider": provider,
            "offer_key": v.scraped.key,
            "first_seen": observed_at,
            "last_seen": observed_at,
            "delisted_at": None,
        }
        | offer_values(v, demo)
        for v in new
    ]
    insert_rows(session, Offer, rows)
    # New offers are exactly this provider's rows first seen now: one read instead of RETURNING.
    found = session.execute(
        select(Offer.offer_key, Offer.id).where(Offer.provider == provider, Offer.first_seen == observed_at)
    )
    return {key: offer_id for key, offer_id in found}


def _close_open(
    session: Session, model: type[OfferPrice] | type[OfferAvailability], offer_ids: list[int], at: datetime
) -> None:
    for chunk in _chunks(offer_ids):
        session.execute(update(model).where(model.offer_id.in_(chunk), model.valid_to.is_(None)).values(valid_to=at))


def _chunks(items: list[int], size: int = CHUNK) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _native_values(v: ValidOffer) -> dict[str, Any]:
    money = v.conversion or convert(v.price_per_hour, v.scraped.gpu_count, None)
    return money.row_values()


def offer_values(v: ValidOffer, demo: bool) -> dict[str, Any]:
    """The offer row's columns that describe the offer as observed now (all but its key and times)."""
    s = v.scraped
    return {
        "gpu_id": v.gpu.id,
        "gpu_family": v.gpu.family,
        "raw_gpu_name": s.gpu_name,
        "gpu_count": s.gpu_count,
        "gpu_memory_gb": s.gpu_memory_gb if s.gpu_memory_gb is not None else Decimal(str(v.gpu.memory_gb)),
        "form_factor": v.gpu.form_factor,
        "pricing": s.pricing.value,
        "reserved_term": s.reserved_term,
        "region": s.region,
        "instance_type": s.instance_type,
        "available": s.available,
        "vcpus": s.vcpus,
        "ram_gb": s.ram_gb,
        "attributes": s.attributes,
        "price_kind": s.price_kind.value,
        "orderable": s.orderable,
        "demo": demo,
        "price_per_hour": v.price_per_hour,
        "price_per_gpu_hour": v.price_per_gpu_hour,
    } | _native_values(v)


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
    } | _native_values(v)


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

"""Ingest: turn one provider batch into change-only history, in one transaction.

Stages: validate and normalize every offer (bad rows and unknown GPU names are set aside and
counted), check the batch as a whole against the last good run (an empty, collapsed or degenerate
batch, or one whose price level jumped, is quarantined and changes nothing: `tracker.ingest.quarantine`),
then diff against the stored offers: new offers and price changes write price rows,
unchanged offers only move `last_seen`, offers missing from a successful batch are closed, and
returning offers reopen. Availability is history the same way (`offer_availability`): a row when an
offer appears, when its `available` flag changes and when it returns; delisting closes it. Ingesting
the same batch twice writes no price row and no availability row.

Native currency (`tracker.ingest.fx`): an offer quoted in another currency is converted at the rate of the
observation's day, and the quote, its currency and that rate go on the price row. A price change is a
change of the quote (amount or currency), the GPU count or the card: a `change_kind="price"` row, counted
in `price_rows`. The same quote at another rate whose USD figure differs writes a `change_kind="fx"`
row, counted apart (`fx_rows`), so the USD history stays exact without FX moves posing as price changes.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from providers.contract import Pricing, ScrapedOffer, ScrapeResult
from tracker.catalog.gpus import GpuCatalog, GpuNameError, GpuSpec
from tracker.catalog.variants import Resolved, resolve_offer_gpu
from tracker.config import Settings
from tracker.ingest.costs import record_cost_terms
from tracker.ingest.fx import MAX_RATE_AGE, Conversion, CurrencyError, RateBook, convert
from tracker.ingest.quarantine import PriceLevel, price_level_reason, quarantine_reason
from tracker.storage.bulk import insert_rows
from tracker.storage.sql import json_members
from tracker.storage.tables import (
    QUALITY_ATTRIBUTES,
    DataVersion,
    Offer,
    OfferAvailability,
    OfferPrice,
    ScrapeRun,
    UnresolvedGpuName,
)

CHUNK = 900  # stays under SQLite's bound-parameter limit for IN lists


@dataclass(slots=True)
class ValidOffer:
    scraped: ScrapedOffer
    gpu: GpuSpec
    price_per_hour: Decimal  # USD
    price_per_gpu_hour: Decimal  # USD
    conversion: Conversion | None = None  # the quote as stated and the rate used; None: built as USD


# A run's source whose prices are not observed now: a recording replayed today converts at the latest
# recorded rate, however old (its date is on the row), instead of being refused for want of a fresh one.
OFFLINE_SOURCES = frozenset({"demo", "replay"})


@dataclass
class Prepared:
    valid: list[ValidOffer] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    unknown: dict[str, str] = field(default_factory=dict)  # raw name → why it did not resolve
    unknown_counts: Counter[str] = field(default_factory=Counter)
    assumed: dict[str, str] = field(default_factory=dict)  # raw name → card chosen when the variant was open


@dataclass
class IngestReport:
    provider: str
    run_id: int | None
    status: str
    offers_seen: int = 0
    offers_valid: int = 0
    offers_new: int = 0
    price_rows: int = 0  # price changes (change_kind "price"), new and reopened offers included
    fx_rows: int = 0  # rows written only because the exchange rate moved (change_kind "fx")
    availability_rows: int = 0
    offers_closed: int = 0
    offers_reopened: int = 0
    unknown_names: dict[str, int] = field(default_factory=dict)
    assumed_names: dict[str, str] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)
    error: str | None = None
    # Set by the scraper, not by ingest: the response's shape against what the parser needs.
    schema_warnings: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "run_id": self.run_id,
            "status": self.status,
            "offers_seen": self.offers_seen,
            "offers_valid": self.offers_valid,
            "offers_new": self.offers_new,
            "price_rows": self.price_rows,
            "fx_rows": self.fx_rows,
            "availability_rows": self.availability_rows,
            "offers_closed": self.offers_closed,
            "offers_reopened": self.offers_reopened,
            "unknown_names": self.unknown_names,
            "assumed_names": self.assumed_names,
            "invalid": self.invalid,
            "schema_warnings": self.schema_warnings,
            "error": self.error,
        }


def validate_batch(
    result: ScrapeResult,
    catalog: GpuCatalog,
    settings: Settings,
    provider: str | None = None,
    rates: RateBook | None = None,
) -> Prepared:
    """Per-offer validation, conversion to USD and GPU name resolution (with the provider's naming conventions).

    Without `rates` (no database at hand) only offers quoted in USD can be valid; any other is set aside
    with the reason, like an offer whose currency is unknown or has no rate recent enough."""
    out = Prepared(invalid=list(result.skipped))
    book = rates or RateBook.empty(date.min)
    seen_keys: set[str] = set()
    resolved: dict[tuple[str, Decimal | None], Resolved | GpuNameError] = {}
    for offer in result.offers:
        if offer.key in seen_keys:
            out.invalid.append(f"{offer.key}: duplicate key in batch")
            continue
        seen_keys.add(offer.key)
        if offer.gpu_count <= 0:
            out.invalid.append(f"{offer.key}: gpu_count {offer.gpu_count} is not positive")
            continue
        if offer.price_per_hour <= 0:
            out.invalid.append(f"{offer.key}: price {offer.price_per_hour} is not positive")
            continue
        # A reservation is priced for its term, so one without a term (or an on-demand/spot offer
        # carrying one) would be compared against the wrong prices: set aside, never shown as on-demand.
        if (offer.pricing == Pricing.reserved) != bool(offer.reserved_term):
            out.invalid.append(
                f"{offer.key}: pricing {offer.pricing!s} with reserved_term {offer.reserved_term!r} "
                "(a reservation needs its term, and only a reservation has one)"
            )
            continue
        try:
            money = convert(offer.price_per_hour, offer.gpu_count, book.rate_for(offer.currency))
        except CurrencyError as exc:
            out.invalid.append(f"{offer.key}: {exc}")
            continue
        per_gpu = money.usd_per_gpu_hour
        if per_gpu > settings.max_price_per_gpu_hour:
            out.invalid.append(
                f"{offer.key}: ${per_gpu}/GPU-hour is above the sanity ceiling ${settings.max_price_per_gpu_hour}"
            )
            continue
        # A slice (< 1 GPU) offers part of a card's memory: its name, not its memory, identifies the card.
        memory = offer.gpu_memory_gb if offer.gpu_count >= 1 else None
        cache_key = (offer.gpu_name, memory)
        if cache_key not in resolved:
            try:
                resolved[cache_key] = resolve_offer_gpu(
                    catalog, offer.gpu_name, float(memory) if memory is not None else None, provider=provider
                )
            except GpuNameError as exc:
                resolved[cache_key] = exc
        found = resolved[cache_key]
        if isinstance(found, GpuNameError):
            out.unknown.setdefault(offer.gpu_name, str(found))
            out.unknown_counts[offer.gpu_name] += 1
            continue
        gpu = found.card
        if found.assumed:
            out.assumed[offer.gpu_name] = gpu.id
            offer.attributes = offer.attributes | {"variant_assumed": found.assumed}
        out.valid.append(ValidOffer(offer, gpu, money.usd_per_hour, per_gpu, money))
    return out


def _native_values(v: ValidOffer) -> dict[str, Any]:
    money = v.conversion or convert(v.price_per_hour, v.scraped.gpu_count, None)
    return money.row_values()


def _offer_values(v: ValidOffer, demo: bool) -> dict[str, Any]:
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
        "demo": demo,
        "price_per_hour": v.price_per_hour,
        "price_per_gpu_hour": v.price_per_gpu_hour,
    } | _native_values(v)


def _chunks(items: list[Any], size: int = CHUNK) -> Any:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def ingest(
    session: Session,
    run: ScrapeRun,
    result: ScrapeResult,
    *,
    catalog: GpuCatalog,
    settings: Settings,
    observed_at: datetime,
) -> IngestReport:
    """Apply one successful fetch to the store. The caller owns the transaction."""
    provider, demo = run.provider, run.source == "demo"
    rates = RateBook.load(session, {o.currency for o in result.offers}, observed_at,
                          max_age=None if run.source in OFFLINE_SOURCES else MAX_RATE_AGE)  # fmt: skip
    prepared = validate_batch(result, catalog, settings, provider, rates)
    report = IngestReport(
        provider=provider,
        run_id=run.id,
        status="ok",
        offers_seen=len(result.offers),
        offers_valid=len(prepared.valid),
        unknown_names=dict(prepared.unknown_counts),
        assumed_names=prepared.assumed,
        invalid=prepared.invalid,
    )
    run.observed_at = observed_at
    run.offers_seen, run.offers_valid = report.offers_seen, report.offers_valid
    run.unknown_names = sum(prepared.unknown_counts.values())
    run.invalid_offers = len(prepared.invalid)
    _record_unknown(session, run, prepared, observed_at)

    if reason := quarantine_reason(session, provider, prepared, settings):
        return _quarantine(report, run, reason)

    existing = {
        row.offer_key: row
        for row in session.execute(
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
                # The quality attributes alone, read in SQL: decoding 20,000 attribute documents to compare
                # four members cost an unchanged scrape a third of its time.
                *_stored_quality(),
            ).where(Offer.provider == provider)
        )
    }

    # The listed offers' prices are the last good run's: the diff samples the price level against them
    # as it goes, and nothing is written until that check has passed.
    level = PriceLevel()
    reopened_count = 0  # reported only once the batch is applied
    new_rows: list[dict[str, Any]] = []
    new_prices: list[tuple[str, ValidOffer]] = []
    changed: list[dict[str, Any]] = []
    price_rows: list[dict[str, Any]] = []
    fx_rows = 0
    close_ids: list[int] = []
    availability_rows: list[dict[str, Any]] = []
    availability_close_ids: list[int] = []
    for v in prepared.valid:
        row = existing.get(v.scraped.key)
        card = (v.gpu.id, v.scraped.pricing)
        if row is None:
            level.fresh[card].append(float(v.price_per_gpu_hour))
            new_rows.append(
                {
                    "provider": provider,
                    "offer_key": v.scraped.key,
                    "first_seen": observed_at,
                    "last_seen": observed_at,
                    "delisted_at": None,
                }
                | _offer_values(v, demo)
            )
            new_prices.append((v.scraped.key, v))
            continue
        reopened = bool(row.delisted)
        # The quote as stated is the price; a row written before native amounts were kept was quoted in USD.
        native = v.conversion.native_per_hour if v.conversion else v.price_per_hour
        stored_native = row.price_native_per_hour if row.price_native_per_hour is not None else row.price_per_hour
        currency = v.conversion.currency if v.conversion else "USD"
        price_changed = stored_native != native or row.currency != currency
        usd_changed = row.price_per_hour != v.price_per_hour
        count_changed = row.gpu_count != v.scraped.gpu_count
        availability_changed = row.available != v.scraped.available
        described_changed = (
            availability_changed
            or row.gpu_id != v.gpu.id
            or count_changed
            or row.region != v.scraped.region
            or row.demo != demo
            # Offers are filtered on these (verified, datacenter, reliability): a stale copy would
            # keep a deverified host in a "verified only" answer. Other attributes may lag.
            or _stored(row.quality) != _quality(v.scraped.attributes)
        )
        if reopened:  # a delisted offer's price is older than the last good run's
            level.fresh[card].append(float(v.price_per_gpu_hour))
        elif price_changed or count_changed or usd_changed:
            level.add_moved(card, v, row)
        else:
            level.same[card] += 1
        if reopened or price_changed or usd_changed or described_changed:
            changed.append({"id": row.id, "last_seen": observed_at, "delisted_at": None} | _offer_values(v, demo))
        # History is read per GPU-hour and per card: the same instance price over fewer GPUs, or the same
        # offer resolved to another card, is a new price row too.
        if reopened or price_changed or count_changed or row.gpu_id != v.gpu.id:
            if not reopened:
                close_ids.append(row.id)
            price_rows.append(_price_row(row.id, v, observed_at, run.id))
            reopened_count += int(reopened)
        elif usd_changed:  # the same quote, another USD figure: only the rate moved
            close_ids.append(row.id)
            price_rows.append(_price_row(row.id, v, observed_at, run.id, change_kind="fx"))
            fx_rows += 1
        if reopened or availability_changed:
            if not reopened:  # a returning offer's last row was closed when it was delisted
                availability_close_ids.append(row.id)
            availability_rows.append(_availability_row(row.id, v, observed_at, run.id))

    if reason := price_level_reason(session, provider, level, settings):
        return _quarantine(report, run, reason)

    incoming = {v.scraped.key for v in prepared.valid}
    gone = [row.id for key, row in existing.items() if key not in incoming and not row.delisted]

    if new_rows:
        insert_rows(session, Offer, new_rows)
        # New offers are exactly this provider's rows first seen now: one read instead of RETURNING.
        ids = dict(
            session.execute(
                select(Offer.offer_key, Offer.id).where(Offer.provider == provider, Offer.first_seen == observed_at)
            ).all()
        )
        price_rows.extend(_price_row(ids[key], v, observed_at, run.id) for key, v in new_prices)
        availability_rows.extend(_availability_row(ids[key], v, observed_at, run.id) for key, v in new_prices)
    if changed:
        session.execute(update(Offer), changed)
    # Close open price rows before inserting their successors, so at most one row per offer is open.
    for chunk in _chunks(close_ids + gone):
        session.execute(
            update(OfferPrice)
            .where(OfferPrice.offer_id.in_(chunk), OfferPrice.valid_to.is_(None))
            .values(valid_to=observed_at)
        )
    for chunk in _chunks(availability_close_ids + gone):  # likewise: at most one open availability row
        session.execute(
            update(OfferAvailability)
            .where(OfferAvailability.offer_id.in_(chunk), OfferAvailability.valid_to.is_(None))
            .values(valid_to=observed_at)
        )
    for chunk in _chunks(gone):
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
    # The offers' ids are known here already (stored ones read above, new ones just inserted).
    offer_ids = {key: row.id for key, row in existing.items()} | (ids if new_rows else {})
    record_cost_terms(session, provider, prepared.valid, offer_ids, observed_at, run.id)  # tracker.ingest.costs

    report.offers_new, report.offers_reopened = len(new_rows), reopened_count
    report.price_rows, report.fx_rows = len(price_rows) - fx_rows, fx_rows
    report.availability_rows = len(availability_rows)
    report.offers_closed = len(gone)
    run.status = "ok"
    run.offers_new, run.price_rows, run.fx_rows = report.offers_new, report.price_rows, report.fx_rows
    run.offers_closed, run.offers_reopened = report.offers_closed, report.offers_reopened
    bump_data_version(session, observed_at)
    return report


def _quarantine(report: IngestReport, run: ScrapeRun, reason: str) -> IngestReport:
    """Record why and change nothing else: the offers keep the last good run's prices and listing."""
    report.status, report.error = "quarantined", reason
    run.status, run.error = "quarantined", reason
    return report


def bump_data_version(session: Session, at: datetime) -> None:
    """Invalidate derived caches everywhere; last in the transaction so the row lock is held briefly."""
    bumped: CursorResult[Any] = session.execute(  # type: ignore[assignment]  # an UPDATE's result is a cursor result
        update(DataVersion).where(DataVersion.id == 1).values(version=DataVersion.version + 1, changed_at=at)
    )
    if bumped.rowcount == 0:  # the migration creates the row; only a hand-emptied table lacks it
        session.add(DataVersion(id=1, version=1, changed_at=at))


def _price_row(
    offer_id: int, v: ValidOffer, at: datetime, run_id: int | None, change_kind: str = "price"
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
        "change_kind": change_kind,
    } | _native_values(v)


def _availability_row(offer_id: int, v: ValidOffer, at: datetime, run_id: int | None) -> dict[str, Any]:
    return {"offer_id": offer_id, "available": v.scraped.available, "valid_from": at, "valid_to": None,
            "run_id": run_id}  # fmt: skip


def _stored_quality() -> list[Any]:
    """SQL reading the stored offer's quality attributes, as one JSON array labelled `quality`."""
    return [json_members(Offer.attributes, QUALITY_ATTRIBUTES).label("quality")]


def _stored(quality: str | None) -> tuple[Any, ...]:
    # One small array per offer: decoding it costs a fraction of what six JSON lookups in SQL did.
    return tuple(json.loads(quality)) if quality else (None,) * len(QUALITY_ATTRIBUTES)


def _quality(attributes: dict[str, Any] | None) -> tuple[Any, ...]:
    return tuple((attributes or {}).get(k) for k in QUALITY_ATTRIBUTES)


def _record_unknown(session: Session, run: ScrapeRun, prepared: Prepared, at: datetime) -> None:
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

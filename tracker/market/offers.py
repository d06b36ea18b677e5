"""Read side of the store: current offers, the price of an offer at an instant, provider status.

Writes live in `tracker.ingest.batch`; everything that answers a question from the store lives here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field
from sqlalchemy import Select, and_, or_, select
from sqlalchemy.orm import Session

from providers.contract import ProviderKind
from providers.registry import all_providers
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.market import fabric, freshness
from tracker.market.filters import OfferFilters, region_condition, region_matches
from tracker.storage.tables import Offer, OfferPrice

# The filters are tracker.market.filters'; they are re-exported for the modules that list offers.
__all__ = [
    "SORTS",
    "OfferFilters",
    "OfferListing",
    "current_offers",
    "current_offers_stmt",
    "gpu_ids_for",
    "listed_rows",
    "native_price",
    "offer_row",
    "price_at",
    "region_condition",
    "region_matches",
    "snapshot_at",
]

SORTS = {
    "price_per_gpu_hour": (Offer.price_per_gpu_hour, Offer.id),
    "price_per_hour": (Offer.price_per_hour, Offer.id),
    "last_seen": (Offer.last_seen.desc(), Offer.id),
    "gpu_count": (Offer.gpu_count.desc(), Offer.price_per_gpu_hour),
}


class OfferListing(OfferFilters):
    """The offer list: the filters, a card, an order and a page."""

    gpu: str | None = None  # family, canonical id or alias; resolved through the catalog
    sort: str = Field("price_per_gpu_hour", pattern="^(" + "|".join(SORTS) + ")$")
    limit: int | None = Field(None, ge=1)
    offset: int = Field(0, ge=0)


def gpu_ids_for(query: str) -> list[str]:
    """Card ids a human query names (family, id or alias). Raises UnknownGpuName with suggestions."""
    return [g.id for g in get_catalog().resolve(query)]


def current_offers_stmt(
    filters: OfferFilters, *, now: datetime | None = None, settings: Settings | None = None
) -> Select[Offer]:
    """Listed offers passing `filters`; an `OfferListing` also picks its card, order and page. The `live`
    filter is judged at `now` under `settings`."""
    listing = filters if isinstance(filters, OfferListing) else OfferListing.model_validate(filters.model_dump())
    stmt = select(Offer).where(Offer.delisted_at.is_(None), *listing.conditions(now=now, settings=settings))
    if listing.gpu:
        stmt = stmt.where(Offer.gpu_id.in_(gpu_ids_for(listing.gpu)))
    stmt = stmt.order_by(*SORTS[listing.sort])
    if listing.offset:
        stmt = stmt.offset(listing.offset)
    if listing.limit is not None:
        stmt = stmt.limit(listing.limit)
    return stmt


def current_offers(
    session: Session, filters: OfferFilters, *, now: datetime | None = None, settings: Settings | None = None
) -> list[Offer]:
    return list(session.scalars(current_offers_stmt(filters, now=now, settings=settings)))


def listed_rows(offers: list[Offer], now: datetime, settings: Settings) -> list[dict[str, Any]]:
    """The offer list's rows: each offer's public shape and whether it is live at `now` — the freshness
    rule the market and rankings count by, so a listed price that no ranking would use says so."""
    return [offer_row(o, live=freshness.is_fresh(o.provider, o.last_seen, now, settings)) for o in offers]


def offer_row(offer: Offer, *, live: bool | None = None) -> dict[str, Any]:
    """The public shape of an offer (CLI --json and the API); `live` as `listed_rows` judges it."""
    provider_cls = all_providers().get(offer.provider)
    kind = provider_cls.kind.value if provider_cls else "unknown"
    return {
        "id": offer.id,
        "provider": offer.provider,
        "provider_kind": kind,
        "reference": kind == ProviderKind.static_sheet.value,
        "demo": offer.demo,
        "offer_key": offer.offer_key,
        "gpu": offer.gpu_id,
        "gpu_family": offer.gpu_family,
        "raw_gpu_name": offer.raw_gpu_name,
        "gpu_count": offer.gpu_count,
        "gpu_memory_gb": offer.gpu_memory_gb,
        "form_factor": offer.form_factor,
        "pricing": offer.pricing,
        "reserved_term": offer.reserved_term,
        "region": offer.region,
        "instance_type": offer.instance_type,
        "available": offer.available,
        # What the price is (asking | transacted | floor) and whether it can be ordered at now
        # (tracker.market.price_kinds); `available` is the stock.
        "price_kind": offer.price_kind,
        "orderable": offer.orderable,
        # An aggregator's resale: which aggregator it reaches us through, and whose machine it is.
        "via": (offer.attributes or {}).get("via"),
        "upstream": (offer.attributes or {}).get("upstream"),
        # A MIG slice ("1g.10gb"): gpu_count is its share of the card and gpu_memory_gb its own memory.
        "slice": (offer.attributes or {}).get("mig_profile"),
        "fabric": fabric.row_fabric(offer.attributes),  # interconnect and cluster shape, where stated
        "price_per_hour": offer.price_per_hour,
        "price_per_gpu_hour": offer.price_per_gpu_hour,
        # The price as the provider quoted it and the rate the USD figures were converted at (None: USD).
        **native_price(offer),
        "first_seen": offer.first_seen,
        "last_seen": offer.last_seen,
        "live": live,
    }


def native_price(offer: Offer) -> dict[str, Any]:
    """The quote behind an offer's USD figures: amount, currency, and the rate with its day and source.

    A row written by something other than ingest may lack the native amounts; it was quoted in USD."""
    usd = offer.currency == "USD"
    return {
        "currency": offer.currency,
        "price_native_per_hour": offer.price_native_per_hour
        if offer.price_native_per_hour is not None or not usd
        else offer.price_per_hour,
        "price_native_per_gpu_hour": offer.price_native_per_gpu_hour
        if offer.price_native_per_gpu_hour is not None or not usd
        else offer.price_per_gpu_hour,
        "fx_rate": offer.fx_rate,
        "fx_date": offer.fx_date,
        "fx_source": offer.fx_source,
    }


def price_at(session: Session, offer_id: int, at: datetime) -> OfferPrice | None:
    """The price row in force for an offer at an instant (None if it was not listed then)."""
    return session.scalar(
        select(OfferPrice).where(
            OfferPrice.offer_id == offer_id,
            OfferPrice.valid_from <= at,
            or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > at),
        )
    )


def snapshot_at(session: Session, at: datetime, gpu_ids: list[str] | None = None) -> list[tuple[Offer, OfferPrice]]:
    """Every offer listed at an instant with the price it had then."""
    stmt = (
        select(Offer, OfferPrice)
        .join(OfferPrice, OfferPrice.offer_id == Offer.id)
        .where(and_(OfferPrice.valid_from <= at, or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > at)))
        .order_by(OfferPrice.price_per_gpu_hour, Offer.id)
    )
    if gpu_ids:
        stmt = stmt.where(OfferPrice.gpu_id.in_(gpu_ids))
    return [(o, p) for o, p in session.execute(stmt)]

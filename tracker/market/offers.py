"""Read side of the store: current offers, the price of an offer at an instant, provider status.

Writes live in `tracker.ingest.batch`; everything that answers a question from the store lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session

from providers.contract import Pricing, ProviderKind
from providers.registry import all_providers, reference_providers
from tracker.catalog.gpus import get_catalog
from tracker.market import aggregated, fabric, quality
from tracker.storage.tables import Offer, OfferPrice

SORTS = {
    "price_per_gpu_hour": (Offer.price_per_gpu_hour, Offer.id),
    "price_per_hour": (Offer.price_per_hour, Offer.id),
    "last_seen": (Offer.last_seen.desc(), Offer.id),
    "gpu_count": (Offer.gpu_count.desc(), Offer.price_per_gpu_hour),
}


@dataclass
class OfferFilters:
    gpu: str | None = None  # family, canonical id or alias; resolved through the catalog
    providers: list[str] | None = None
    pricing: list[str] | None = None
    regions: list[str] | None = None  # exact region or prefix ("us" matches "us-texas")
    min_gpus: Decimal | None = None
    # Availability and quality: what they mean, for offers without the attribute too, is tracker.market.quality.
    available_only: bool = False
    verified_only: bool = False
    datacenter_only: bool = False
    min_reliability: float | None = None
    cloud: str | None = None
    include_reference: bool = True
    aggregated: str = "include"  # include | exclude | dedupe resales (tracker.market.aggregated)
    # The fabric the offers must run on (tracker.market.fabric): an interconnect, and a least node count.
    interconnect: str | None = None
    min_nodes: int | None = None
    sort: str = "price_per_gpu_hour"
    limit: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}")
        for p in self.pricing or []:
            Pricing(p)  # raises ValueError naming the bad value
        quality.check(self)
        aggregated.check(self.aggregated)
        fabric.check(self.interconnect, self.min_nodes)


def region_matches(region: object, wanted: Sequence[str]) -> bool:
    """The region filter's rule: a region matches exactly or as a prefix ("us" matches "us-texas")."""
    return isinstance(region, str) and any(region == r or region.startswith(f"{r}-") for r in wanted)


def region_condition(wanted: Sequence[str]) -> ColumnElement[bool]:
    """`region_matches` as SQL, for queries that filter in the database."""
    return or_(*[or_(Offer.region == r, Offer.region.startswith(f"{r}-")) for r in wanted])


def gpu_ids_for(query: str) -> list[str]:
    """Card ids a human query names (family, id or alias). Raises UnknownGpuName with suggestions."""
    return [g.id for g in get_catalog().resolve(query)]


def current_offers_stmt(filters: OfferFilters) -> Select[Offer]:
    stmt = select(Offer).where(Offer.delisted_at.is_(None))
    if filters.gpu:
        stmt = stmt.where(Offer.gpu_id.in_(gpu_ids_for(filters.gpu)))
    if filters.providers:
        stmt = stmt.where(Offer.provider.in_(filters.providers))
    if filters.pricing:
        stmt = stmt.where(Offer.pricing.in_(filters.pricing))
    if filters.regions:
        stmt = stmt.where(region_condition(filters.regions))
    if filters.min_gpus is not None:
        stmt = stmt.where(Offer.gpu_count >= filters.min_gpus)
    if quality.active(filters):
        stmt = stmt.where(*quality.conditions(filters))
    if not filters.include_reference and (refs := reference_providers()):
        stmt = stmt.where(Offer.provider.not_in(refs))
    if filters.aggregated != "include":
        stmt = stmt.where(*aggregated.conditions(filters.aggregated))
    if fabric.active(filters.interconnect, filters.min_nodes):
        stmt = stmt.where(*fabric.conditions(filters.interconnect, filters.min_nodes))
    stmt = stmt.order_by(*SORTS[filters.sort])
    if filters.offset:
        stmt = stmt.offset(filters.offset)
    if filters.limit is not None:
        stmt = stmt.limit(filters.limit)
    return stmt


def current_offers(session: Session, filters: OfferFilters) -> list[Offer]:
    return list(session.scalars(current_offers_stmt(filters)))


def offer_row(offer: Offer) -> dict[str, Any]:
    """The public shape of an offer (CLI --json and the API)."""
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
        # An aggregator's resale: which aggregator it reaches us through, and whose machine it is.
        "via": (offer.attributes or {}).get("via"),
        "upstream": (offer.attributes or {}).get("upstream"),
        "fabric": fabric.row_fabric(offer.attributes),  # interconnect and cluster shape, where stated
        "price_per_hour": offer.price_per_hour,
        "price_per_gpu_hour": offer.price_per_gpu_hour,
        # The price as the provider quoted it and the rate the USD figures were converted at (None: USD).
        **native_price(offer),
        "first_seen": offer.first_seen,
        "last_seen": offer.last_seen,
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


def snapshot_at(
    session: Session, at: datetime, gpu_ids: list[str] | None = None
) -> list[tuple[Offer, OfferPrice]]:
    """Every offer listed at an instant with the price it had then."""
    stmt = (
        select(Offer, OfferPrice)
        .join(OfferPrice, OfferPrice.offer_id == Offer.id)
        .where(
            and_(OfferPrice.valid_from <= at, or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > at))
        )
        .order_by(OfferPrice.price_per_gpu_hour, Offer.id)
    )
    if gpu_ids:
        stmt = stmt.where(OfferPrice.gpu_id.in_(gpu_ids))
    return [(o, p) for o, p in session.execute(stmt)]

"""Offer filters: declared once, applied by one implementation, in SQL and over the live table.

`OfferFilters` is the schema every filtering surface embeds: `/v1/offers`, `/v1/rank`, `/v1/availability`
(as query parameters or body fields, api.filters), `gpu-tracker offers`, `cheapest` and `availability` (as
options, tracker.cli.filter_options), and rankings inside the planner. A filter added here is a parameter
and an option of all of them, validated the same way everywhere; only how a field is spelled on a query
string or a command line (`provider` for `providers`, `--verified` for `verified_only`) is decided by
`FLAGS`, in this module.

`conditions()` is the filter as SQL conditions on `offers` (the offer list, availability history, alert
observations filter in the database); `mask()` is the same filter over the live table
(`tracker.market.live`), for the ranking. `live` (only offers live now, or only those no longer live) is
the freshness rule of `tracker.market.freshness`: it needs the instant and the settings, which
`conditions` takes, and the fresh offers, which `mask` takes (a ranking passes the ones it ranks).
`include_stale` is a ranking's: the rate sheets whose prices are past their age
(`tracker.market.freshness.stale_sheets`, which the ranking and the plan pass to `mask`) are left out unless
asked (`include_stale`, or the sheet named in `providers`); the offer list and availability show every
sheet (the market labels the stale ones), so their shells leave the option out (`RANKING_ONLY`).
Availability and quality mean what `tracker.market.quality` says, aggregator resales what
`tracker.market.aggregated` says, price kinds what `tracker.market.price_kinds` says: without
`price_kinds`, only orderable asking prices count, in every surface.

The region filter takes a provider's own region code (exactly, or as a prefix: "us-east" matches
"us-east-2"), a country ("de"), an area ("eu", "apac", "americas", "mea") or a metro ("paris"): one rule,
`tracker.catalog.locations`. In memory it asks that module; in SQL it joins `region_locations`, which
ingest keeps. A code prefix is a LIKE pattern, escaped (`autoescape`), so `_` and `%` are literal.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from sqlalchemy import ColumnElement, and_, exists, or_

from providers.contract import PriceKind, Pricing
from providers.registry import reference_providers
from tracker.catalog.locations import get_locations
from tracker.config import Settings
from tracker.market import aggregated as resales
from tracker.market import fabric, freshness, price_kinds, quality
from tracker.storage.tables import Offer, RegionLocation

if TYPE_CHECKING:  # type-only: numpy.typing costs a command-line call ~10 ms to import
    import numpy.typing as npt

    from tracker.market.table import OfferTable

    Mask: TypeAlias = npt.NDArray[np.bool_]

__all__ = ["FLAGS", "NAME", "RANKING_ONLY", "Name", "OfferFilters", "region_condition", "region_mask", "region_matches"]

# Provider names and normalised regions ("us-texas", "eu-ro-1"): lower-case words joined by - or _.
NAME = r"^[a-z0-9][a-z0-9_-]{0,127}$"
Name = Annotated[str, StringConstraints(pattern=NAME)]

# How a filter is spelled where it is short: a query parameter of a GET route and a command-line option
# (`--provider`, repeatable); a body field keeps the field's own name. Fields not listed keep their name.
FLAGS: dict[str, str] = {
    "providers": "provider",
    "regions": "region",
    "available_only": "available",
    "verified_only": "verified",
    "datacenter_only": "datacenter",
    "price_kinds": "price_kind",
}


# Filters only a ranking (and the plan) applies: the offer list and availability leave them out.
RANKING_ONLY = ("include_stale",)


class OfferFilters(BaseModel):
    """Which offers count. Every field's default keeps every offer (pricing: see `mask`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    providers: list[Name] | None = Field(None, max_length=100, description="Only these providers.")
    regions: list[Name] | None = Field(
        None,
        max_length=100,
        description=(
            "Only these regions: a provider region (exact, or a prefix), a country (de, us), an area (eu, apac, "
            "americas, mea) or a metro (paris)."
        ),
    )
    pricing: list[Pricing] | None = Field(None, description="Only these pricing types (on_demand, spot, reserved).")
    price_kinds: list[PriceKind] | None = Field(
        None,
        description=(
            "Only these price kinds (asking, transacted, floor). Default: asking prices a buyer can order now; "
            "trades, rented rates and 'from' prices only when asked for."
        ),
    )
    min_gpus: Decimal | None = Field(None, gt=0, le=1024, description="Only offers with at least this many GPUs.")
    max_gpus: Decimal | None = Field(None, gt=0, le=1024, description="Only offers with at most this many GPUs.")
    max_price: Decimal | None = Field(
        None, gt=0, lt=Decimal("1e6"), description="Only offers at most this many USD per GPU-hour."
    )
    available_only: bool = Field(False, description="Only offers the provider says are available.")
    verified_only: bool = Field(False, description="Only verified machines (stated, or a cloud's own).")
    datacenter_only: bool = Field(False, description="Only datacenter machines (stated, or a cloud's own).")
    min_reliability: Decimal | None = Field(None, ge=0, le=1, description="Host reliability score, 0-1.")
    cloud: Literal["secure", "community"] | None = Field(None, description="RunPod-style cloud tier.")
    include_reference: bool = Field(True, description="Count static reference sheets.")
    interconnect: fabric.Interconnect | None = Field(None, description=fabric.INTERCONNECT_HELP)
    min_nodes: int | None = Field(None, ge=1, le=fabric.MAX_NODES, description=fabric.MIN_NODES_HELP)
    aggregated: resales.Mode = Field(
        "include", description="Offers resold by aggregators: count them, leave them out, or each machine once."
    )
    live: bool | None = Field(
        None,
        description=(
            "Only offers live now by the freshness rule the market and rankings use (true), or only listed "
            "offers no longer live (false)."
        ),
    )
    include_stale: bool = Field(
        False,
        description=(
            "Rank rate sheets whose prices were read more than TRACKER_SHEET_MAX_AGE_DAYS days ago too (their "
            "rows say stale_sheet); a sheet named in provider counts without it."
        ),
    )

    @model_validator(mode="after")
    def _gpu_range(self) -> OfferFilters:
        if self.min_gpus is not None and self.max_gpus is not None and self.min_gpus > self.max_gpus:
            raise ValueError("min_gpus must not exceed max_gpus")
        return self

    def pricing_values(self) -> list[str] | None:
        # Pricing(p): filters built by `model_construct` from an already validated schema hold plain strings.
        return sorted({Pricing(p).value for p in self.pricing}) if self.pricing else None

    def kind_values(self) -> list[str] | None:
        """The price kinds asked for; None: the default (orderable asking prices, tracker.market.price_kinds)."""
        return sorted({PriceKind(k).value for k in self.price_kinds}) if self.price_kinds else None

    def conditions(self, *, now: datetime | None = None, settings: Settings | None = None) -> list[ColumnElement[bool]]:
        """The filters as SQL conditions on `offers` (all must hold); `live` is judged at `now` under `settings`."""
        out: list[ColumnElement[bool]] = []
        if self.live is not None:
            if now is None or settings is None:
                raise ValueError("the live filter needs the instant and the settings it is judged at")
            fresh = freshness.live_condition(now, settings)
            out.append(fresh if self.live else ~fresh)
        if self.providers:
            out.append(Offer.provider.in_(self.providers))
        if self.pricing:
            out.append(Offer.pricing.in_(self.pricing_values() or []))
        out.append(price_kinds.kinds_condition(self.kind_values()))
        if self.regions:
            out.append(region_condition(self.regions))
        if self.min_gpus is not None:
            out.append(Offer.gpu_count >= self.min_gpus)
        if self.max_gpus is not None:
            out.append(Offer.gpu_count <= self.max_gpus)
        if self.max_price is not None:
            out.append(Offer.price_per_gpu_hour <= self.max_price)
        if quality.active(self):
            out.extend(quality.conditions(self))
        if not self.include_reference and (refs := reference_providers()):
            out.append(Offer.provider.not_in(refs))
        if fabric.active(self.interconnect, self.min_nodes):
            out.extend(fabric.conditions(self.interconnect, self.min_nodes))
        if self.aggregated != "include":
            out.extend(resales.conditions(self.aggregated))
        return out

    def mask(
        self,
        table: OfferTable,
        keep: Mask,
        default_pricing: Sequence[str] | None = None,
        *,
        fresh: Mask | None = None,
        stale: Collection[str] = (),
    ) -> Mask:
        """The filters over the live table: True where an offer in `keep` passes. Without a pricing filter,
        only `default_pricing` counts (a ranking leaves reserved commitments out unless asked); `live` is
        judged by `fresh` (`tracker.market.live.fresh_mask`); the rate sheets in `stale` count only with
        `include_stale`."""
        mask = keep.copy()
        if self.live is not None:
            if fresh is None:
                raise ValueError("the live filter needs the fresh offers it is judged by")
            mask &= fresh if self.live else ~fresh
        if self.providers:
            mask &= _member(table, "provider", self.providers)
        # A stale sheet named in `providers` is asked for by name: it counts as with include_stale.
        left_out = set() if self.include_stale else set(stale) - set(self.providers or ())
        if left_out:
            mask &= ~_member(table, "provider", sorted(left_out))
        wanted = self.pricing_values() or default_pricing
        if wanted:
            mask &= _member(table, "pricing", wanted)
        if "price_kind" in table:
            kinds = self.kind_values()
            if kinds is None:  # the default, asked by almost every request: once per table
                mask &= table.derived("kinds:default", _default_kinds)
            else:
                mask &= price_kinds.kinds_mask(table["price_kind"], table["orderable"], kinds)
        if self.regions:
            mask &= region_mask(table["provider"], table["region"], self.regions)
        if self.min_gpus is not None:
            mask &= table["gpu_count_f"] >= float(self.min_gpus)
        if self.max_gpus is not None:
            mask &= table["gpu_count_f"] <= float(self.max_gpus)
        if self.max_price is not None:  # on the exact Decimals, as the SQL compares them
            limit, prices = self.max_price, table["price_per_gpu_hour"]
            mask &= np.fromiter((p is not None and p <= limit for p in prices), dtype=bool, count=len(prices))
        if not self.include_reference:
            mask &= ~table["reference"]
        if quality.active(self):
            mask &= quality.mask(table, self)
        if fabric.active(self.interconnect, self.min_nodes):
            mask &= fabric.mask(table, self.interconnect, self.min_nodes)
        if self.aggregated != "include" and "via" in table:  # last: a machine counts once among those kept
            mask = resales.mask(table, mask, self.aggregated)
        return mask


def _member(table: OfferTable, column: str, wanted: Sequence[object]) -> Mask:
    """Offers whose `column` is one of `wanted`: decided once per distinct value (the table's codes, built
    once per table), then gathered: every ranking filters every live offer by provider and pricing."""
    codes, distinct = table.codes(column)
    if not len(codes):
        return np.zeros(0, dtype=bool)
    allowed = set(wanted)
    found: Mask = np.fromiter((v in allowed for v in distinct), dtype=bool, count=len(distinct))[codes]
    return found


def warm_filters(table: OfferTable) -> None:
    """Build what the default filters decide by (provider and pricing codes, the default price kinds)."""
    table.codes("provider")
    table.codes("pricing")
    if "price_kind" in table:
        table.derived("kinds:default", _default_kinds)


def _default_kinds(table: OfferTable) -> Mask:
    return price_kinds.kinds_mask(table["price_kind"], table["orderable"], None)


def region_matches(provider: object, region: object, wanted: Sequence[str]) -> bool:
    """The region filter's rule (module docstring) for one offer."""
    if not isinstance(provider, str) or not isinstance(region, str):
        return False
    return get_locations().matches(provider, region, wanted)


def region_mask(providers: npt.NDArray[Any], regions: npt.NDArray[Any], wanted: Sequence[str]) -> Mask:
    """`region_matches` over the live table's columns, deciding each distinct (provider, region) once."""
    pairs = list(zip(providers.tolist(), regions.tolist(), strict=True))
    verdict = {pair: region_matches(*pair, wanted) for pair in set(pairs)}
    return np.fromiter((verdict[pair] for pair in pairs), dtype=bool, count=len(pairs))


def region_condition(wanted: Sequence[str]) -> ColumnElement[bool]:
    """`region_matches` as SQL on `offers`: a place through `region_locations`, a code exactly or as an
    escaped LIKE prefix ("us_east" never matches "usXeast-1", "%" never every region)."""
    table = get_locations()
    parts: list[ColumnElement[bool]] = []
    for term in wanted:
        code = term  # a provider's code is matched as written: "us_east" is no "us-east"
        parts.append(Offer.region == code)
        words = table.query_words(term)
        prefix = Offer.region.startswith(f"{code}-", autoescape=True)
        if not words:
            parts.append(prefix)
            continue
        # A place name is also a code prefix where nothing places the region ("us" still finds an
        # unplaced "us-x-1"), never where the table does ("sa" is not São Paulo's "sa-east-1").
        located = exists().where(
            RegionLocation.provider == Offer.provider, RegionLocation.region == Offer.region, RegionLocation.located
        )
        parts.append(and_(prefix, ~located))
        place = or_(
            *(
                or_(
                    RegionLocation.country == w,
                    RegionLocation.metro == w,
                    RegionLocation.areas.contains(f"+{w}+", autoescape=True),
                )
                for w in sorted(words)
            )
        )
        parts.append(
            exists().where(RegionLocation.provider == Offer.provider, RegionLocation.region == Offer.region, place)
        )
    return or_(*parts)

"""The market's answers as schemas: what `/v1/offers`, `/v1/market`, `/v1/market/history`,
`/v1/market/overview`, `/v1/market/terms`, `/v1/availability`, `/v1/rank` and `/v1/rank/history` return.

They document the JSON the dashboard and every client read (`/docs`), and schemathesis checks each answer
against them (tests/api/test_schemathesis.py). The answers themselves are built as plain dicts by the
market functions and served as already-encoded, memoised bytes (api.cached), so these models describe,
they do not re-serialise: money stays exact Decimals on the wire, written as JSON numbers, which is what
`Number` says. Rows allow keys beyond those listed (`extra="allow"`): a row may grow a field before its
model names it, never lose one.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AvailabilityAnswer",
    "AvailabilityRow",
    "HistoryBucket",
    "IndexAnswer",
    "IndexPoint",
    "IndexProvider",
    "MarketCard",
    "MarketHistory",
    "MarketOverview",
    "MarketSnapshot",
    "MarketTerms",
    "Number",
    "OfferRow",
    "OffersPage",
    "RankAnswer",
    "RankHistory",
    "RankRow",
    "Row",
    "SheetAge",
    "TermCard",
    "TermDay",
    "TermPoint",
    "TermSeries",
]

# A Decimal or float written as a JSON number (tracker.money rounds the money ones).
Number = float


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")


class OfferRow(Row):
    id: int
    provider: str
    provider_kind: str
    reference: bool
    demo: bool
    offer_key: str
    gpu: str | None
    gpu_count: Number
    pricing: str
    reserved_term: str | None
    region: str | None
    available: bool | None
    price_kind: str  # asking | transacted | floor (tracker.market.price_kinds)
    orderable: bool  # a buyer can order at this price now (stock aside: `available`)
    via: str | None
    upstream: str | None
    price_per_hour: Number
    price_per_gpu_hour: Number
    currency: str
    first_seen: datetime
    last_seen: datetime
    live: bool  # live now by the freshness rule the market and rankings count by (tracker.market.freshness)


class OffersPage(BaseModel):
    offers: list[OfferRow]
    count: int
    limit: int
    offset: int


class SheetAge(Row):
    provider: str
    as_of: date | None
    age_days: int | None
    stale: bool


class MarketCard(Row):
    gpu: str
    gpu_family: str
    pricing: str
    reserved_term: str | None
    min: Number
    p25: Number
    median: Number
    p75: Number
    max: Number
    offers: int
    providers: int
    reference_only: bool
    freshest: datetime
    stalest: datetime
    age_s: Number


class MarketSnapshot(BaseModel):
    as_of: datetime
    data_version: int
    cards: list[MarketCard]
    sheets: list[SheetAge]


class HistoryBucket(Row):
    bucket: datetime
    min: Number | None
    p25: Number | None
    median: Number | None
    p75: Number | None
    max: Number | None
    offers: Number
    providers: int


class MarketHistory(BaseModel):
    gpu: str
    gpu_ids: list[str]
    pricing: str
    reserved_term: str | None = None
    interval: str
    start: datetime
    end: datetime
    buckets: list[HistoryBucket]


class TermPoint(BaseModel):
    """One commitment's distribution now: on_demand, spot, or reserved for `term`."""

    pricing: str
    term: str | None
    label: str
    commitment_hours: Number | None  # 0 on demand, None for spot
    offers: int
    providers: int
    min: Number | None
    p25: Number | None
    median: Number | None
    p75: Number | None


class TermDay(BaseModel):
    day: datetime
    offers: int  # distinct offers listed at some time of the day
    providers: int
    min: Number
    p25: Number
    median: Number
    p75: Number


class TermSeries(BaseModel):
    pricing: str
    term: str | None
    label: str
    days: list[TermDay]


class TermCard(BaseModel):
    gpu: str
    terms: list[TermPoint]
    history: list[TermSeries] | None = None


class MarketTerms(BaseModel):
    gpu: str
    gpu_ids: list[str]
    as_of: datetime
    data_version: int
    days: int | None
    cards: list[TermCard]


class OverviewCard(MarketCard):
    name: str
    form_factor: str | None
    memory_gb: Number | None
    demo: bool
    sparkline: list[dict[str, Any]]


class MarketOverview(BaseModel):
    as_of: datetime
    data_version: int
    sparkline_days: int
    cards: list[OverviewCard]
    sheets: list[SheetAge]
    aggregated: str


class AvailabilityRow(Row):
    provider: str
    gpu: str
    offers_now: int
    available_now: int
    last_available_at: datetime | None
    available_share: Number
    available_hours: Number
    reports_availability: bool


class AvailabilityAnswer(BaseModel):
    as_of: datetime
    gpu: str
    gpu_ids: list[str]
    min_gpus: Number | None
    providers: list[str] | None
    regions: list[str] | None
    pricing: list[str] | None
    days: int
    rows: list[AvailabilityRow]


class RankRow(Row):
    offer_id: int
    provider: str
    offer_key: str
    gpu: str
    gpus: Number
    pricing: str
    region: str | None
    available: bool | None
    price_per_hour: Number
    price_per_gpu_hour: Number
    fits: bool
    reason: str | None
    hours: Number | None
    cost_per_run: Number | None
    usd_per_mtok: Number | None
    last_seen: datetime


class RankAnswer(BaseModel):
    considered: int
    fitting: int
    rows: list[RankRow]
    plan: dict[str, Any] | None
    gpu_only: bool
    assumptions: str
    job: dict[str, Any]
    as_of: datetime


class RankPoint(Row):
    day: datetime
    price_per_gpu_hour: Number | None
    cost_per_run: Number | None
    offers: Number


class RankSeries(Row):
    gpu: str
    fits: bool
    points: list[RankPoint]


class RankHistory(BaseModel):
    assumptions: str
    job: dict[str, Any]
    statistic: str
    pricing: str
    reserved_term: str | None = None
    series: list[RankSeries]


class IndexProvider(Row):
    provider: str
    offers: int
    weight: Number  # the provider's capped share of the day's weight


class IndexPoint(Row):
    """One basket, area and UTC day of the price index (tracker.market.index)."""

    version: str
    basket: str
    area: str
    day: date
    value: Number | None
    published: bool
    p25: Number | None
    p75: Number | None
    spread: Number | None
    offers: int
    providers: list[IndexProvider]
    reason: str | None


class IndexAnswer(BaseModel):
    """`/v1/index`: the open GPU price index, methodology version stated (docs/index-methodology.md)."""

    version: str
    card: str | None
    days: int
    areas: list[str]
    values: list[IndexPoint]

"""The normalized offer: what every provider produces and what ingest stores.

Providers know nothing of the database; they turn responses into `ScrapedOffer`s. The canonical GPU is
resolved afterwards, in one place (`tracker.normalize`), so every provider shares the same naming rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any


class Pricing(StrEnum):
    on_demand = "on_demand"
    spot = "spot"  # spot / interruptible / bid
    reserved = "reserved"  # with a term, e.g. "1y"


@dataclass(slots=True)
class ScrapedOffer:
    """One rentable configuration at one price, as a provider lists it (USD, per instance-hour)."""

    key: str  # stable natural key, unique within the provider (survives price changes)
    gpu_name: str  # raw GPU name as the provider says it
    gpu_count: Decimal  # may be fractional for sliced GPUs (e.g. Vultr 1/7 A100)
    price_per_hour: Decimal  # USD for the whole offer (all its GPUs)
    pricing: Pricing = Pricing.on_demand
    region: str = ""
    gpu_memory_gb: Decimal | None = None  # per GPU as offered (partial for slices)
    reserved_term: str | None = None
    instance_type: str | None = None
    available: bool | None = None  # None: the API does not say
    vcpus: Decimal | None = None
    ram_gb: Decimal | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def price_per_gpu_hour(self) -> Decimal:
        return self.price_per_hour / self.gpu_count


@dataclass(slots=True)
class ScrapeResult:
    """What one provider fetch returns: offers plus what it had to drop, with reasons."""

    offers: list[ScrapedOffer] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # human-readable reasons for rows the parser dropped

"""The provider contract: the interface every adapter implements and the offers it produces.

Providers know nothing of the database; they turn responses into `ScrapedOffer`s. The canonical GPU is
resolved afterwards, in one place (`tracker.catalog`), so every provider shares the same naming rules.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import httpx

    from providers.pacing import RequestPacer


# Every pricing listing we read is a few MB at most; 64 MiB leaves room to grow while keeping a runaway or
# hostile body (endless, or a gzip bomb) from taking the worker's memory.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "NUMBER_LIMITS",
    "TEXT_LIMITS",
    "FetchContext",
    "MissingCredentials",
    "PriceKind",
    "Pricing",
    "Provider",
    "ProviderError",
    "ProviderKind",
    "ScrapeResult",
    "ScrapedOffer",
    "default_interval_for",
    "offer_problem",
]


class Pricing(StrEnum):
    on_demand = "on_demand"
    spot = "spot"  # spot / interruptible / bid
    reserved = "reserved"  # with a term, e.g. "1y"


class PriceKind(StrEnum):
    """What a price is: one a buyer is asked now, one someone paid, or a lower bound.

    Market statistics, rankings and the index read asking prices only; the other kinds are kept, apart, so
    a trade or a rented machine's rate never reads as a list price and a "from $X" never as the price."""

    asking = "asking"  # the seller's price for this offer now (a list price, a quote, a live bid to win)
    transacted = "transacted"  # what a buyer paid or pays: a trade, an auction's clearing price, a rented rate
    floor = "floor"  # a lower bound: "from $X", an auction's reserve; the price paid may be higher


@dataclass(slots=True)
class ScrapedOffer:
    """One rentable configuration at one price, as a provider lists it (USD, per instance-hour)."""

    key: str  # stable natural key, unique within the provider (survives price changes)
    gpu_name: str  # raw GPU name as the provider says it
    gpu_count: Decimal  # may be fractional for sliced GPUs (e.g. Vultr 1/7 A100)
    price_per_hour: Decimal  # for the whole offer (all its GPUs), in `currency`
    pricing: Pricing = Pricing.on_demand
    region: str = ""
    gpu_memory_gb: Decimal | None = None  # per GPU as offered (partial for slices)
    reserved_term: str | None = None
    instance_type: str | None = None
    available: bool | None = None  # None: the API does not say
    vcpus: Decimal | None = None
    ram_gb: Decimal | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    # ISO 4217 code of `price_per_hour` as the provider quoted it; ingest converts to USD at the rate of
    # the observation's day and keeps the native amount and the rate on the price row.
    currency: str = "USD"
    # Set by aggregators (Prime Intellect, Shadeform, Spheron, ...): the provider whose machine this is.
    # The offer then reaches us `via` the adapter's own name.
    upstream: str | None = None
    # What the price is (`PriceKind`), and whether a buyer can order this offer at this price now: False
    # for a rented machine's rate, a past trade or clearing price, a floor, an offer the provider closed to
    # orders. Stock is `available`'s to say: an asking price sold out now is still orderable at that price.
    price_kind: PriceKind = PriceKind.asking
    orderable: bool = True

    @property
    def price_per_gpu_hour(self) -> Decimal:
        return self.price_per_hour / self.gpu_count


# What a stored offer can hold, so one offer the database could not take is set aside with its reason
# (the same on SQLite, which ignores VARCHAR lengths, and Postgres, which fails the whole transaction).
# The sizes are the offer columns' in tracker.storage.tables; tests/providers/test_offer_limits.py keeps
# them equal. Numbers: exclusive bounds, 10^(precision − scale) of each Numeric column.
TEXT_LIMITS: Mapping[str, int] = {
    "key": 255, "gpu_name": 255, "region": 128, "instance_type": 128, "reserved_term": 16,
}  # fmt: skip  # `currency` is stored as the ISO code ingest's FX step reads it as (or the offer is set aside)
NUMBER_LIMITS: Mapping[str, int] = {
    "gpu_count": 10**5,
    "price_per_hour": 10**8,
    "gpu_memory_gb": 10**6,
    "vcpus": 10**6,
    "ram_gb": 10**8,
}


def offer_problem(offer: ScrapedOffer) -> str | None:
    """Why `offer` cannot be stored as it is (a text too long, a number negative, not finite or too large
    for its column), or None. Zero counts and prices are the ingest's own rules (they can be stored)."""
    if _fits(offer):  # nearly every offer: one expression, the reasons only for the rest
        return None
    for name, limit in TEXT_LIMITS.items():
        text = getattr(offer, name)
        if text is not None and (not isinstance(text, str) or len(text) > limit):
            size = f"{len(text):,} characters" if isinstance(text, str) else type(text).__name__
            return f"{name} is {size}; at most {limit} characters"
    if not isinstance(offer.price_kind, PriceKind):
        return f"price_kind {offer.price_kind!r} is not one of {', '.join(PriceKind)}"
    if offer.orderable is not True and offer.orderable is not False:
        return f"orderable {offer.orderable!r} is not a boolean"
    if offer.orderable and offer.price_kind is not PriceKind.asking:
        # One can order at a seller's price, never at someone else's trade or at a lower bound.
        return f"a {offer.price_kind.value} price cannot be orderable"
    for name, bound in NUMBER_LIMITS.items():
        number = getattr(offer, name)
        if number is None:
            continue
        if not isinstance(number, Decimal) or not number.is_finite():
            return f"{name} {number!r} is not a finite number"
        if number < 0:
            return f"{name} {number} is negative"
        if number >= bound:
            return f"{name} {float(number):.3g} is out of range (below {bound:.0e})"
    return None


def _fits(o: ScrapedOffer) -> bool:
    """`offer_problem` finds nothing: the same limits, written out (a loop of getattr over the limits per offer
    was a sixth of validating a 200,000-offer batch). tests/providers/test_offer_limits.py keeps the two equal."""
    t, n = TEXT_LIMITS, NUMBER_LIMITS
    return (
        type(o.key) is str
        and len(o.key) <= t["key"]
        and type(o.gpu_name) is str
        and len(o.gpu_name) <= t["gpu_name"]
        and type(o.region) is str
        and len(o.region) <= t["region"]
        and (o.instance_type is None or (type(o.instance_type) is str and len(o.instance_type) <= t["instance_type"]))
        and (o.reserved_term is None or (type(o.reserved_term) is str and len(o.reserved_term) <= t["reserved_term"]))
        and type(o.price_kind) is PriceKind
        and (o.orderable is False or (o.orderable is True and o.price_kind is PriceKind.asking))
        and _number_fits(o.gpu_count, n["gpu_count"])
        and _number_fits(o.price_per_hour, n["price_per_hour"])
        and (o.gpu_memory_gb is None or _number_fits(o.gpu_memory_gb, n["gpu_memory_gb"]))
        and (o.vcpus is None or _number_fits(o.vcpus, n["vcpus"]))
        and (o.ram_gb is None or _number_fits(o.ram_gb, n["ram_gb"]))
    )


def _number_fits(number: object, bound: int) -> bool:
    return type(number) is Decimal and number.is_finite() and 0 <= number < bound


@dataclass(slots=True)
class ScrapeResult:
    """What one provider fetch returns: offers plus what it had to drop, with reasons."""

    offers: list[ScrapedOffer] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # human-readable reasons for rows the parser dropped


class ProviderKind(StrEnum):
    cloud = "cloud"
    marketplace = "marketplace"
    static_sheet = "static_sheet"


class ProviderError(Exception):
    """A provider answered something we cannot use (HTTP error, bad JSON, changed schema).

    The message is shown to operators as the run's error: keep it readable and free of secrets.
    """


class MissingCredentials(ProviderError):
    pass


class ProviderUnreachable(ProviderError):
    """Every attempt failed to connect (no route, no DNS, refused): the network, not the provider's answer.

    Kept apart so a machine without network says so once, instead of once per provider."""


@dataclass(slots=True)
class FetchContext:
    client: httpx.AsyncClient
    credentials: Mapping[str, str] = field(default_factory=dict)
    retries: int = 3
    backoff_base_s: float = 0.5  # 0 in replay: recorded 429s need no real waiting
    # Per response, on the wire and decompressed; `providers.fetching.fetch_offers` sets the provider's own.
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    # Spaces this fetch's requests under the provider's `requests_per_minute`; `fetch_offers` sets it.
    pacer: RequestPacer | None = None

    def secret(self, name: str) -> str:
        try:
            return self.credentials[name]
        except KeyError:
            raise MissingCredentials(f"credential {name} is not configured") from None


class Provider(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    kind: ClassVar[ProviderKind]
    homepage: ClassVar[str] = ""
    credentials: ClassVar[tuple[str, ...]] = ()  # setting names, read as TRACKER_<NAME>
    # Settings that unlock more (a richer or newer API) but whose absence is no reason to skip the run.
    optional_credentials: ClassVar[tuple[str, ...]] = ()
    # How often the worker scrapes it: set from `kind` (default_interval_for) unless an adapter says otherwise.
    default_interval: ClassVar[timedelta] = timedelta(hours=1)
    parser_version: ClassVar[str] = "1"
    demo_credentials: ClassVar[Mapping[str, str]] = {}
    # The provider's documented request rate limit (requests per minute; None: none documented). The
    # HTTP layer spaces requests so a paginated fetch stays under it.
    requests_per_minute: ClassVar[float | None] = None
    # Bytes one response may hold, both as sent and once decompressed; past it the fetch fails.
    max_response_bytes: ClassVar[int] = DEFAULT_MAX_RESPONSE_BYTES

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The cadence follows from the kind: one rule, not a copy of it in every adapter.
        if "kind" in cls.__dict__ and "default_interval" not in cls.__dict__:
            cls.default_interval = default_interval_for(cls.kind)

    @abstractmethod
    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        """Fetch every page and parse it into offers. Raise ProviderError on unusable responses."""

    @classmethod
    def describe(cls) -> dict[str, object]:
        return {
            "name": cls.name,
            "title": cls.title,
            "kind": cls.kind.value,
            "credentials": list(cls.credentials),
            "optional_credentials": list(cls.optional_credentials),
            "default_interval_s": int(cls.default_interval.total_seconds()),
            "parser_version": cls.parser_version,
        }


def default_interval_for(kind: ProviderKind) -> timedelta:
    """Marketplaces move by the minute, clouds by the hour, static sheets by the day."""
    return {
        ProviderKind.marketplace: timedelta(minutes=10),
        ProviderKind.cloud: timedelta(hours=1),
        ProviderKind.static_sheet: timedelta(days=1),
    }[kind]

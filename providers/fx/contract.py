"""The rate-source contract: a source fetches reference rates and returns them as USD per unit.

Every rate is kept as "USD per one unit of the currency" because that is the one multiplication ingest
does (native amount × rate = USD), whatever the source's own base: the ECB quotes currency per EUR, so its
USD per X is USD-per-EUR ÷ X-per-EUR, and EUR's own rate is the USD-per-EUR figure as published.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import ClassVar

from providers.contract import FetchContext, ProviderError

__all__ = [
    "MAX_USD_PER_UNIT",
    "RATE_PLACES",
    "DailyRates",
    "RateSource",
    "RateSourceError",
    "fetch_rates",
    "usd_per_unit",
]

# Twelve places: a derived rate is a non-terminating quotient, so it is cut somewhere; here it keeps six
# significant digits for the weakest currency the ECB lists (USD per IDR is ~6e-5), so an amount converted
# with it is exact to the micro-dollar (`tracker.money`) for any price a GPU is rented at. `Rate` in
# `tracker.storage.tables` has the same scale.
RATE_PLACES = 12
_RATE_QUANTUM = Decimal(1).scaleb(-RATE_PLACES)
# Exclusive bound of a stored rate: `Rate` is Numeric(24, 12), twelve digits before the point.
MAX_USD_PER_UNIT = Decimal(10) ** 12


class RateSourceError(ProviderError):
    """The source answered something we cannot use: nothing of that answer is stored."""


@dataclass(frozen=True, slots=True)
class DailyRates:
    """One day's reference rates from one source: currency code → USD per unit (USD itself is not listed)."""

    source: str
    day: date
    usd_per_unit: dict[str, Decimal] = field(default_factory=dict)


def usd_per_unit(usd_per_base: Decimal, units_per_base: Decimal) -> Decimal:
    """USD per unit of a currency quoted against a common base (the ECB's EUR), at `RATE_PLACES`."""
    return (usd_per_base / units_per_base).quantize(_RATE_QUANTUM, rounding=ROUND_HALF_EVEN)


class RateSource(ABC):
    name: ClassVar[str]  # stored with every rate (`fx_rates.source`, `offer_prices.fx_source`)
    title: ClassVar[str]
    url: ClassVar[str]
    homepage: ClassVar[str] = ""
    # How often the worker fetches it: a reference rate is published once a working day.
    default_interval: ClassVar[timedelta] = timedelta(days=1)
    # A daily rates file is a couple of KB: anything near this is not one.
    max_response_bytes: ClassVar[int] = 1 * 2**20

    @abstractmethod
    async def fetch(self, ctx: FetchContext) -> list[DailyRates]:
        """Fetch and parse the rates, newest day last. Raise RateSourceError on anything unusable."""

    @classmethod
    def describe(cls) -> dict[str, object]:
        return {
            "name": cls.name,
            "title": cls.title,
            "url": cls.url,
            "default_interval_s": int(cls.default_interval.total_seconds()),
        }


async def fetch_rates(source: type[RateSource], ctx: FetchContext) -> list[DailyRates]:
    """`source().fetch(ctx)` under the source's own response-size limit (the one way to run a source)."""
    return await source().fetch(replace(ctx, max_response_bytes=source.max_response_bytes))

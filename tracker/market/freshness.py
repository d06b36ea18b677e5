"""When is a price live? The one rule, used by the market, ranking, alerts, provider health, metrics
and the dashboard.

An offer is live while its provider was last scraped successfully within the provider's freshness
window: max(TRACKER_STALE_AFTER, 3 × the provider's scrape interval), where the interval is the one
the worker really uses (TRACKER_INTERVALS, else the provider's default). Three intervals tolerate two
missed or failed scrapes before a price stops counting; the floor keeps a fast marketplace from
flickering out of the market on one slow cycle. A daily rate sheet is therefore live for three days
after it was read, and a marketplace scraped every ten minutes for six hours.

Everything that asks "is this live?" goes through `window`, so the answers cannot drift apart: in
Python `is_fresh`, over the live table `tracker.market.live.fresh_mask`, and in SQL `live_condition`
(the offer list's `live` flag and filter, alert observations).

A rate sheet has a second age: the day its prices were read off the provider's page (`as_of`).
Re-reading an unchanged file every day keeps its offers live, but not its prices young: a sheet whose
`as_of` is more than TRACKER_SHEET_MAX_AGE_DAYS (default 45) days before today is **stale**
(`sheet_ages`). Its prices still count — a dated published price is data, and it is labelled
reference wherever it shows — but `/v1/market`, the overview and the dashboard say which sheets are
stale, so nobody mistakes a months-old page for today's price.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, and_, or_

from providers.contract import ProviderKind
from providers.registry import all_providers
from tracker.config import Settings
from tracker.storage.tables import Offer

__all__ = [
    "UNKNOWN_PROVIDER_INTERVAL",
    "SheetAge",
    "is_fresh",
    "live_condition",
    "scrape_interval",
    "sheet_ages",
    "sheet_dates",
    "signature",
    "stale_sheets",
    "window",
    "windows",
]

# Offers of a provider the registry no longer knows (a removed adapter) keep the cloud cadence.
UNKNOWN_PROVIDER_INTERVAL = timedelta(hours=1)
MISSED_SCRAPES = 3  # live for this many intervals after the last success


def scrape_interval(provider: str, settings: Settings, default: timedelta | None = None) -> timedelta:
    """How often the worker scrapes `provider`: TRACKER_INTERVALS, else the adapter's default
    (`default` when the caller holds the adapter class, else looked up in the registry)."""
    seconds = settings.intervals.get(provider)
    if seconds:
        return timedelta(seconds=seconds)
    if default is not None:
        return default
    cls = all_providers().get(provider)
    return cls.default_interval if cls else UNKNOWN_PROVIDER_INTERVAL


def window(provider: str, settings: Settings) -> timedelta:
    """How long after its last successful scrape a provider's prices count as live."""
    return max(settings.stale_after, MISSED_SCRAPES * scrape_interval(provider, settings))


def windows(providers: Iterable[str], settings: Settings) -> dict[str, timedelta]:
    return {p: window(p, settings) for p in providers}


def is_fresh(provider: str, last_seen: datetime, now: datetime, settings: Settings) -> bool:
    return now - last_seen <= window(provider, settings)


def live_condition(now: datetime, settings: Settings) -> ColumnElement[bool]:
    """`is_fresh` as SQL on `offers`: each provider's own window, grouped by window so the condition stays
    a handful of terms however many providers there are."""
    by_window: dict[timedelta, list[str]] = {}
    for name, w in windows(all_providers(), settings).items():
        by_window.setdefault(w, []).append(name)
    terms = [and_(Offer.provider.in_(names), Offer.last_seen >= now - w) for w, names in by_window.items()]
    unknown = window("", settings)  # offers of a provider no longer in the registry
    terms.append(and_(Offer.provider.not_in(list(all_providers())), Offer.last_seen >= now - unknown))
    return or_(*terms)


def signature(settings: Settings) -> tuple[object, ...]:
    """What the rule depends on in the settings: part of every cache key of a freshness-dependent answer."""
    return (settings.stale_after, tuple(sorted(settings.intervals.items())), settings.sheet_max_age_days)


@dataclass(frozen=True)
class SheetAge:
    """How old a rate sheet's prices are: the day they were read and whether that is too long ago."""

    provider: str
    as_of: date
    age_days: int
    stale: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "as_of": self.as_of.isoformat(),
            "age_days": self.age_days,
            "stale": self.stale,
        }


@lru_cache(maxsize=1)
def sheet_dates() -> dict[str, date]:
    """Each registered rate sheet's `as_of` (the sheets are package data: read once per process). A sheet
    whose date cannot be read has none, and is never called fresh for want of one: see `sheet_ages`."""
    out: dict[str, date] = {}
    for name, cls in all_providers().items():
        if cls.kind != ProviderKind.static_sheet:
            continue
        try:
            out[name] = date.fromisoformat(str(cls.describe().get("as_of", "")))
        except ValueError:
            out[name] = date.min
    return out


def sheet_ages(now: datetime, settings: Settings, providers: Iterable[str] | None = None) -> dict[str, SheetAge]:
    """The age of every rate sheet (or of those among `providers`) on `now`'s UTC day: stale once its
    `as_of` is more than `settings.sheet_max_age_days` days back (an undated sheet is stale)."""
    today = now.date()
    wanted = None if providers is None else set(providers)
    return {
        name: SheetAge(name, as_of, (today - as_of).days, (today - as_of).days > settings.sheet_max_age_days)
        for name, as_of in sorted(sheet_dates().items())
        if wanted is None or name in wanted
    }


def stale_sheets(now: datetime, settings: Settings) -> frozenset[str]:
    """The rate sheets that are stale on `now`'s day."""
    return frozenset(name for name, age in sheet_ages(now, settings).items() if age.stale)

"""When is a price live? The one rule, used by the market, ranking, alerts, provider health, metrics
and the dashboard.

An offer is live while its provider was last scraped successfully within the provider's freshness
window: max(TRACKER_STALE_AFTER, 3 × the provider's scrape interval), where the interval is the one
the worker really uses (TRACKER_INTERVALS, else the provider's default). Three intervals tolerate two
missed or failed scrapes before a price stops counting; the floor keeps a fast marketplace from
flickering out of the market on one slow cycle. A daily rate sheet is therefore live for three days
after it was read, and a marketplace scraped every ten minutes for six hours.

Everything that asks "is this live?" goes through `window`, so the answers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from providers.registry import all_providers
from tracker.config import Settings

__all__ = [
    "UNKNOWN_PROVIDER_INTERVAL",
    "is_fresh",
    "scrape_interval",
    "signature",
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


def signature(settings: Settings) -> tuple[object, ...]:
    """What the rule depends on in the settings: part of every cache key of a freshness-dependent answer."""
    return (settings.stale_after, tuple(sorted(settings.intervals.items())))

"""Fetch exchange rates and store them: scheduled daily by the worker, run by `gpu-tracker fx update`.

A rate source runs like a provider (its own HTTP client, live or replaying a cassette, the project's HTTP
helpers and byte caps) but writes `fx_rates`, not the scrape ledger: it sells no GPU. A failed fetch stores
nothing and keeps the rates already stored (ingest dates the rate it uses, and refuses one too old).
Offline runs (demo, replay) replay the source's bundled cassette, so `scrape --demo` converts its EUR
offers at recorded reference rates without touching the network.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import FetchContext, ProviderError
from providers.fx.contract import RateSource, fetch_rates
from providers.fx.registry import DEFAULT_RATE_SOURCE, get_rate_source
from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.ingest.fx import MAX_RATE_AGE, RateBook, StoredRates, store_rates
from tracker.pipeline.slots import slot_start
from tracker.storage.engine import session_scope
from tracker.storage.tables import FxRate

log = logging.getLogger(__name__)

__all__ = [
    "RatesReport",
    "cassette_for",
    "ensure_offline_rates",
    "ensure_rates_for",
    "missing_rates",
    "rates_due",
    "update_rates",
    "update_rates_sync",
]


def cassette_for(source: type[RateSource]) -> Path:
    """The recording a rate source replays offline (`providers/cassettes/fx_<name>.json`)."""
    return bundled_cassette(f"fx_{source.name}")


@dataclass
class RatesReport:
    source: str
    status: str  # ok | failed
    mode: str  # live | demo | replay
    stored: list[StoredRates] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        stored = self.stored[0].as_dict() if self.stored else {"days": [], "inserted": 0, "revised": 0, "unchanged": 0}
        return {"source": self.source, "status": self.status, "mode": self.mode, "error": self.error} | {
            k: v for k, v in stored.items() if k != "source"
        }


async def update_rates(
    engine: Engine,
    settings: Settings,
    *,
    source: str = DEFAULT_RATE_SOURCE,
    mode: str = "live",
    cassette: Cassette | None = None,
    clock: Clock = utcnow,
) -> RatesReport:
    """Fetch one source and store what it returned. Never raises for the source's faults: they are reported."""
    cls = get_rate_source(source)
    if mode != "live" and cassette is None:
        cassette = Cassette.load(cassette_for(cls))
    transport: httpx.AsyncBaseTransport = (
        ReplayTransport(cassette) if cassette is not None else httpx.AsyncHTTPTransport(retries=0)
    )
    async with httpx.AsyncClient(
        transport=transport,
        timeout=settings.http_timeout_s,
        follow_redirects=False,
        headers={"user-agent": "gpu-price-tracker/0.1 (+https://github.com/gpu-price-tracker)"},
    ) as client:
        ctx = FetchContext(client=client, retries=settings.http_retries, backoff_base_s=0.5 if mode == "live" else 0.0)
        try:
            fetched = await asyncio.wait_for(fetch_rates(cls, ctx), timeout=settings.scrape_timeout_s)
        except TimeoutError:
            return _failed(cls, mode, f"timed out after {settings.scrape_timeout_s:.0f}s")
        except ProviderError as exc:
            return _failed(cls, mode, str(exc))
        except Exception as exc:  # a parser bug stays a failed fetch, never a crashed worker
            log.exception("rate source %s raised unexpectedly", cls.name)
            return _failed(cls, mode, f"{type(exc).__name__}: {exc}")
    fetched_at = clock()

    def store() -> list[StoredRates]:
        with session_scope(engine) as session:
            return store_rates(session, fetched, fetched_at)

    try:
        stored = await asyncio.to_thread(store)
    except SQLAlchemyError as exc:  # the database, not the source: one line, the stored rates are kept
        return _failed(cls, mode, f"storing the rates failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    log.info("rates %s: %s", cls.name, [s.as_dict() for s in stored])
    return RatesReport(cls.name, "ok", mode, stored)


def _failed(cls: type[RateSource], mode: str, error: str) -> RatesReport:
    log.warning("rate source %s failed (stored rates kept): %s", cls.name, error)
    return RatesReport(cls.name, "failed", mode, error=error)


def update_rates_sync(engine: Engine, settings: Settings, **kwargs: Any) -> RatesReport:
    """`update_rates` from synchronous code (the worker's scheduler threads, the CLI)."""
    return asyncio.run(update_rates(engine, settings, **kwargs))


def rates_due(engine: Engine, now: datetime, source: str = DEFAULT_RATE_SOURCE) -> bool:
    """Whether the source's current slot (one a day for the ECB) has no successful fetch yet."""
    cls = get_rate_source(source)
    with session_scope(engine) as session:
        last = session.scalar(select(func.max(FxRate.fetched_at)).where(FxRate.source == cls.name))
    # fetched_at only moves when something was inserted or revised: a re-fetch of unchanged rates leaves
    # it, so "due" can also mean "fetched, nothing new yet" — one more small request, never a missed day.
    return last is None or last < slot_start(now, cls.default_interval)


async def ensure_offline_rates(engine: Engine, settings: Settings, clock: Clock = utcnow) -> RatesReport | None:
    """Before an offline scrape: load the bundled rates when the store has none, so demo offers quoted in
    EUR convert (at recorded reference rates, dated on each row) instead of being set aside."""

    def have_rates() -> bool:
        with session_scope(engine) as session:
            return session.scalar(select(FxRate.id).limit(1)) is not None

    if await asyncio.to_thread(have_rates):
        return None
    return await update_rates(engine, settings, mode="demo", clock=clock)


def missing_rates(engine: Engine, currencies: Iterable[object], at: datetime, *, live: bool = True) -> list[str]:
    """The currencies of a batch that ingest could not convert now: no stored rate at all, or (live) none
    recent enough. The same lookup ingest makes (`RateBook`), so the two never disagree."""
    with session_scope(engine) as session:
        book = RateBook.load(session, currencies, at, max_age=MAX_RATE_AGE if live else None)
    return sorted(code for code, rate in book.rates.items() if isinstance(rate, str))


async def ensure_rates_for(
    engine: Engine, settings: Settings, currencies: Iterable[object], *, source: str, clock: Clock = utcnow
) -> RatesReport | None:
    """Before a batch is ingested: when it quotes a currency without a usable rate (a fresh database,
    before any `fx update`), fetch the rates first, so the batch converts instead of being set aside.

    Live runs fetch the live source, offline runs (demo, replay) its bundled recording. At most once per
    rate slot: when the source was already fetched today and still lacks the currency, fetching again
    would not help (ingest then sets those offers aside with the reason, as before)."""
    live = source == "live"
    wanted = set(currencies)
    try:
        missing = await asyncio.to_thread(missing_rates, engine, wanted, clock(), live=live)
        if not missing or not await asyncio.to_thread(rates_due, engine, clock()):
            return None
    except Exception:  # a failed check costs the batch nothing it had without it: ingest still decides
        log.exception("could not check the stored rates before ingest")
        return None
    log.info("batch quotes %s without a usable rate: fetching rates first", ", ".join(missing))
    return await update_rates(engine, settings, mode="live" if live else "demo", clock=clock)

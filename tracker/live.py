"""The live offer frame: every listed offer as one pandas DataFrame, cached until the next ingest.

The market snapshot and the ranking both read this frame, so a request costs one primary-key read
(the data version bumped by every ingest, in any process) instead of a scan of the offers table.
Freshness is judged per provider: an offer counts as live while it was seen within
max(settings.stale_after, 3 × the provider's scrape interval), so a daily rate sheet is not "stale"
after six hours while a marketplace missing for half an hour is.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from providers.base import ProviderKind
from providers.registry import all_providers
from tracker.models import DataVersion, Offer

COLUMNS = [
    "id", "provider", "offer_key", "gpu_id", "gpu_family", "gpu_count", "gpu_memory_gb", "pricing",
    "reserved_term", "region", "instance_type", "available", "demo", "price_per_hour", "price_per_gpu_hour",
    "first_seen", "last_seen",
]  # fmt: skip


def data_version(session: Session) -> int:
    return session.scalar(select(DataVersion.version).where(DataVersion.id == 1)) or 0


def _load(session: Session) -> pd.DataFrame:
    stmt = select(*[getattr(Offer, c) for c in COLUMNS]).where(Offer.delisted_at.is_(None))
    df = pd.DataFrame(session.execute(stmt).all(), columns=COLUMNS)
    providers = all_providers()
    df["reference"] = (
        df["provider"].map(lambda p: p in providers and providers[p].kind == ProviderKind.static_sheet).astype(bool)
    )
    df["interval_s"] = df["provider"].map(
        lambda p: providers[p].default_interval.total_seconds() if p in providers else 3600.0
    )
    # Floats for vectorised arithmetic; the exact Decimals stay in the database and in offer rows.
    for col in ("gpu_count", "gpu_memory_gb", "price_per_hour", "price_per_gpu_hour"):
        df[col + "_f"] = df[col].astype(float)
    df["last_seen"] = pd.to_datetime(df["last_seen"], utc=True)
    return df


class LiveOffers:
    """Process-wide cache of the live frame per database, keyed on the data version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frames: dict[str, tuple[int, pd.DataFrame]] = {}
        self._derived: dict[tuple[str, int, object], object] = {}

    def frame(self, engine: Engine, session: Session) -> tuple[int, pd.DataFrame]:
        key = engine.url.render_as_string(hide_password=False)
        version = data_version(session)
        cached = self._frames.get(key)
        if cached and cached[0] == version:
            return cached
        df = _load(session)
        with self._lock:
            self._frames[key] = (version, df)
            # Derived results of older versions can never be asked for again.
            self._derived = {k: v for k, v in self._derived.items() if not (k[0] == key and k[1] != version)}
        return version, df

    def memo(self, engine: Engine, version: int, params: object, compute):  # type: ignore[no-untyped-def]
        """Cache a result derived from one version of the frame (e.g. a market snapshot)."""
        key = (engine.url.render_as_string(hide_password=False), version, params)
        if key not in self._derived:
            value = compute()
            with self._lock:
                self._derived[key] = value
        return self._derived[key]

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()
            self._derived.clear()


LIVE = LiveOffers()


def freshness_window(provider: str, stale_after: timedelta) -> timedelta:
    cls = all_providers().get(provider)
    interval = cls.default_interval if cls else timedelta(hours=1)
    return max(stale_after, 3 * interval)


def fresh_mask(df: pd.DataFrame, now: datetime, stale_after: timedelta, max_age: timedelta | None = None) -> np.ndarray:
    """Offers seen recently enough to count as live."""
    if df.empty:
        return np.zeros(0, dtype=bool)
    if max_age is not None:
        window = np.full(len(df), max_age.total_seconds())
    else:
        window = np.maximum(stale_after.total_seconds(), 3 * df["interval_s"].to_numpy())
    age = (pd.Timestamp(now) - df["last_seen"]).dt.total_seconds().to_numpy()
    return age <= window

"""The live offer frame: every listed offer as one pandas DataFrame, cached until the next ingest.

The market snapshot and the ranking both read this frame, so a request costs one primary-key read
(the data version bumped by every ingest, in any process) instead of a scan of the offers table.
Freshness is judged per provider by the one rule in `tracker.market.freshness`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from providers.registry import reference_providers
from tracker.config import Settings
from tracker.market import freshness
from tracker.storage.tables import DataVersion, Offer

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
    df["reference"] = df["provider"].isin(reference_providers())
    # A small integer per provider: freshness windows (which depend on the settings) are looked up per
    # provider, not per row, on every request.
    codes, names = pd.factorize(df["provider"], use_na_sentinel=False)
    df["provider_code"] = codes
    df.attrs["providers"] = [str(n) for n in names]
    # Floats for vectorised arithmetic; the exact Decimals stay in the database and in offer rows.
    for col in ("gpu_count", "gpu_memory_gb", "price_per_hour", "price_per_gpu_hour"):
        df[col + "_f"] = df[col].astype(float)
    df["last_seen"] = pd.to_datetime(df["last_seen"], utc=True)
    # A small integer per card, so rankings group offers by card without hashing strings per request.
    df["gpu_code"] = pd.factorize(df["gpu_id"], use_na_sentinel=False)[0]
    return df


# Bounds on the derived-result memo: a client varying parameters cannot grow memory without limit.
MEMO_MAX_ENTRIES = 4096
MEMO_MAX_BYTES = 128 * 2**20  # counted for encoded bodies (bytes), the large entries


def _nbytes(value: object) -> int:
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return 0


class LiveOffers:
    """Process-wide cache of the live frame per database, keyed on the data version.

    `memo` caches anything derived from one data version (snapshots, encoded API answers): an LRU
    bounded by entry count and by the bytes of encoded bodies, computed once per key even when many
    threads ask at the same moment (the others wait for the first), and dropped when a newer version
    is seen.
    """

    def __init__(self, max_entries: int = MEMO_MAX_ENTRIES, max_bytes: int = MEMO_MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._frames: dict[str, tuple[int, pd.DataFrame]] = {}
        self._derived: OrderedDict[tuple[str, int, object], object] = OrderedDict()
        self._sizes: dict[tuple[str, int, object], int] = {}
        self._bytes = 0
        self._latest: dict[str, int] = {}
        self._inflight: dict[tuple[str, int, object], tuple[threading.Event, int]] = {}

    def frame(self, engine: Engine, session: Session) -> tuple[int, pd.DataFrame]:
        key = engine.url.render_as_string(hide_password=False)
        version = data_version(session)
        cached = self._frames.get(key)
        if cached and cached[0] == version:
            return cached
        with self._load_lock:  # one load at a time: concurrent misses after an ingest share it
            cached = self._frames.get(key)
            if cached and cached[0] == version:
                return cached
            df = _load(session)
            with self._lock:
                self._frames[key] = (version, df)
                # Derived results of older versions can never be asked for again.
                self._drop_versions(key, keep=version)
        return version, df

    def memo(self, engine: Engine, version: int, params: object, compute):  # type: ignore[no-untyped-def]
        """Cache a result derived from one version of the frame (e.g. a market snapshot)."""
        key = (engine.url.render_as_string(hide_password=False), version, params)
        me = threading.get_ident()
        while True:
            with self._lock:
                if key in self._derived:
                    self._derived.move_to_end(key)
                    return self._derived[key]
                flight = self._inflight.get(key)
                if flight is None or flight[1] == me:
                    event = threading.Event()
                    self._inflight[key] = (event, me)
                    break
            flight[0].wait()  # another thread is computing it; then look again
        try:
            value = compute()
            self._store(key, value)
            return value
        finally:
            with self._lock:
                self._inflight.pop(key, None)
            event.set()

    def peek(self, engine: Engine, version: int, params: object) -> object | None:
        """A memoised result if there is one (None otherwise); never computes, never waits on a computation."""
        key = (engine.url.render_as_string(hide_password=False), version, params)
        with self._lock:
            if key in self._derived:
                self._derived.move_to_end(key)
                return self._derived[key]
        return None

    def _store(self, key: tuple[str, int, object], value: object) -> None:
        size = _nbytes(value)
        if size > self.max_bytes:
            return
        with self._lock:
            db, version = key[0], key[1]
            if version > self._latest.get(db, version - 1):
                self._latest[db] = version
                self._drop_versions(db, keep=version, older_only=True)
            if key in self._derived:
                self._bytes -= self._sizes.pop(key, 0)
            self._derived[key] = value
            self._derived.move_to_end(key)
            self._sizes[key] = size
            self._bytes += size
            while len(self._derived) > self.max_entries or self._bytes > self.max_bytes:
                old, _ = self._derived.popitem(last=False)
                self._bytes -= self._sizes.pop(old, 0)

    def _drop_versions(self, db: str, keep: int, older_only: bool = False) -> None:
        """Forget memoised results of `db` for other (or only older) versions; the caller holds the lock."""
        for k in [k for k in self._derived if k[0] == db and (k[1] < keep if older_only else k[1] != keep)]:
            del self._derived[k]
            self._bytes -= self._sizes.pop(k, 0)

    def memo_size(self) -> tuple[int, int]:
        """(entries, bytes of encoded bodies) held by the memo."""
        with self._lock:
            return len(self._derived), self._bytes

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()
            self._derived.clear()
            self._sizes.clear()
            self._latest.clear()
            self._bytes = 0


LIVE = LiveOffers()


def fresh_mask(
    df: pd.DataFrame, now: datetime, settings: Settings, max_age: timedelta | None = None
) -> npt.NDArray[np.bool_]:
    """Offers live at `now` by the freshness rule, or seen within `max_age` when the caller gives one."""
    if df.empty:
        return np.zeros(0, dtype=bool)
    if max_age is not None:
        limit = np.full(len(df), max_age.total_seconds())
    else:
        per_provider = [freshness.window(p, settings).total_seconds() for p in df.attrs["providers"]]
        limit = np.array(per_provider, dtype=np.float64)[df["provider_code"].to_numpy()]
    age = (pd.Timestamp(now) - df["last_seen"]).dt.total_seconds().to_numpy()
    return np.asarray(age <= limit, dtype=bool)

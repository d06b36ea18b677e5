"""The live offers: every listed offer as numpy columns, cached until the next ingest.

The market snapshot and the ranking both read this table, so a request costs one primary-key read
(the data version bumped by every ingest, in any process) instead of a scan of the offers table.
Freshness is judged per provider by the one rule in `tracker.market.freshness`.

Rebuilding a large table takes seconds (200,000 offers: ~5 s on Postgres), so a cache created with
`background=True` (the API's) never makes a request wait for it: when the data version moves, the new table,
with its derived columns (`warmers`: the offers' cost terms), is built on a thread of its own and swapped in
whole when ready; requests meanwhile are answered from the previous version (every answer names its
`data_version`). A small table (under `sync_rows`) is rebuilt on the request, as before: it takes a few ms,
and a caller that has just ingested then reads what it wrote. The worker and the CLI read exact versions.

The table is plain numpy: ranking a job (the API's /v1/rank and the CLI's `cheapest`) needs nothing
heavier, and a command-line call should not pay for importing pandas. The statistics that group
offers use `OfferTable.frame`, a pandas view built on first use and kept with the table.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from providers.registry import reference_providers
from tracker.config import Settings
from tracker.market import aggregated, fabric, freshness, quality, spill
from tracker.market.table import EPOCH, OfferTable, factorize
from tracker.storage.bulk import table_of
from tracker.storage.sql import epoch_us as sql_epoch_us
from tracker.storage.sql import json_parsed_once, json_text
from tracker.storage.tables import DataVersion, Offer, ScrapeRun

if TYPE_CHECKING:  # type-only: importing numpy.typing or pandas costs a command-line call tens of ms
    import numpy.typing as npt

COLUMNS = [
    "id",
    "provider",
    "offer_key",
    "gpu_id",
    "gpu_family",
    "gpu_count",
    "gpu_memory_gb",
    "pricing",
    "reserved_term",
    "region",
    "instance_type",
    "available",
    "price_kind",
    "orderable",
    "demo",
    "price_per_hour",
    "price_per_gpu_hour",
    "first_seen",
]
log = logging.getLogger(__name__)
_FLOATS = ("gpu_count", "gpu_memory_gb", "price_per_hour", "price_per_gpu_hour")
_US = timedelta(microseconds=1)


def data_version(session: Session) -> int:
    return session.scalar(select(DataVersion.version).where(DataVersion.id == 1)) or 0


def epoch_us(moment: datetime) -> int:
    """Whole microseconds since the epoch: exact, unlike a float timestamp."""
    return (moment - EPOCH) // _US


def _objects(values: Sequence[object]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _shared_into(values: Sequence[object], seen: dict[object, object]) -> Sequence[object]:
    """`values` with one object per distinct string (`seen` holds them across a column's chunks): the driver
    makes a new string per row, and at 200,000 offers ten such columns (provider, card, region, ...) held
    ~100 MB of copies of a few dozen values. Only all-string chunks (None aside), where equal means the
    same value; a Decimal or a number equal to another may still print differently, so those stay as they came."""
    if not values or not set(map(type, values)) <= {str, type(None)}:
        return values
    return list(map(seen.setdefault, values, values))  # in C: a few ms per column


# Rows read per round trip while loading: the driver's row objects of one chunk are freed before the next,
# so the load's peak is the columns plus a chunk, not every row at once (at 200,000 offers ~500 MiB).
LOAD_CHUNK = 10_000


def _load(session: Session) -> OfferTable:
    # Quality values (verification, hosting, cloud, reliability) come out of the attributes JSON by the
    # same SQL the offer queries filter with (tracker.market.quality), so a ranking and an offer list
    # cannot disagree on which offers are verified.
    # So do an aggregator's `via` and `upstream` (tracker.market.aggregated).
    extracted = quality.columns() | aggregated.columns() | fabric.columns()  # fabric: the requirement's keys
    # A MIG slice's profile ("1g.10gb", set by ingest), so a ranking shows the slice it prices.
    extracted["slice"] = json_text(Offer.attributes, "mig_profile")
    # last_seen only as whole microseconds, computed in SQL: as datetimes, 200,000 of them cost ~0.8 s of the
    # load in the column type's conversion and `epoch_us` in Python.
    extracted["last_seen_us"] = sql_epoch_us(Offer.last_seen)
    selected = [*COLUMNS, *extracted]
    stmt = json_parsed_once(  # the attributes parsed once per offer, not once per member (Postgres)
        [*[getattr(Offer, c) for c in COLUMNS], *extracted.values()],
        table_of(Offer),
        "attributes",
        Offer.delisted_at.is_(None),
        session.get_bind().dialect.name,
    )
    raw: dict[str, list[Any]] = {c: [] for c in selected}
    seen: dict[str, dict[object, object]] = {c: {} for c in selected}
    n = 0
    for chunk in session.execute(stmt.execution_options(yield_per=LOAD_CHUNK)).partitions():
        for name, values in zip(selected, zip(*chunk, strict=True), strict=True):
            raw[name].extend(_shared_into(values, seen[name]))
        n += len(chunk)
    skip = {"last_seen_us", "reliability"}
    columns: dict[str, npt.NDArray[Any]] = {c: _objects(v) for c, v in raw.items() if c not in skip}
    columns["reliability_f"] = np.array([np.nan if v is None else v for v in raw["reliability"]], dtype=np.float64)
    columns["id"] = np.array(raw["id"], dtype=np.int64)
    columns["demo"] = np.array(raw["demo"], dtype=bool)
    columns["orderable"] = np.array(raw["orderable"], dtype=bool)
    refs = reference_providers()
    columns["reference"] = np.fromiter((p in refs for p in raw["provider"]), dtype=bool, count=n)
    # A small integer per provider: freshness windows (which depend on the settings) are looked up per
    # provider, not per row, on every request.
    columns["provider_code"], names = factorize(raw["provider"])
    # Floats for vectorised arithmetic; the exact Decimals stay in the database and in offer rows.
    for col in _FLOATS:
        columns[col + "_f"] = np.array([np.nan if v is None else float(v) for v in raw[col]], dtype=np.float64)
    columns["last_seen_us"] = np.array(raw["last_seen_us"], dtype=np.int64)
    # A small integer per card, so rankings group offers by card without hashing strings per request.
    columns["gpu_code"], _ = factorize(raw["gpu_id"])
    return OfferTable(columns, [str(n) for n in names])


# A table with fewer live offers than this is rebuilt on the request that finds it old: ~10 ms per 1,000
# offers on SQLite, so at most a few tens of ms; a larger one is rebuilt in the background (`background`).
SYNC_ROWS = 5_000
# How long a request finding a rebuild under way waits for it before it is answered from the previous version.
REBUILD_WAIT_S = 0.05

# Something derived from a new table that is worth having before readers see it (the cost terms of every
# offer: ~1 s at 200,000 offers): given a session, the version and the table, the (memo key, value) pairs
# to memoise under that version before the table is swapped in.
Warmer = Callable[[Session, int, OfferTable], Iterable[tuple[object, object]]]


# Bounds on the derived-result memo: a client varying parameters cannot grow memory without limit.
MEMO_MAX_ENTRIES = 4096
MEMO_MAX_BYTES = 128 * 2**20  # every entry counts: its key, its value, and the memo's own bookkeeping
# The memo's own cost per entry: an OrderedDict node and slot, a slot in the sizes dict, the key tuple.
_ENTRY_OVERHEAD = 200
# Shared, process-lived objects a value may point at: never freed with the entry, so not its cost.
_NOT_OWNED = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType)


def deep_size(value: object) -> int:
    """Bytes `value` holds, following containers, instances and numpy arrays (an overestimate where
    objects are shared). Counted only for bytes before, so snapshot rows (lists of dicts) and the small
    answers of cache-defeating requests cost nothing against the bound: 2,000 distinct history requests
    held 1.8 MB in a memo that counted 0.4 MB."""
    seen: set[int] = set()
    stack = [value]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _NOT_OWNED):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj, 64)
        if isinstance(obj, str | bytes | bytearray | int | float | complex | bool | Decimal | date | time | timedelta):
            continue
        if isinstance(obj, np.ndarray):
            if obj.base is not None:  # a view: getsizeof counted the header, not the buffer it keeps alive
                total += obj.nbytes
            if obj.dtype == object:
                # Distinct objects only, found in C: a column read back from disk shares one string per
                # distinct value, and walking 200,000 references to a dozen strings in Python took seconds.
                items = obj.ravel().tolist()
                stack.extend(dict(zip(map(id, items), items, strict=True)).values())
            continue
        if isinstance(obj, memoryview):
            total += obj.nbytes
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset | deque):
            stack.extend(obj)
        else:
            attrs = getattr(obj, "__dict__", None)
            if isinstance(attrs, dict):
                stack.append(attrs)
            for cls in type(obj).__mro__:
                slots = getattr(cls, "__slots__", ())
                for slot in (slots,) if isinstance(slots, str) else slots:
                    if slot not in ("__dict__", "__weakref__"):
                        stack.append(getattr(obj, slot, None))
    return total


class LiveOffers:
    """Process-wide cache of the live frame per database, keyed on the data version.

    `memo` caches anything derived from one data version (snapshots, encoded API answers): an LRU
    bounded by entry count and by the bytes its entries hold (key and value, measured by `deep_size`
    when stored), computed once per key even when many threads ask at the same moment (the others wait
    for the first), and dropped once a newer version is being served.

    With `background`, a table of `sync_rows` or more offers is rebuilt off the request path (see the
    module's docstring); `served` says which version a request will be answered from.
    """

    def __init__(
        self,
        max_entries: int = MEMO_MAX_ENTRIES,
        max_bytes: int = MEMO_MAX_BYTES,
        *,
        background: bool = False,
        warmers: Sequence[Warmer] = (),
        sync_rows: int = SYNC_ROWS,
        wait_s: float = REBUILD_WAIT_S,
        spill_dir: Path | None = None,
        spill_keys: Sequence[object] = (),
        keep_loaded: bool = False,
    ) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.background, self.warmers, self.sync_rows, self.wait_s = background, list(warmers), sync_rows, wait_s
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._frames: dict[str, tuple[int, OfferTable]] = {}
        self._derived: OrderedDict[tuple[str, int, object], object] = OrderedDict()
        self._sizes: dict[tuple[str, int, object], int] = {}
        self._bytes = 0
        self._latest: dict[str, int] = {}
        self._inflight: dict[tuple[str, int, object], tuple[threading.Event, int]] = {}
        self._rebuilds: dict[str, tuple[int, threading.Event]] = {}  # per database: the version being built
        self.rebuild_errors = 0  # background rebuilds that failed (each retried by the next request)
        # Kept on disk between processes (tracker.market.spill): the CLI's. `spill_keys`: the memo entries
        # kept with the table (the offers' cost terms).
        self.spill_dir, self.spill_keys = spill_dir, tuple(spill_keys)
        self._unkept: dict[str, spill.Fingerprint] = {}  # tables loaded from the database, not yet on disk
        # `keep_loaded` (the API): every table of `sync_rows` or more offers loaded from the database is written
        # to `spill_dir` off the request path, so a process starting at that data version (an API restart, a
        # replica, `gpu-tracker cheapest` on the same data directory) reads it back in a fraction of a second
        # instead of rebuilding it (seconds at 200,000 offers); a table read back from disk is not written again.
        self.keep_loaded = keep_loaded

    def frame(self, engine: Engine, session: Session) -> tuple[int, OfferTable]:
        """(version, table) to answer from: the current version's, or with `background` and a large table
        whose rebuild is under way, the previous one's."""
        key = engine.url.render_as_string(hide_password=False)
        version = data_version(session)
        cached = self._frames.get(key)
        if cached and cached[0] >= version:
            return cached
        if cached is not None and self._in_background(cached[1]):
            done = self._rebuild(engine, key, version)
            done.wait(self.wait_s)
            return self._frames[key]
        with self._load_lock:  # one load at a time: concurrent misses after an ingest share it
            cached = self._frames.get(key)
            if cached and cached[0] >= version:
                return cached
            if self.spill_dir is None:
                return version, self._loaded(session, key, version)
            table = self._from_disk(session, key, version)
        if self._worth_keeping(key, table):  # written after the answer's table is in place, not before it
            threading.Thread(target=self._keep_quietly, args=(engine,), name="live-offers-keep", daemon=True).start()
        return version, table

    def _worth_keeping(self, key: str, table: OfferTable) -> bool:
        return self.keep_loaded and key in self._unkept and len(table) >= self.sync_rows

    def _keep_quietly(self, engine: Engine) -> None:
        try:
            self.keep(engine)
        except Exception:  # a table not kept costs the next process a rebuild, never this one an answer
            log.exception("keeping the live offers on disk failed")

    def _loaded(self, session: Session, key: str, version: int) -> OfferTable:
        """The table of `version` read from the database, its warmers run, swapped in."""
        df = _load(session)
        self._warm(session, key, version, df)
        self._swap(key, version, df)
        return df

    def _from_disk(self, session: Session, key: str, version: int) -> OfferTable:
        """The table kept on disk for `version`, else loaded (and `keep` may write it)."""
        assert self.spill_dir is not None
        last_run = select(func.max(ScrapeRun.id)).scalar_subquery()
        row = session.execute(select(DataVersion.changed_at, last_run).where(DataVersion.id == 1)).first()
        stamp = spill.fingerprint(version, *(row if row is not None else (None, None)))
        kept = spill.read(spill.path_for(self.spill_dir, key), key, stamp)
        if kept is None:
            self._unkept[key] = stamp
            return self._loaded(session, key, version)
        df, extras = kept
        self._swap(key, version, df)
        for params, value in extras.items():
            self._store((key, version, params), value)
        self._unkept.pop(key, None)
        return df

    def keep(self, engine: Engine) -> None:
        """Write the table this process loaded from the database to disk, with the memo entries named by
        `spill_keys`, so the next process at the same version reads it back (a no-op if nothing new)."""
        key = engine.url.render_as_string(hide_password=False)
        stamp = self._unkept.pop(key, None)
        cached = self._frames.get(key)
        if self.spill_dir is None or stamp is None or cached is None or cached[0] != stamp[0]:
            return
        with self._lock:
            memo = {k[2]: v for k, v in self._derived.items() if k[:2] == (key, stamp[0])}
        extras = {p: memo[p] for p in self.spill_keys if p in memo}
        if not spill.write(spill.path_for(self.spill_dir, key), key, stamp, cached[1], extras) and self.keep_loaded:
            # A read-only or full data directory: said once (spill.write logged why), not at every rebuild.
            self.keep_loaded = False
            log.warning("not keeping live tables on disk any more in this process; a restart rebuilds them")

    def served(self, engine: Engine, version: int) -> int:
        """The version a request arriving now at data version `version` is answered from, never waiting:
        `version` itself unless a background rebuild to it is under way (started here if need be)."""
        key = engine.url.render_as_string(hide_password=False)
        cached = self._frames.get(key)
        if cached is None or cached[0] >= version or not self._in_background(cached[1]):
            return version
        self._rebuild(engine, key, version)
        return self._frames[key][0]

    def _in_background(self, table: OfferTable) -> bool:
        return self.background and len(table) >= self.sync_rows

    def _rebuild(self, engine: Engine, key: str, version: int) -> threading.Event:
        """The event set when the table of `version` (or a newer one) is in place, starting its build."""
        with self._lock:
            running = self._rebuilds.get(key)
            if running is not None:  # one build at a time; it reads the newest version when it starts, and
                return running[1]  # if that was older, the next request to find the table old starts another
            done = threading.Event()
            self._rebuilds[key] = (version, done)
        threading.Thread(target=self._build, args=(engine, key, done), name="live-offers-rebuild", daemon=True).start()
        return done

    def _build(self, engine: Engine, key: str, done: threading.Event) -> None:
        try:
            with Session(engine) as session, self._load_lock:
                version = data_version(session)  # the newest by now: a build started late need not repeat
                cached = self._frames.get(key)
                table = None
                if not (cached and cached[0] >= version):
                    # Another process (a replica, a restart) may have kept this version already.
                    loaded = self._loaded if self.spill_dir is None else self._from_disk
                    table = loaded(session, key, version)
            if table is not None and self._worth_keeping(key, table):
                self._keep_quietly(engine)  # this thread is already off the request path
        except Exception:  # the previous table keeps serving; the next request that finds it old tries again
            self.rebuild_errors += 1
            log.exception("rebuilding the live offers in the background failed")
        finally:
            with self._lock:
                self._rebuilds.pop(key, None)
            done.set()

    def _warm(self, session: Session, key: str, version: int, table: OfferTable) -> None:
        for warm in self.warmers:
            for params, value in warm(session, version, table):
                self._store((key, version, params), value)

    def _swap(self, key: str, version: int, table: OfferTable) -> None:
        with self._lock:
            self._frames[key] = (version, table)
            # Derived results of older versions can never be asked for again.
            self._latest[key] = max(version, self._latest.get(key, version))
            self._drop_versions(key, keep=version, older_only=True)

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
        # Measured outside the lock: walking a large value must not hold up every other request.
        size = deep_size(key) + deep_size(value) + _ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        with self._lock:
            db, version = key[0], key[1]
            if version < self._latest.get(db, version):
                return  # computed on a table that has since been replaced: nobody asks for it again
            # A newer version's answer means older ones are never asked for again, except, with a background
            # rebuild, the version of the table still being served (`_swap` drops it when replaced).
            served = self._frames.get(db)
            floor = min(version, served[0]) if self.background and served is not None else version
            if floor > self._latest.get(db, floor - 1):
                self._latest[db] = floor
                self._drop_versions(db, keep=floor, older_only=True)
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
        """(entries, bytes) held by the memo: the bytes are those its bound counts (see `deep_size`)."""
        with self._lock:
            return len(self._derived), self._bytes

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()
            self._rebuilds.clear()
            self._derived.clear()
            self._sizes.clear()
            self._latest.clear()
            self._bytes = 0


# The process's own table: the CLI and the worker use it. The API injects one per app (api.deps.Live), and
# tests get a fresh one per test (tests/conftest.py), so nothing has to empty a shared cache.
LIVE = LiveOffers()


def live_table(live: LiveOffers | None) -> LiveOffers:
    """The table a caller injected, else the process's own (read at call time, so it can be replaced)."""
    return LIVE if live is None else live


def fresh_mask(
    table: OfferTable, now: datetime, settings: Settings, max_age: timedelta | None = None
) -> npt.NDArray[np.bool_]:
    """Offers live at `now` by the freshness rule, or seen within `max_age` when the caller gives one."""
    if table.empty:
        return np.zeros(0, dtype=bool)
    if max_age is not None:
        limit = np.full(len(table), max_age // _US, dtype=np.int64)
    else:
        per_provider = [freshness.window(p, settings) // _US for p in table.providers]
        limit = np.array(per_provider, dtype=np.int64)[table["provider_code"]]
    age = epoch_us(now) - table["last_seen_us"]
    return np.asarray(age <= limit, dtype=bool)

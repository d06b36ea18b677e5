"""The live table kept on disk between command-line calls (issue #29 item 5).

Each `gpu-tracker cheapest` is a new process: without this it rebuilds the whole live table (and every
offer's cost terms) from the database, ~5 s and ~600 MiB at 200,000 offers, before ranking in tens of ms.
The first call after an ingest writes what it built to the data directory; every later call at the same data
version reads it back in a fraction of that, with far less memory.

A file is valid for one database and one data version, checked against the version, the instant it was
bumped (`DataVersion.changed_at`) and the newest scrape run, so a database recreated at the same URL, whose
counter starts over, does not match an old file. Object columns are stored as codes into their distinct
values, which also makes the table read back share one string per distinct value instead of one per row.

The format is pickle: its values (Decimals, datetimes, None among strings) have no faithful plain-array
form. Pickle runs code when read, so a file is only read when it is this user's own and nobody else may
write it (mode 0600 in a directory of the user's), and anything wrong with it (truncated, another format, a
failed read) is the same as no file: the table is rebuilt from the database. It is written to a temporary
name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import stat
import tempfile
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tracker.market.table import OfferTable

if TYPE_CHECKING:
    import numpy.typing as npt

log = logging.getLogger(__name__)

# Bumped whenever the layout of the table or of what is stored with it changes (2: with the listing codes,
# tracker.market.rank.LISTING_COLUMN, and what was derived from the table).
FORMAT = 2
Fingerprint = tuple[int, str, int]  # (data version, when it was bumped, the newest scrape run's id)


def fingerprint(version: int, changed_at: datetime | None, last_run: int | None) -> Fingerprint:
    return version, "" if changed_at is None else changed_at.isoformat(), last_run or 0


def _identity(database: str) -> str:
    return hashlib.sha256(database.encode()).hexdigest()  # the URL may carry a password: never stored


def directory(data_dir: Path) -> Path:
    """Where kept tables live in a data directory: the CLI and the API read and write the same files."""
    return data_dir / "cache"


def path_for(directory: Path, database: str) -> Path:
    """One file per database URL."""
    return directory / f"live-{_identity(database)[:20]}.pickle"


def _key(value: object) -> object:
    # Equal is not the same: 1 == 1.0 == True, and Decimal("2.5") == Decimal("2.50") prints differently.
    if isinstance(value, Decimal):
        return Decimal, str(value)
    return type(value), value


def encode(values: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int32], list[object]]:
    """Codes into the distinct values of an object column.

    The objects are told apart by identity first, in C (`np.unique` of their ids): the live table shares one
    object per distinct string (tracker.market.live), so most columns of 200,000 offers name a few dozen
    objects, and only those are compared by value. A Python `_key` per element took 2.1 s for the table's 27
    object columns at 200,000 offers; this takes 0.77 s."""
    items = values.tolist()
    if not items:
        return np.empty(0, dtype=np.int32), []
    ids = np.fromiter(map(id, items), dtype=np.int64, count=len(items))  # unique while `values` holds them
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    index: dict[object, int] = {}
    distinct: list[object] = []
    merged = np.empty(len(first), dtype=np.int32)
    for j, at in enumerate(first.tolist()):  # equal values held as different objects share one code
        v = items[at]
        code = index.setdefault(_key(v), len(distinct))
        if code == len(distinct):
            distinct.append(v)
        merged[j] = code
    return merged[inverse.reshape(-1)], distinct


def decode(codes: npt.NDArray[np.integer[Any]], distinct: list[object]) -> npt.NDArray[np.object_]:
    values = np.empty(len(distinct), dtype=object)
    values[:] = distinct
    return values[codes] if len(codes) else np.empty(0, dtype=object)


class _Pickler(pickle.Pickler):
    """Every object column, in the table or in what is kept with it (the cost terms' provider and pricing),
    written as codes into its distinct values and read back by `decode`."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray) and obj.dtype == object and obj.ndim == 1:
            return decode, encode(obj)
        return NotImplemented


def write(path: Path, database: str, stamp: Fingerprint, table: OfferTable, extras: dict[object, object]) -> bool:
    """Store `table` (and `extras`: memo entries worth keeping with it) for `database` at `stamp`; False when
    the disk would not take it (logged)."""
    payload = {
        "format": FORMAT,
        "database": _identity(database),
        "stamp": stamp,
        "providers": table.providers,
        "columns": table.columns,
        # What was derived from the whole table by then (the ranking's combinations, filter codes): a
        # function of the table, so as valid as it is, and the next call need not derive it again.
        "derived": dict(table._derived),
        "extras": extras,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:  # mkstemp: mode 0600
                _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:  # a read-only or full disk costs the next call a rebuild, nothing more
        log.warning("could not keep the live table on disk at %s: %s", path, exc)
        return False
    return True


def read(path: Path, database: str, stamp: Fingerprint) -> tuple[OfferTable, dict[object, object]] | None:
    """The table stored for `database` at `stamp`, with its extras; None when there is none to trust."""
    try:
        with path.open("rb") as f:
            info = os.fstat(f.fileno())
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            payload = pickle.load(f)  # this user's own file, writable by nobody else (above)
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            return None
        if payload.get("database") != _identity(database) or tuple(payload.get("stamp", ())) != stamp:
            return None
        table = OfferTable(dict(payload["columns"]), list(payload["providers"]), _derived=dict(payload["derived"]))
        return table, dict(payload["extras"])
    except FileNotFoundError:
        return None
    except Exception as exc:  # truncated, corrupt or foreign: rebuilt from the database instead
        log.warning("ignoring the live table kept at %s: %s", path, exc)
        return None

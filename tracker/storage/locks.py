"""The provider lock: at most one process scrapes a provider at a time.

On Postgres it is an advisory lock keyed by a stable hash of the provider name (never Python's
per-process `hash()`). The lock is transaction-level (`pg_try_advisory_xact_lock`) and held by a
dedicated connection for the whole run: it is released by commit/rollback, so returning that
connection to a pool (or a transaction-pooling pgbouncer) can never leak it, and the server drops it
with a dead process's connection. On SQLite (the embedded, single-process default) a process-local
lock stands in.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from tracker.storage.engine import close_or_drop

__all__ = ["lock_key", "named_lock_key", "provider_lock", "provider_locks"]

log = logging.getLogger(__name__)

_local_locks: dict[tuple[str, str], threading.Lock] = {}
_local_locks_guard = threading.Lock()


def lock_key(provider: str) -> int:
    """A stable signed 64-bit advisory-lock key: the same in every process and on every host."""
    return named_lock_key(f"scrape:{provider}")


def named_lock_key(name: str) -> int:
    """The advisory-lock key of any named job (a provider's scrape is `scrape:<provider>`)."""
    digest = hashlib.sha256(f"gpu-price-tracker:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextmanager
def provider_lock(engine: Engine, provider: str) -> Iterator[bool]:
    """Yield True if this process may scrape `provider` now; the lock holds until the block exits."""
    with provider_locks(engine, [provider]) as got:
        yield provider in got


@contextmanager
def provider_locks(engine: Engine, providers: Iterable[str]) -> Iterator[set[str]]:
    """Yield the providers of `providers` this process may scrape now (the others are held elsewhere);
    their locks hold until the block exits. On Postgres one connection holds them all, however many."""
    names = list(dict.fromkeys(providers))
    if not names:
        yield set()
        return
    if engine.dialect.name == "postgresql":
        # A dedicated connection and transaction for the locks alone: the runs' own work commits on
        # other connections, and this transaction's end (commit, rollback, or the connection dying)
        # is what releases the locks.
        conn = engine.connect()
        try:
            conn.begin()
            try_lock = text("SELECT pg_try_advisory_xact_lock(:k)")
            got = {name for name in names if conn.execute(try_lock, {"k": lock_key(name)}).scalar()}
        except BaseException:
            _release(conn)
            raise
        try:
            yield got
        finally:
            _release(conn)
        return
    held: list[threading.Lock] = []
    got = set()
    try:
        for name in names:
            with _local_locks_guard:
                lock = _local_locks.setdefault((str(engine.url), name), threading.Lock())
            if lock.acquire(blocking=False):
                held.append(lock)
                got.add(name)
        yield got
    finally:
        for lock in held:
            lock.release()


def _release(conn: Connection) -> None:
    """End the lock's transaction. A connection that died took the lock with it (the server ends the
    session), so a failure here must not fail the run that already finished."""
    try:
        close_or_drop(conn)  # rolls the transaction back, which releases the lock
    except SQLAlchemyError as exc:
        log.warning("provider lock: connection lost on release (the server drops the lock with it): %s", exc)
        with suppress(SQLAlchemyError):
            conn.invalidate()

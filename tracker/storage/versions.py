"""Reading the data version (bumped by every ingest) as cheaply as each backend allows.

Every cached API answer is keyed on this number, so it is read once per request batch: on
PostgreSQL over an autocommit psycopg connection driven by the event loop itself, elsewhere through
a thread. Driver-specific, so it lives in storage.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError

__all__ = ["VERSION_SQL", "VersionReads", "data_version"]

VERSION_SQL = "SELECT version FROM data_version WHERE id = 1"

# Per app engine, a small autocommit pool without pre-ping for the version read: one round trip per read
# (a pre-ping would double it). A connection found dead is retried once, after SQLAlchemy has invalidated it.
_version_engines: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()
_version_lock = threading.Lock()


def _version_engine(engine: Engine) -> Engine:
    if engine.dialect.name == "sqlite":  # no pre-ping there; the app's own pool is already the cheapest
        return engine
    found = _version_engines.get(engine)
    if found is None:
        with _version_lock:
            found = _version_engines.get(engine)
            if found is None:
                found = create_engine(engine.url, isolation_level="AUTOCOMMIT", pool_size=2, max_overflow=14)
                event.listen(engine, "engine_disposed", lambda _: found.dispose())
                _version_engines[engine] = found
    return found


def _read_version(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql(VERSION_SQL).scalar() or 0)


def data_version(engine: Engine) -> int:
    """The data version with one autocommit read (no session, no BEGIN/COMMIT, no ping)."""
    reader = _version_engine(engine)
    try:
        return _read_version(reader)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        return _read_version(reader)  # the server restarted since this connection was opened


class VersionReads:
    """Coalesced data-version reads for one engine on one event loop (see the module docstring).

    On PostgreSQL (psycopg) the read runs on the event loop over one autocommit connection of its own
    (reads never overlap, so one is enough): no thread hop, whose GIL hand-offs cost milliseconds under
    load. Other databases read through the threadpool (`data_version`)."""

    def __init__(
        self, engine: Engine, loop: asyncio.AbstractEventLoop, run_sync: Callable[..., Awaitable[int]]
    ) -> None:
        # `run_sync(fn, *args)` runs a blocking read off the loop (the web framework's own threadpool).
        self.engine, self.loop, self.run_sync = engine, loop, run_sync
        self._next: asyncio.Future[int] | None = None  # the read that starts when the running one ends
        self._running: asyncio.Task[None] | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._async = engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"

    async def current(self) -> int:
        if self._next is None:
            self._next = self.loop.create_future()
        waiting = self._next
        if self._running is None:
            self._start()
        # Shielded: a client that goes away cancels its own wait, never the read others share.
        return await asyncio.shield(waiting)

    def _start(self) -> None:
        future, self._next = self._next, None
        assert future is not None
        self._running = self.loop.create_task(self._read(future))

    async def _read(self, future: asyncio.Future[int]) -> None:
        try:
            version = await (self._read_async() if self._async else self.run_sync(data_version, self.engine))
        except asyncio.CancelledError:  # the loop is shutting down
            self._running = None
            future.cancel()
            raise
        except Exception as exc:  # every waiter gets the error (a database down is a 503 for each)
            if not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning if every waiter has left
        else:
            if not future.done():
                future.set_result(version)
        self._running = None
        if self._next is not None:  # requests arrived during this read: they need a read of their own
            self._start()

    async def _read_async(self) -> int:
        reused = self._conn is not None
        try:
            if self._conn is None:
                _, params = self.engine.dialect.create_connect_args(self.engine.url)
                params.pop("context", None)  # the dialect's adapters: not needed to read one integer
                self._conn = await psycopg.AsyncConnection.connect(autocommit=True, **params)
            cursor = await self._conn.execute(VERSION_SQL)
            row = await cursor.fetchone()
            return int(row[0] or 0) if row else 0
        except psycopg.Error as exc:
            self.close()
            if reused and isinstance(exc, psycopg.OperationalError):  # the server restarted: connect again
                return await self._read_async()
            raise OperationalError(VERSION_SQL, None, exc) from exc  # a 503, like any database error

    def close(self) -> None:
        """Close the connection now (libpq-level, no await needed, so also from another loop or thread)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pgconn.finish()

    __del__ = close

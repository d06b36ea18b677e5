"""Answers served as memoised, already-encoded JSON, invalidated by every ingest.

A cached endpoint reads the data version — bumped by every ingest inside its transaction, so any
process sees the invalidation (`tracker.market.live`) — with one primary-key SELECT on an autocommit connection
(no ORM session, no BEGIN/COMMIT, no pre-ping), then looks the encoded body up in `LIVE.memo` under
(database, version, endpoint, normalised parameters[, minute]). Only a miss opens a session and computes,
in the threadpool; a hit runs on the event loop without a thread hop, neither validating nor encoding:
FastAPI gets a ready `Response`. Bodies are encoded exactly as FastAPI's `jsonable_encoder` +
`JSONResponse` would (Decimal as a JSON number, datetimes in ISO 8601, compact separators).

Version reads are coalesced: a request waits for a read that *starts after it arrived* — so it sees every
ingest committed before it, exactly as a read of its own would — and shares that read with every request
that arrived before it started. Under load that is one round trip per batch of requests, not per request.

Answers that depend on "now" (freshness, ages, ranges ending now) carry the minute in their key, as the
market snapshot always has; a request's own `as_of` is spliced into the cached bytes, so it stays exact.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Callable, Hashable
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import psycopg
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import decimal_encoder, jsonable_encoder
from fastapi.responses import Response
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError

from tracker.market.live import LIVE

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

    def __init__(self, engine: Engine, loop: asyncio.AbstractEventLoop) -> None:
        self.engine, self.loop = engine, loop
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
            version = await (self._read_async() if self._async else run_in_threadpool(data_version, self.engine))
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


# Every reader, so disposing of an engine closes its readers' connections too.
_open_reads: weakref.WeakSet[VersionReads] = weakref.WeakSet()


def _close_reads(engine: Engine) -> None:
    for reads in list(_open_reads):
        if reads.engine is engine:
            reads.close()


def version_reads(request: Request) -> VersionReads:
    state, loop = request.app.state, asyncio.get_running_loop()
    reads: VersionReads | None = getattr(state, "version_reads", None)
    if reads is None or reads.loop is not loop or reads.engine is not state.engine:
        if reads is not None:
            reads.close()
        reads = state.version_reads = VersionReads(state.engine, loop)
        _open_reads.add(reads)
        if not event.contains(state.engine, "engine_disposed", _close_reads):
            event.listen(state.engine, "engine_disposed", _close_reads)
    return reads


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return decimal_encoder(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return jsonable_encoder(value)


def encode(content: Any) -> bytes:
    """The bytes `JSONResponse(jsonable_encoder(content))` would send."""
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"), default=_default
    ).encode("utf-8")


def minute(now: datetime) -> datetime:
    """The key part of answers that depend on the time: they are recomputed at most once a minute."""
    return now.replace(second=0, microsecond=0)


async def cached_body(request: Request, key: tuple[Hashable, ...], compute: Callable[[], Any]) -> bytes:
    """Encoded JSON (or the bytes `compute` returns) for `key` at the current data version.

    `compute` runs in the threadpool, once per key however many requests miss together; its errors
    propagate and are never cached."""
    engine = request.app.state.engine
    version = await version_reads(request).current()
    params = ("api", *key)
    body: bytes | None = LIVE.peek(engine, version, params)
    if body is None:

        def encoded() -> bytes:
            content = compute()
            return content if isinstance(content, bytes) else encode(content)

        body = await run_in_threadpool(LIVE.memo, engine, version, params, encoded)
    return body


def with_field(body: bytes, name: str, value: Any, *, first: bool) -> bytes:
    """Add one field to an encoded JSON object, as the first or the last key."""
    field = encode(name) + b":" + encode(value)
    if body == b"{}":
        return b"{" + field + b"}"
    return b"{" + field + b"," + body[1:] if first else body[:-1] + b"," + field + b"}"


def json_response(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")


__all__ = ["VersionReads", "cached_body", "data_version", "encode", "json_response", "minute", "with_field"]

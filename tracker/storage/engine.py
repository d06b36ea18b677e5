"""Engine and session factory. One place decides how we talk to SQLite or Postgres, and how long we wait.

Every wait on the database has a bound (Settings `db_*`, see tracker.config), so an unreachable
database makes a request fail (the API answers 503) instead of hanging it:

* connect: libpq `connect_timeout`, covering the whole handshake (TCP, TLS, startup, auth);
* pool checkout: `pool_timeout`, when every pooled connection is in use;
* a pooled connection is pinged before use with a deadline of its own (`db_ping_timeout_s`).
  SQLAlchemy's `pool_pre_ping` has none: on a silently partitioned connection it waits for TCP to
  give up, which takes minutes (or forever, when a proxy in between keeps acknowledging);
* statements: Postgres `statement_timeout`, sent as a startup option; SQLite's busy `timeout`;
* silent partitions of established connections: TCP keepalives plus `tcp_user_timeout`, so a peer
  that stops acknowledging is declared dead by the kernel rather than waited on forever.

On Postgres the libpq parameters go into the URL's query (a key already there wins), not into
`connect_args`: everything that derives a connection from `engine.url` (the API's version-read pool
and its async psycopg connection in api/cached.py, Alembic) then inherits them.
"""

from __future__ import annotations

import select
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from tracker.config import Settings, get_settings

LIBPQ_DRIVERS = frozenset({"psycopg", "psycopg2"})
SQLITE_NO_LIMIT_S = 86400.0  # sqlite3 has no "wait forever"; a day stands in for db_statement_timeout_s = 0
_FRESH = "tracker_fresh"  # pool-record flag: connected for this checkout, so no ping needed
# Engines whose connections can be pinged with a deadline, and that deadline (see close_or_drop).
_ping_timeouts: weakref.WeakKeyDictionary[Engine, float] = weakref.WeakKeyDictionary()


def make_engine(url: str | URL, settings: Settings | None = None) -> Engine:
    """An engine whose every wait is bounded by `settings` (default: the environment's)."""
    s = settings or get_settings()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, s)
    pool = _pool_args(s)
    if parsed.get_backend_name() != "postgresql" or parsed.get_driver_name() not in LIBPQ_DRIVERS:
        return create_engine(parsed, pool_pre_ping=True, **pool)
    parsed = with_libpq_timeouts(parsed, s)
    if parsed.get_driver_name() != "psycopg":  # psycopg2: no access to the raw connection's socket
        return create_engine(parsed, pool_pre_ping=True, **pool)
    engine = create_engine(parsed, **pool)
    _install_bounded_ping(engine, s.db_ping_timeout_s)
    return engine


def _pool_args(s: Settings) -> dict[str, Any]:
    return {"pool_size": s.db_pool_size, "max_overflow": s.db_max_overflow, "pool_timeout": s.db_pool_timeout_s}


def _sqlite_engine(url: URL, s: Settings) -> Engine:
    kwargs: dict[str, Any] = {}
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        kwargs = _pool_args(s)  # file databases get a QueuePool; :memory: a single shared connection
    busy = s.db_statement_timeout_s if s.db_statement_timeout_s > 0 else SQLITE_NO_LIMIT_S
    engine = create_engine(url, connect_args={"timeout": busy, "check_same_thread": False}, **kwargs)

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        # WAL lets the API read while the worker ingests; foreign keys are off by default in SQLite.
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    return engine


def with_libpq_timeouts(url: URL, s: Settings) -> URL:
    """`url` with the connect, keepalive and statement timeouts as libpq parameters (its own win)."""
    query: dict[str, str | tuple[str, ...]] = dict(url.query)
    idle = max(1, s.db_keepalive_idle_s)
    for key, value in {
        "connect_timeout": str(s.db_connect_timeout_s),
        "keepalives": "1",
        "keepalives_idle": str(idle),
        "keepalives_interval": str(max(1, idle // 2)),
        "keepalives_count": "3",
        "tcp_user_timeout": str(max(0, s.db_tcp_user_timeout_s) * 1000),  # milliseconds
    }.items():
        query.setdefault(key, value)
    if s.db_statement_timeout_s > 0:
        current = query.get("options", "")
        options = " ".join(current) if isinstance(current, tuple) else current
        if "statement_timeout" not in options:
            ms = max(1, round(s.db_statement_timeout_s * 1000))
            query["options"] = f"{options} -c statement_timeout={ms}".strip()
    return url.set(query=query)


def close_or_drop(conn: Connection) -> None:
    """Close a connection held across a long task (e.g. a lock's), without waiting on a dead peer.

    Closing rolls back, a round trip with no deadline of its own: on a connection partitioned while
    it was held, that waits until TCP gives up. A connection that fails a bounded ping is dropped
    instead; the server then ends its session, and with it the transaction and its locks.
    """
    timeout = _ping_timeouts.get(conn.engine)
    if timeout is not None and not conn.invalidated:
        try:
            ping(conn.connection.driver_connection, timeout)
        except Exception as exc:
            conn.invalidate(exc)
    conn.close()


def _install_bounded_ping(engine: Engine, timeout_s: float) -> None:
    _ping_timeouts[engine] = timeout_s

    @event.listens_for(engine, "connect")
    def _mark_fresh(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[_FRESH] = True

    @event.listens_for(engine, "checkout")
    def _ping_on_checkout(dbapi_conn: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        if record.info.pop(_FRESH, False):
            return  # it just completed a handshake within connect_timeout
        try:
            ping(dbapi_conn, timeout_s)
        except Exception as exc:
            # As pool_pre_ping does: a dead connection means the others are suspect too, so the
            # whole pool is refreshed and this checkout reconnects (bounded by connect_timeout).
            raise InvalidatePoolError(f"pre-ping failed: {exc}") from exc


def ping(dbapi_conn: Any, timeout_s: float) -> None:
    """One empty query on a psycopg connection, answered within `timeout_s` or TimeoutError.

    Driven through libpq's non-blocking calls so the wait has a deadline; psycopg's own execute
    waits for the socket without one. An empty query leaves the connection's state as it was.
    """
    from psycopg import OperationalError, pq

    pgconn = dbapi_conn.pgconn
    deadline = time.monotonic() + timeout_s
    pgconn.send_query(b"")
    while pgconn.flush():  # 1 while libpq still has bytes to send
        _wait(pgconn.socket, select.POLLOUT, deadline)
    while True:
        pgconn.consume_input()  # raises OperationalError when the server hung up
        while not pgconn.is_busy():
            result = pgconn.get_result()
            if result is None:
                return
            if result.status == pq.ExecStatus.FATAL_ERROR:
                raise OperationalError((result.error_message or b"").decode(errors="replace").strip())
        _wait(pgconn.socket, select.POLLIN, deadline)


def _wait(fd: int, events: int, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    poller = select.poll()
    poller.register(fd, events)
    if remaining <= 0 or not poller.poll(remaining * 1000):
        raise TimeoutError("no answer from the database within the ping timeout")


def probe(engine: Engine) -> None:
    """One `SELECT 1` on a connection of its own, outside the engine's pool: whether the database answers,
    however busy the pool is with work (a saturated pool is load, not an outage a health check should
    report). Bounded by the URL's connect and statement timeouts; raises the driver's error."""
    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    dbapi_conn = engine.dialect.connect(*cargs, **cparams)
    try:
        cursor = dbapi_conn.cursor()
        cursor.execute("SELECT 1")
        cursor.fetchall()
        cursor.close()
    finally:
        dbapi_conn.close()


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    return make_engine(url)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error."""
    with session_factory(engine)() as session, session.begin():
        yield session

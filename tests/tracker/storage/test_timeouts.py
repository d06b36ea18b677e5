"""Every wait on the database is bounded: a partitioned Postgres, a saturated pool, a slow statement or
a SQLite write lock make a call fail within the configured time (and the API answer 503), never hang.

The partition is real TCP: a loopback proxy in front of Postgres stops forwarding without closing
anything (tests/tracker/storage/blackhole.py), so only the client's own timeouts can end the wait.
Each call under test runs in a thread joined with a deadline, so a regression fails the test rather
than hanging the suite.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tests.factories.network import BlackholeProxy
from tracker.config import Settings
from tracker.storage.engine import make_engine

MARGIN_S = 2.5  # scheduling slack on a shared two-core machine; the bounds themselves are seconds


def timed(fn: Callable[[], Any], limit_s: float) -> tuple[float, BaseException | None]:
    """Run fn in a thread; (seconds it took, what it raised). Fails if it is still running at limit_s."""
    outcome: dict[str, Any] = {}

    def go() -> None:
        start = time.monotonic()
        try:
            fn()
        except BaseException as exc:
            outcome["error"] = exc
        outcome["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert "elapsed" in outcome, f"still waiting on the database after {limit_s:.1f}s"
    return outcome["elapsed"], outcome.get("error")


def fast_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "db_connect_timeout_s": 2,  # psycopg's minimum
        "db_ping_timeout_s": 0.5,
        "db_pool_timeout_s": 1.0,
        "db_statement_timeout_s": 1.0,
    }
    return Settings(data_dir=tmp_path, database_url=url, **(values | overrides))


def select_one(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


@pytest.fixture
def proxied(pg_url: str, pg_engine: Engine) -> Iterator[tuple[BlackholeProxy, str]]:
    """A black-hole proxy in front of the (migrated) test database, and the URL that goes through it.

    Built from the bare URL: `pg_engine.url` carries the default timeouts, which would win."""
    with BlackholeProxy() as proxy:
        yield proxy, make_url(pg_url).set(port=proxy.port).render_as_string(hide_password=False)


# ------------------------------------------------------------------------------- Postgres partition


@pytest.mark.postgres
def test_a_partition_fails_a_pooled_connection_within_ping_plus_connect(tmp_path, proxied):
    proxy, url = proxied
    s = fast_settings(tmp_path, url)
    engine = make_engine(url, s)
    try:
        select_one(engine)  # a pooled connection, established before the partition
        proxy.partition()
        bound = s.db_ping_timeout_s + s.db_connect_timeout_s
        elapsed, error = timed(lambda: select_one(engine), bound + MARGIN_S)
        assert isinstance(error, OperationalError), error
        assert elapsed < bound + MARGIN_S
        # The failed ping refreshed the whole pool: the next caller waits for one connect, no more.
        elapsed, error = timed(lambda: select_one(engine), s.db_connect_timeout_s + MARGIN_S)
        assert isinstance(error, OperationalError) and elapsed < s.db_connect_timeout_s + MARGIN_S
        proxy.heal()
        select_one(engine)  # and it recovers by itself
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_partition_fails_a_new_connection_within_the_connect_timeout(tmp_path, proxied):
    proxy, url = proxied
    s = fast_settings(tmp_path, url)
    engine = make_engine(url, s)
    proxy.partition()
    try:
        elapsed, error = timed(lambda: select_one(engine), s.db_connect_timeout_s + MARGIN_S)
        assert isinstance(error, OperationalError), error
        assert "timeout" in str(error).lower() and elapsed >= s.db_connect_timeout_s * 0.9
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_timeouts_travel_in_the_url_so_derived_connections_get_them(tmp_path, pg_url):
    engine = make_engine(pg_url, fast_settings(tmp_path, pg_url, db_statement_timeout_s=1.5))
    try:
        query = engine.url.query
        assert query["connect_timeout"] == "2" and query["keepalives"] == "1"
        assert query["tcp_user_timeout"] == "15000" and "statement_timeout=1500" in str(query["options"])
        assert engine.pool.timeout() == 1.0  # type: ignore[attr-defined]
        with engine.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "1500ms"
    finally:
        engine.dispose()
    # A value the URL already carries is the operator's choice, and wins.
    own = make_engine(f"{pg_url}?connect_timeout=9&options=-c%20statement_timeout%3D0", fast_settings(tmp_path, pg_url))
    assert own.url.query["connect_timeout"] == "9" and own.url.query["options"] == "-c statement_timeout=0"
    own.dispose()


@pytest.mark.postgres
def test_a_slow_statement_is_cancelled_at_the_statement_timeout(tmp_path, pg_url):
    s = fast_settings(tmp_path, pg_url, db_statement_timeout_s=0.5)
    engine = make_engine(pg_url, s)

    def slow() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_sleep(10)"))

    try:
        elapsed, error = timed(slow, s.db_statement_timeout_s + MARGIN_S)
        assert isinstance(error, OperationalError) and "statement timeout" in str(error), error
        assert elapsed >= s.db_statement_timeout_s * 0.9  # cancelled by the server at the timeout
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_api_answers_503_within_the_bound_when_the_database_is_partitioned(tmp_path, proxied):
    from fastapi.testclient import TestClient

    from api.app import create_app

    proxy, url = proxied
    s = fast_settings(tmp_path, url)
    engine = make_engine(url, s)
    try:
        client = TestClient(create_app(s, engine), raise_server_exceptions=False)
        assert client.get("/healthz").status_code == 200
        assert "gpu_tracker_database_up 1.0" in client.get("/metrics").text
        proxy.partition()
        bound = s.db_ping_timeout_s + s.db_connect_timeout_s + MARGIN_S
        answers: dict[str, Any] = {}

        def get(path: str) -> Callable[[], None]:
            return lambda: answers.__setitem__(path, client.get(path))

        timed(get("/healthz"), bound)
        assert answers["/healthz"].status_code == 503
        assert answers["/healthz"].json() == {"detail": "database unavailable"}
        timed(get("/metrics"), bound)  # metrics still answer, and say the database is down
        assert answers["/metrics"].status_code == 200
        assert "gpu_tracker_database_up 0.0" in answers["/metrics"].text
    finally:
        proxy.heal()
        engine.dispose()


# ------------------------------------------------------------------------------- both backends


def test_a_saturated_pool_fails_within_the_pool_timeout(tmp_path, engine):
    url = engine.url.render_as_string(hide_password=False)
    # A small pool: the shared Postgres has few connections to spare for a test that holds them all.
    s = fast_settings(tmp_path, url, db_pool_timeout_s=0.5, db_pool_size=2, db_max_overflow=1)
    bounded = make_engine(url, s)
    try:
        with ExitStack() as held:
            for _ in range(3):
                held.enter_context(bounded.connect())
            elapsed, error = timed(lambda: select_one(bounded), s.db_pool_timeout_s + MARGIN_S)
            assert isinstance(error, PoolTimeout), error
            assert elapsed >= s.db_pool_timeout_s * 0.9
    finally:
        bounded.dispose()


def test_a_sqlite_write_lock_fails_a_writer_within_the_statement_timeout(tmp_path):
    path = tmp_path / "busy.db"
    s = fast_settings(tmp_path, f"sqlite:///{path}", db_statement_timeout_s=0.5)
    engine = make_engine(f"sqlite:///{path}", s)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction

    def write() -> None:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))

    try:
        elapsed, error = timed(write, s.db_statement_timeout_s + MARGIN_S)
        assert isinstance(error, OperationalError) and "locked" in str(error), error
        assert elapsed >= s.db_statement_timeout_s * 0.9  # it did wait for the lock, that long
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()
    write_engine = make_engine(f"sqlite:///{path}", s)
    with write_engine.begin() as conn:  # and without the lock, the same write goes through
        conn.execute(text("INSERT INTO t VALUES (2)"))
    write_engine.dispose()

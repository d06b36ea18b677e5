"""Test fixtures: every storage test runs on SQLite and on a real, fresh PostgreSQL database.

A fresh Postgres database is created per test run (and dropped after); tests are isolated by
emptying every table before each test, because the code under test commits its own transactions.
In CI (CI=true) a missing Postgres is an error, never a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, insert, text

from tests.factories.clock import FakeClock
from tracker.config import Settings
from tracker.market import live as live_module
from tracker.market.live import LiveOffers
from tracker.storage import metadata
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine
from tracker.storage.tables import DataVersion

PG_ADMIN_URL = os.environ.get("TRACKER_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# The suite shares its Postgres with other clients (max_connections 100 by default): every engine the tests
# build from settings (the fixtures', the CLI's, the app's) gets a small pool unless a test says otherwise,
# and the CLI's per-invocation engines are disposed after each test (`cli`). README "Tests" gives the peak.
os.environ.setdefault("TRACKER_DB_POOL_SIZE", "2")
os.environ.setdefault("TRACKER_DB_MAX_OVERFLOW", "6")
# Headless Chromium (`browser`) and the seeded dashboard server (`server`) for every browser test.
pytest_plugins = ("tests.factories.browser",)


def _postgres_available() -> str | None:
    try:
        admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
        admin.dispose()
        return None
    except Exception as exc:  # pragma: no cover - depends on the machine
        return str(exc)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    problem = _postgres_available()
    if problem:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI but unreachable: {problem}")
        pytest.skip(f"PostgreSQL unreachable: {problem}")
    name = f"tracker_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path = tmp_path_factory.mktemp("db") / "tracker.db"
    engine = make_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


def _empty(engine: Engine) -> None:
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(f'"{t.name}"' for t in metadata().sorted_tables)
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        else:
            for table in reversed(metadata().sorted_tables):
                conn.execute(table.delete())
        # The migration seeds the cache-version row; emptying must leave the schema as migrated.
        conn.execute(insert(DataVersion).values(id=1, version=0))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    """A migrated, empty database on each backend."""
    eng: Engine = request.getfixturevalue(f"{'pg' if request.param == 'postgres' else 'sqlite'}_engine")
    _empty(eng)
    return eng


@pytest.fixture
def settings(tmp_path: Path, engine: Engine) -> Settings:
    return Settings(data_dir=tmp_path, database_url=engine.url.render_as_string(hide_password=False))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def live(monkeypatch: pytest.MonkeyPatch) -> LiveOffers:
    """A fresh live-offer table for each test: the process's own (what the CLI and direct calls use) is
    replaced for the test, and an app built with `create_app(..., live=live)` shares it. Every test
    empties the database, so the data version starts over and a shared table would answer from an
    earlier test's offers."""
    fresh = LiveOffers()
    monkeypatch.setattr(live_module, "LIVE", fresh)
    return fresh


@pytest.fixture
def cli(engine, tmp_path, monkeypatch):
    """Invoke the `gpu-tracker` CLI against the test database (both backends), in-process."""
    from typer.testing import CliRunner

    import tracker.cli  # noqa: F401  (registers every command)
    import tracker.cli.context as cli_context
    from tracker.cli.root import app
    from tracker.config import get_settings

    monkeypatch.setenv("TRACKER_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    url = engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    made: list[Engine] = []

    def tracked_engine(*args: object, **kwargs: object) -> Engine:
        made.append(make_engine(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(cli_context, "make_engine", tracked_engine)

    def invoke(*args: str):
        return runner.invoke(app, ["--database-url", url, *args])

    yield invoke
    for eng in made:  # each invocation's engine: its pooled connections closed now, not at some GC
        eng.dispose()
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def _close_version_reads() -> Iterator[None]:
    """Each app's version reader holds one connection of its own until it is collected; tests build many
    apps (often without running their lifespan), so the readers are closed after every test."""
    yield
    from api.cached import _open_reads

    for reads in list(_open_reads):
        reads.close()


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A private cache directory for the session. Nothing of ours writes one any more (the estimate's fit is
    stored as data: tests/tracker/estimate/test_stored_fit.py), but subprocess tests still pass it on
    (tests/tracker/cli/test_app.py): remove both together."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous

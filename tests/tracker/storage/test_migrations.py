"""Migrations upgrade and downgrade on both backends, and the models have not drifted from them."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.conftest import PG_ADMIN_URL
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

TABLES = {
    "scrape_runs",
    "offers",
    "offer_prices",
    "offer_availability",
    "unknown_gpu_names",
    "data_version",
    "alert_rules",
    "alert_channels",
    "alert_events",
    "alert_notifications",
    "alert_delivery_attempts",
    "fx_rates",
    "external_aggregates",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def blank_engine(request, tmp_path):
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
        yield engine
        engine.dispose()
        return
    request.getfixturevalue("pg_url")  # skips or fails (CI) when Postgres is unreachable
    name = f"tracker_mig_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
    yield engine
    engine.dispose()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_upgrade_check_downgrade_upgrade(blank_engine):
    migrate.upgrade(blank_engine)
    assert set(inspect(blank_engine).get_table_names()) >= TABLES
    migrate.check(blank_engine)  # raises on drift
    migrate.downgrade(blank_engine, "base")
    assert not (TABLES & set(inspect(blank_engine).get_table_names()))
    assert migrate.current(blank_engine) is None
    migrate.upgrade(blank_engine)
    assert migrate.current(blank_engine) is not None


def test_embedded_database_behind_head_is_upgraded_by_the_cli(tmp_path):
    """A SQLite file left at an older revision catches up the next time any command opens it."""
    from typer.testing import CliRunner

    import tracker.cli  # noqa: F401
    from tracker.cli.root import app

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine, "0001")
    result = CliRunner().invoke(app, ["--database-url", url, "providers", "--json"])
    assert result.exit_code == 0, result.output
    assert migrate.current(engine) == migrate.head()


def test_the_fast_head_is_alembics_head():
    """Every command checks the schema by file name (no Alembic import): the convention must hold."""
    from importlib import resources

    assert migrate.shipped_head() == migrate.head()
    for f in (resources.files("migrations") / "versions").iterdir():
        if f.name.endswith(".py") and f.name[:4].isdigit():
            assert f'revision: str = "{f.name[:4]}"' in f.read_text(), f"{f.name}: its revision must be its prefix"


def test_stamped_matches_alembic(blank_engine):
    assert migrate.stamped(blank_engine) is None
    migrate.upgrade(blank_engine, "0001")
    assert migrate.stamped(blank_engine) == migrate.current(blank_engine) == "0001"

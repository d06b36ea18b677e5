"""A second empty database on the same backend as `engine`: the target of an import."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import PG_ADMIN_URL
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine


@pytest.fixture
def other_engine(engine, tmp_path):
    if engine.dialect.name == "sqlite":
        eng = make_engine(f"sqlite:///{tmp_path / 'target.db'}")
        migrate.upgrade(eng)
        yield eng
        eng.dispose()
        return
    name = f"tracker_import_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    eng = make_engine(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
    migrate.upgrade(eng)
    yield eng
    eng.dispose()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()

"""Run Alembic migrations programmatically (used by `gpu-tracker db …`, every CLI command's schema
check, and the tests).

Alembic is imported only to migrate: checking that a database is at head — which every CLI command
does — reads the `alembic_version` row and the file names of `migrations/versions/`, whose
`NNNN_` prefix is the revision (a convention `tests/tracker/storage/test_migrations.py` enforces).
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

if TYPE_CHECKING:
    from alembic.config import Config


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("migrations")))
    # Alembic's ini-style interpolation treats % specially (URL-encoded passwords).
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def _no_statement_timeout(connection: Connection) -> None:
    """Migrations may rewrite whole tables: the statement timeout that bounds API reads must not cut them."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SET LOCAL statement_timeout = 0"))


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as connection:
        _no_statement_timeout(connection)
        cfg = alembic_config(engine.url.render_as_string(hide_password=False))
        cfg.attributes["connection"] = connection
        from alembic import command

        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    with engine.begin() as connection:
        _no_statement_timeout(connection)
        cfg = alembic_config(engine.url.render_as_string(hide_password=False))
        cfg.attributes["connection"] = connection
        from alembic import command

        command.downgrade(cfg, revision)


def check(engine: Engine) -> None:
    """Raise if the models have drifted from the migrations (alembic check)."""
    with engine.begin() as connection:
        cfg = alembic_config(engine.url.render_as_string(hide_password=False))
        cfg.attributes["connection"] = connection
        from alembic import command

        command.check(cfg)


def head() -> str | None:
    """The newest revision the code ships."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def shipped_head() -> str | None:
    """The newest revision the code ships, from the migration files' names (no Alembic import)."""
    versions = resources.files("migrations") / "versions"
    names = [f.name[:4] for f in versions.iterdir() if f.name[:4].isdigit() and f.name.endswith(".py")]
    return max(names) if names else None


def stamped(engine: Engine) -> str | None:
    """The revision recorded in the database (None for an empty database), with one plain query."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()

"""Settings and database access for CLI commands."""

from __future__ import annotations

from dataclasses import dataclass

import typer
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from tracker.cli.output import fail
from tracker.config import Settings, get_settings
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine


@dataclass
class Runtime:
    settings: Settings
    engine: Engine


def runtime(ctx: typer.Context, *, ensure_schema: bool = True) -> Runtime:
    settings = get_settings()
    url = (ctx.find_root().obj or {}).get("database_url") or settings.resolved_database_url()
    settings = settings.model_copy(update={"database_url": url})
    try:
        engine = make_engine(url)
        if ensure_schema:
            _ensure_schema(engine)
    except OperationalError as exc:
        fail(f"cannot reach the database {engine_label(url)}: {exc.orig}")
    except SQLAlchemyError as exc:
        fail(f"database error on {engine_label(url)}: {exc}")
    return Runtime(settings, engine)


def _ensure_schema(engine: Engine) -> None:
    """The embedded SQLite default migrates itself; a shared Postgres is migrated on purpose."""
    current, head = migrate.stamped(engine), migrate.shipped_head()
    if current == head:
        return
    if engine.dialect.name == "sqlite":
        migrate.upgrade(engine)
        return
    state = "has no schema yet" if current is None else f"is at revision {current}, not {head}"
    fail(f"the database {state}: run `gpu-tracker db upgrade` first")


def engine_label(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"

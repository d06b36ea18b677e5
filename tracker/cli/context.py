"""Settings and database access for CLI commands."""

from __future__ import annotations

from dataclasses import dataclass

import typer
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from tracker.cli.output import err_console, fail
from tracker.config import Settings, get_settings
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine


@dataclass
class Runtime:
    settings: Settings
    engine: Engine


def runtime(ctx: typer.Context, *, ensure_schema: bool = True) -> Runtime:
    settings = get_settings()
    given = (ctx.find_root().obj or {}).get("database_url")
    url = given or settings.resolved_database_url()
    settings = settings.model_copy(update={"database_url": url})
    source = "--database-url" if given else "TRACKER_DATABASE_URL"
    try:
        # Parsed first: a bad port is a bare ValueError from inside SQLAlchemy, which printed a traceback.
        make_url(url)
    except (ArgumentError, ValueError) as exc:
        fail(f"{source} is not a valid database URL ({engine_label(url)}): {exc}")
    try:
        engine = make_engine(url)
        if ensure_schema:
            _ensure_schema(engine)
    except OperationalError as exc:
        fail(f"cannot reach the database {engine_label(url)}: {exc.orig}")
    except SQLAlchemyError as exc:
        fail(f"database error on {engine_label(url)}: {exc}")
    except ImportError as exc:  # a dialect whose driver is not installed (mysql://, postgresql+psycopg2://)
        fail(f"{source} names a database driver that is not installed ({engine_label(url)}): {exc}")
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
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"


def check_providers(names: list[str] | None, flag: str = "--provider") -> None:
    """A provider filter naming no provider is a mistake, not an empty answer: one line with the near names."""
    from providers.registry import UnknownProvider, all_providers

    known = list(all_providers())
    for name in names or []:
        if name not in known:
            fail(f"{flag}: {UnknownProvider(name, known)}")


NO_PRICES = "no prices yet: run `gpu-tracker scrape` (or `make up DEMO=1`)"


def require_prices(session: Session, *, json_out: bool = False) -> None:
    """An empty answer from an empty database says why, and what to run (exit 1), not "0 offers". With --json
    the answer stays the empty list a script expects (exit 0), and the reason goes to stderr."""
    from sqlalchemy import select

    from tracker.storage.tables import Offer

    if session.scalar(select(Offer.id).limit(1)) is not None:
        return
    if json_out:
        err_console.print(f"note: {NO_PRICES}", markup=False, highlight=False)
        return
    fail(NO_PRICES, code=1)


def kept_live(settings: Settings) -> None:
    """Keep the process's live table on disk between calls (tracker.market.spill): the first call after an
    ingest loads it from the database (seconds at 200,000 offers) and writes it; later ones read it back.
    The caller ends with `LIVE.keep(engine)` once it has what is worth keeping (the offers' cost terms).
    The listing codes a table's rows are folded by are built with the table, so they are kept with it."""
    from tracker.market import live, spill
    from tracker.market.rank import warm_listings
    from tracker.market.service import KEPT_WITH_TABLE

    live.LIVE.spill_dir = spill.directory(settings.data_dir)
    live.LIVE.spill_keys = KEPT_WITH_TABLE
    if warm_listings not in live.LIVE.warmers:
        live.LIVE.warmers = [*live.LIVE.warmers, warm_listings]

"""Alembic environment: one migration history for SQLite and Postgres."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Enum, String, Text, engine_from_config, pool

from tracker.config import get_settings
from tracker.storage import metadata
from tracker.storage.partitions import is_partition_name

config = context.config
target_metadata = metadata()


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or get_settings().resolved_database_url()


def _compare_type(ctx, inspected_column, metadata_column, inspected_type, metadata_type):  # type: ignore[no-untyped-def]
    """Types compared as Alembic does, except a string's length on SQLite: SQLite never enforces it, and
    changing it would rebuild the table (migration 0017 widens alert_rules.metric on Postgres only)."""
    if (
        ctx.dialect.name == "sqlite"
        and isinstance(inspected_type, String)
        and isinstance(metadata_type, String)
        and not isinstance(inspected_type, Text | Enum)
        and not isinstance(metadata_type, Text | Enum)
        and inspected_type.length is not None
        and metadata_type.length is not None
    ):
        return False
    return None  # Alembic's own comparison


def _include_name(name, type_, parent_names) -> bool:  # type: ignore[no-untyped-def]
    """Everything but the monthly partitions of the history tables (Postgres; tracker.storage.partitions):
    the models declare the partitioned parent, whose partitions are made by migration 0018 and at run time."""
    return not (type_ == "table" and name is not None and is_partition_name(name))


def _configure(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=_compare_type,
        include_name=_include_name,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    connectable = engine_from_config({"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with connectable.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

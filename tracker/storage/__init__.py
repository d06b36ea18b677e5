"""Storage: the engine and sessions, every table, bulk writes, migrations, dialect-specific SQL.

`metadata()` holds every table: the table modules are listed there, once, so migrations and
`db check` see the whole schema without relying on some other import having happened first.
Nothing is imported with the package itself, so a command that reads offers does not load the
alert tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import MetaData

__all__ = ["metadata"]


def metadata() -> MetaData:
    """Every table of the schema (what Alembic compares the database with)."""
    from tracker.storage import alert_tables, tables

    del alert_tables  # imported for its tables, which register on the shared Base
    return tables.Base.metadata

"""Storage: the engine and sessions, every table, bulk writes, migrations, dialect-specific SQL.

`metadata` holds every table: the table modules are listed here, once, so migrations and `db check`
see the whole schema without relying on some other import having happened first.
"""

from __future__ import annotations

from tracker.storage import alert_tables, tables

metadata = tables.Base.metadata

__all__ = ["alert_tables", "metadata", "tables"]

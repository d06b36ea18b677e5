"""Monthly partitions of the history tables on Postgres (`offer_prices`, `offer_availability`).

Both tables are partitioned by RANGE on `valid_from`, one partition a month (`offer_prices_y2026m12`),
plus a DEFAULT partition that takes a row whose month nobody created yet, so an insert never fails.
A query for a window ending at `t` then never reads the months after `t`, and each month's indexes stay
the size of a month. SQLite keeps plain tables: it has no partitioning, and the embedded install is
small enough not to need it.

`ensure_partitions` creates the coming months before rows arrive (the worker runs it daily, and
`gpu-tracker db upgrade` after migrating). It never moves a row between monthly partitions; rows that
landed in DEFAULT (a month nobody created in time, or a bulk load of old history) get their month, and are
moved into it in the same transaction, because Postgres refuses to create a partition while DEFAULT holds
rows of its range. Migration 0018 creates
the first partitions with the same names and bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, text

from tracker.storage.locks import named_lock_key

__all__ = [
    "PARTITIONED",
    "PartitionInfo",
    "ensure_partitions",
    "is_partition_name",
    "list_partitions",
    "month_start",
    "months",
    "partition_name",
]

PARTITIONED = ("offer_prices", "offer_availability")
_PARTITION_NAME = re.compile(rf"^({'|'.join(PARTITIONED)})_(y\d{{4}}m\d{{2}}|default)$")
LOCK = "history:partitions"


def month_start(t: datetime) -> datetime:
    """The first instant (UTC) of `t`'s month."""
    t = t.astimezone(UTC)
    return datetime(t.year, t.month, 1, tzinfo=UTC)


def add_months(month: datetime, n: int) -> datetime:
    index = month.year * 12 + month.month - 1 + n
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def months(first: datetime, last: datetime) -> list[datetime]:
    """The month starts from `first`'s month to `last`'s, both included."""
    out, month, end = [], month_start(first), month_start(last)
    while month <= end:
        out.append(month)
        month = add_months(month, 1)
    return out


def partition_name(table: str, month: datetime | None) -> str:
    """`offer_prices_y2026m12` for a month, `offer_prices_default` for None."""
    return f"{table}_default" if month is None else f"{table}_y{month.year:04d}m{month.month:02d}"


def is_partition_name(name: str) -> bool:
    """A partition of a history table (what `alembic check` must not take for a table the models lack)."""
    return _PARTITION_NAME.match(name) is not None


def _bound(t: datetime) -> str:
    # Partition bounds are literals (no bind parameters in DDL); the value is a datetime we made.
    return f"'{t.isoformat()}'"


def is_partitioned(conn: Connection, table: str) -> bool:
    """Whether `table` is partitioned here (False on SQLite and on a Postgres database before 0018)."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.execute(text("SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(:t)"), {"t": table})
    return found.first() is not None


_CHILDREN = (
    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:t)"
)


def _partitions(conn: Connection, table: str) -> set[str]:
    rows = conn.execute(text(_CHILDREN), {"t": table})
    return {name for (name,) in rows}


def _stranded(conn: Connection, default: str) -> set[datetime]:
    """The months DEFAULT holds rows of (written while no partition of theirs existed): they get their
    month too, so DEFAULT stays empty and a query's pruning keeps skipping it. DEFAULT is small, so the
    scan is cheap."""
    rows = conn.execute(text(f"SELECT DISTINCT date_trunc('month', valid_from AT TIME ZONE 'UTC') FROM \"{default}\""))
    return {month_start(m.replace(tzinfo=UTC)) for (m,) in rows}


def create_month(conn: Connection, table: str, month: datetime, existing: set[str]) -> str:
    """Create `table`'s partition of `month`, moving in the rows DEFAULT holds for it (one transaction:
    the caller's). The new table is filled before it is attached, so the attach finds DEFAULT without
    rows of its range; attaching creates the parent's indexes, primary key and foreign keys on it."""
    name, lo, hi = partition_name(table, month), month, add_months(month, 1)
    default = partition_name(table, None)
    conn.execute(text(f'CREATE TABLE "{name}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'))
    if default in existing:
        # RETURNING * lists DEFAULT's columns in the parent's order, which LIKE copied.
        conn.execute(
            text(
                f'WITH moved AS (DELETE FROM "{default}" WHERE valid_from >= :lo AND valid_from < :hi RETURNING *) '
                f'INSERT INTO "{name}" SELECT * FROM moved'
            ),
            {"lo": lo, "hi": hi},
        )
    conn.execute(
        text(f'ALTER TABLE "{table}" ATTACH PARTITION "{name}" FOR VALUES FROM ({_bound(lo)}) TO ({_bound(hi)})')
    )
    existing.add(name)
    return name


def ensure_partitions(engine: Engine, now: datetime, months_ahead: int = 3, since: datetime | None = None) -> list[str]:
    """Create the missing monthly partitions of this month and the next `months_ahead`, and of every month
    DEFAULT holds rows of (moving them in), and DEFAULT if it is missing; return the names created.
    Idempotent, and safe with two processes: they serialise on an advisory lock, and the second finds the
    partitions made. `since` also creates the months from its month on (before a bulk load of old history,
    so its rows never pass through DEFAULT). A no-op on SQLite."""
    if engine.dialect.name != "postgresql":
        return []
    created: list[str] = []
    with engine.begin() as conn:
        # Transaction-level: released by this block's commit or rollback, never leaked.
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": named_lock_key(LOCK)})
        for table in PARTITIONED:
            if not is_partitioned(conn, table):
                continue
            existing = _partitions(conn, table)
            default = partition_name(table, None)
            if default not in existing:
                conn.execute(text(f'CREATE TABLE "{default}" PARTITION OF "{table}" DEFAULT'))
                existing.add(default)
                created.append(default)
            first = now if since is None else min(since, now)
            wanted = set(months(first, add_months(month_start(now), months_ahead))) | _stranded(conn, default)
            for month in sorted(wanted):
                if partition_name(table, month) not in existing:
                    created.append(create_month(conn, table, month, existing))
    return created


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    table: str
    partition: str
    bounds: str  # Postgres' own text: FOR VALUES FROM (…) TO (…), or DEFAULT
    rows: int


def list_partitions(engine: Engine) -> list[PartitionInfo]:
    """Every partition of the history tables with its bounds and exact row count (empty on SQLite)."""
    if engine.dialect.name != "postgresql":
        return []
    out: list[PartitionInfo] = []
    with engine.connect() as conn:
        for table in PARTITIONED:
            rows = conn.execute(
                text(
                    "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
                    "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:t) ORDER BY c.relname"
                ),
                {"t": table},
            ).all()
            for name, bounds in rows:
                count = conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one()
                out.append(PartitionInfo(table, name, bounds, int(count)))
    return out

"""offer_prices and offer_availability partitioned by month on Postgres

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 17:50:00

On Postgres both history tables become declaratively partitioned by RANGE on `valid_from`: one partition
per month the existing rows span plus the next three (created later by
`tracker.storage.partitions.ensure_partitions`), and a DEFAULT partition so an insert never fails for a
month nobody created. The primary key becomes (id, valid_from) (a partitioned table's keys must hold the
partition key; nothing refers to these ids by foreign key); the indexes are declared on the parent, so
every partition has its own. Rows are copied with their ids, and the id sequence moves to the new table,
so later inserts continue from where they were. The downgrade copies the rows back into plain tables.

On SQLite this migration does nothing: SQLite has no partitioning, and the embedded single-file install
is small enough for the plain tables and their indexes; its primary key stays `id` (an INTEGER PRIMARY KEY
is SQLite's rowid, the only kind that autoincrements), which Alembic's comparison does not look at.

The SQL is written out here rather than imported from tracker.storage, so this revision keeps doing what
it did whatever that module becomes.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MONTHS_AHEAD = 3

# table -> its indexes at 0017 (name, columns); both tables refer to offers and scrape_runs alike.
TABLES: dict[str, list[tuple[str, str]]] = {
    "offer_prices": [
        ("ix_offer_prices_offer_from", "offer_id, valid_from"),
        ("ix_offer_prices_gpu_from", "gpu_id, valid_from"),
    ],
    "offer_availability": [("ix_offer_availability_offer_from", "offer_id, valid_from")],
}


def _add_months(month: datetime, n: int) -> datetime:
    index = month.year * 12 + month.month - 1 + n
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _month(t: datetime) -> datetime:
    t = t.astimezone(UTC)
    return datetime(t.year, t.month, 1, tzinfo=UTC)


def _keys(table: str, key: str) -> None:
    """The primary key `key`, foreign keys and indexes of `table` (built after the rows are in: faster)."""
    op.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "pk_{table}" PRIMARY KEY ({key})')
    op.execute(
        f'ALTER TABLE "{table}" ADD CONSTRAINT "fk_{table}_offer_id_offers" '
        "FOREIGN KEY (offer_id) REFERENCES offers (id) ON DELETE CASCADE"
    )
    op.execute(
        f'ALTER TABLE "{table}" ADD CONSTRAINT "fk_{table}_run_id_scrape_runs" '
        "FOREIGN KEY (run_id) REFERENCES scrape_runs (id) ON DELETE SET NULL"
    )
    for name, columns in TABLES[table]:
        op.execute(f'CREATE INDEX "{name}" ON "{table}" ({columns})')


def _rebuild(table: str, partitioned: bool) -> None:
    """Replace `table` with a copy, partitioned by month or plain, keeping rows, ids and the sequence."""
    bind = op.get_bind()
    old = f"{table}_0018_old"
    op.execute(f'ALTER TABLE "{table}" RENAME TO "{old}"')
    # LIKE copies the columns in order, NOT NULLs and the defaults (the id's nextval of the same sequence).
    like = f'(LIKE "{old}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
    op.execute(f'CREATE TABLE "{table}" {like}' + (" PARTITION BY RANGE (valid_from)" if partitioned else ""))
    if partitioned:
        first, last = bind.execute(sa.text(f'SELECT min(valid_from), max(valid_from) FROM "{old}"')).one()
        now = _month(datetime.now(UTC))
        month = _month(first) if first is not None and first < now else now
        end = _add_months(max(_month(last), now) if last is not None else now, MONTHS_AHEAD)
        while month <= end:
            name = f"{table}_y{month.year:04d}m{month.month:02d}"
            lo, hi = month.isoformat(), _add_months(month, 1).isoformat()
            op.execute(f"CREATE TABLE \"{name}\" PARTITION OF \"{table}\" FOR VALUES FROM ('{lo}') TO ('{hi}')")
            month = _add_months(month, 1)
        op.execute(f'CREATE TABLE "{table}_default" PARTITION OF "{table}" DEFAULT')
    op.execute(f'INSERT INTO "{table}" SELECT * FROM "{old}"')
    # The sequence belongs to the old table's id: hand it over before the old table (and with it,
    # otherwise, the sequence) is dropped. Its position is untouched, so ids continue.
    seq = bind.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": old}).scalar()
    if seq is not None:
        op.execute(f'ALTER SEQUENCE {seq} OWNED BY "{table}".id')
    op.execute(f'DROP TABLE "{old}"')
    _keys(table, "id, valid_from" if partitioned else "id")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite: plain tables (see the module's docstring)
    for table in TABLES:
        _rebuild(table, partitioned=True)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        _rebuild(table, partitioned=False)

"""history import: label imported runs with their source version; store external market aggregates

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 21:45:00

`scrape_runs.source_version` says which published version an imported run came from (a snapshot file and
its SHA-256, an export's file hash, a catalog commit): price and availability rows carry their run, so
each imported row is labelled by source (`scrape_runs.source = "import"`) and version. NULL for live runs.
`external_aggregates` holds market statistics a third party published (min/median/percentiles per card
per timestamp): a reference series kept apart from offers, never mixed into our own statistics.
Nothing to back-fill: both are new.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_MONEY = sa.Numeric(14, 6)


def upgrade() -> None:
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_version", sa.String(255), nullable=True))
    op.create_table(
        "external_aggregates",
        sa.Column("id", _ID, nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("raw_gpu_name", sa.String(255), nullable=False),
        sa.Column("gpu_id", sa.String(64), nullable=True),
        sa.Column("observed_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        *(
            sa.Column(name, _MONEY, nullable=True)
            for name in ("min", "p10", "p25", "median", "p75", "p90", "max", "mean")
        ),
        sa.Column("offers", sa.Integer(), nullable=True),
        sa.Column("available", sa.Integer(), nullable=True),
        sa.Column("source_version", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_external_aggregates")),
        sa.UniqueConstraint("source", "raw_gpu_name", "observed_at", name="uq_external_aggregates_source_name_at"),
    )
    with op.batch_alter_table("external_aggregates", schema=None) as batch_op:
        batch_op.create_index("ix_external_aggregates_gpu_at", ["gpu_id", "observed_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("external_aggregates", schema=None) as batch_op:
        batch_op.drop_index("ix_external_aggregates_gpu_at")
    op.drop_table("external_aggregates")
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.drop_column("source_version")

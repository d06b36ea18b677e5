"""initial schema: runs, offers, change-only prices, unknown names, data version

Revision ID: 0001
Revises:
Create Date: 2026-11-29 21:32:28.493245
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "data_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_data_version")),
    )
    # The counter row always exists, so ingest only ever UPDATEs it.
    op.bulk_insert(
        sa.table("data_version", sa.column("id", sa.Integer()), sa.column("version", sa.BigInteger())),
        [{"id": 1, "version": 0}],
    )
    op.create_table(
        "offers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("offer_key", sa.String(length=255), nullable=False),
        sa.Column("gpu_id", sa.String(length=64), nullable=False),
        sa.Column("gpu_family", sa.String(length=64), nullable=False),
        sa.Column("raw_gpu_name", sa.String(length=255), nullable=False),
        sa.Column("gpu_count", sa.Numeric(precision=8, scale=3), nullable=False),
        sa.Column("gpu_memory_gb", sa.Numeric(precision=8, scale=2), nullable=True),
        sa.Column("form_factor", sa.String(length=32), nullable=False),
        sa.Column("pricing", sa.String(length=16), nullable=False),
        sa.Column("reserved_term", sa.String(length=16), nullable=True),
        sa.Column("region", sa.String(length=128), nullable=False),
        sa.Column("instance_type", sa.String(length=128), nullable=True),
        sa.Column("available", sa.Boolean(), nullable=True),
        sa.Column("vcpus", sa.Numeric(precision=8, scale=2), nullable=True),
        sa.Column("ram_gb", sa.Numeric(precision=10, scale=2), nullable=True),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("demo", sa.Boolean(), nullable=False),
        sa.Column("first_seen", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("delisted_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("price_per_hour", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("price_per_gpu_hour", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_offers")),
        sa.UniqueConstraint("provider", "offer_key", name="uq_offers_provider_offer_key"),
    )
    with op.batch_alter_table("offers", schema=None) as batch_op:
        batch_op.create_index("ix_offers_family_pricing", ["gpu_family", "pricing"], unique=False)
        batch_op.create_index("ix_offers_gpu_pricing", ["gpu_id", "pricing"], unique=False)

    op.create_table(
        "scrape_runs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("slot", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("observed_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("offers_seen", sa.Integer(), nullable=False),
        sa.Column("offers_valid", sa.Integer(), nullable=False),
        sa.Column("offers_new", sa.Integer(), nullable=False),
        sa.Column("price_rows", sa.Integer(), nullable=False),
        sa.Column("offers_closed", sa.Integer(), nullable=False),
        sa.Column("offers_reopened", sa.Integer(), nullable=False),
        sa.Column("unknown_names", sa.Integer(), nullable=False),
        sa.Column("invalid_offers", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("parser_version", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scrape_runs")),
        sa.UniqueConstraint("provider", "slot", name="uq_scrape_runs_provider_slot"),
    )
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.create_index("ix_scrape_runs_provider_started", ["provider", "started_at"], unique=False)

    op.create_table(
        "offer_prices",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("offer_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("gpu_id", sa.String(length=64), nullable=False),
        sa.Column("pricing", sa.String(length=16), nullable=False),
        sa.Column("valid_from", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("valid_to", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("price_per_hour", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("price_per_gpu_hour", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.ForeignKeyConstraint(
            ["offer_id"], ["offers.id"], name=op.f("fk_offer_prices_offer_id_offers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["scrape_runs.id"], name=op.f("fk_offer_prices_run_id_scrape_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_offer_prices")),
    )
    with op.batch_alter_table("offer_prices", schema=None) as batch_op:
        batch_op.create_index("ix_offer_prices_gpu_from", ["gpu_id", "valid_from"], unique=False)
        batch_op.create_index("ix_offer_prices_offer_from", ["offer_id", "valid_from"], unique=False)

    op.create_table(
        "unknown_gpu_names",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("raw_name", sa.String(length=255), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("first_seen", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("times_seen", sa.Integer(), nullable=False),
        sa.Column("last_run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.ForeignKeyConstraint(
            ["last_run_id"],
            ["scrape_runs.id"],
            name=op.f("fk_unknown_gpu_names_last_run_id_scrape_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_unknown_gpu_names")),
        sa.UniqueConstraint("provider", "raw_name", name="uq_unknown_gpu_names_provider_raw"),
    )


def downgrade() -> None:
    op.drop_table("unknown_gpu_names")
    with op.batch_alter_table("offer_prices", schema=None) as batch_op:
        batch_op.drop_index("ix_offer_prices_offer_from")
        batch_op.drop_index("ix_offer_prices_gpu_from")

    op.drop_table("offer_prices")
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_scrape_runs_provider_started")

    op.drop_table("scrape_runs")
    with op.batch_alter_table("offers", schema=None) as batch_op:
        batch_op.drop_index("ix_offers_gpu_pricing")
        batch_op.drop_index("ix_offers_family_pricing")

    op.drop_table("offers")
    op.drop_table("data_version")

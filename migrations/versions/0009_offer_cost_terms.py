"""offer_cost_terms: the cost terms an offer's API states (disk, transfer, billing), with history

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 14:45:00

What a run costs beyond $/hour: the billing increment and minimum, the disk the price includes, disk
$/GB-month, egress and ingress $/GB, whether a stopped instance bills, the host's bandwidth. Kept
change-only like prices, valid on [valid_from, valid_to), one row per offer whose API says at least
one term (tracker.ingest.costs); NULL is "not said". A new table: nothing to back-fill, since the
terms were never stored before.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "offer_cost_terms",
        sa.Column("id", _ID, nullable=False),
        sa.Column("offer_id", _ID, nullable=False),
        sa.Column("valid_from", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("valid_to", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("billing_increment_s", sa.Numeric(12, 3), nullable=True),
        sa.Column("billing_minimum_s", sa.Numeric(12, 3), nullable=True),
        sa.Column("included_disk_gb", sa.Numeric(14, 3), nullable=True),
        sa.Column("disk_usd_per_gb_month", sa.Numeric(14, 6), nullable=True),
        sa.Column("egress_usd_per_gb", sa.Numeric(14, 6), nullable=True),
        sa.Column("ingress_usd_per_gb", sa.Numeric(14, 6), nullable=True),
        sa.Column("download_mbps", sa.Numeric(14, 3), nullable=True),
        sa.Column("stopped_bills", sa.Boolean(), nullable=True),
        sa.Column("digest", sa.String(40), nullable=False),
        sa.Column("run_id", _ID, nullable=True),
        sa.ForeignKeyConstraint(
            ["offer_id"], ["offers.id"], name=op.f("fk_offer_cost_terms_offer_id_offers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["scrape_runs.id"], name=op.f("fk_offer_cost_terms_run_id_scrape_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_offer_cost_terms")),
    )
    with op.batch_alter_table("offer_cost_terms", schema=None) as batch_op:
        batch_op.create_index("ix_offer_cost_terms_offer_from", ["offer_id", "valid_from"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("offer_cost_terms", schema=None) as batch_op:
        batch_op.drop_index("ix_offer_cost_terms_offer_from")
    op.drop_table("offer_cost_terms")

"""offer_availability: change-only availability history; alert rules: offer filters

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 10:00:00

Availability was only the offers' current `available` flag, so "when was 8×H100 last available" had
no answer. `offer_availability` keeps it as history the way `offer_prices` keeps prices. Offers
listed at upgrade time get one open row from their `last_seen`: the latest instant their flag is
known to have held (nothing older was recorded). Delisted offers get none — they are not listed, and
no row covers unlisted time.

Alert rules gain offer filters (available only, a minimum GPU count, and the quality filters of
`tracker.market.quality`); existing rules keep their meaning: every filter off.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _no_statement_timeout() -> None:
    # The back-fill reads every listed offer: the engine's API statement timeout must not cancel it.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("SET LOCAL statement_timeout = 0")


def upgrade() -> None:
    _no_statement_timeout()
    op.create_table(
        "offer_availability",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("offer_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("available", sa.Boolean(), nullable=True),
        sa.Column("valid_from", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("valid_to", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.ForeignKeyConstraint(
            ["offer_id"], ["offers.id"], name=op.f("fk_offer_availability_offer_id_offers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["scrape_runs.id"], name=op.f("fk_offer_availability_run_id_scrape_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_offer_availability")),
    )
    with op.batch_alter_table("offer_availability", schema=None) as batch_op:
        batch_op.create_index("ix_offer_availability_offer_from", ["offer_id", "valid_from"], unique=False)
    # Plain column copies: the stored datetime text/timestamps go across unchanged on both backends.
    op.execute(
        "INSERT INTO offer_availability (offer_id, available, valid_from, valid_to, run_id)"
        " SELECT id, available, last_seen, NULL, NULL FROM offers WHERE delisted_at IS NULL"
    )

    with op.batch_alter_table("alert_rules", schema=None) as batch_op:
        batch_op.add_column(sa.Column("available_only", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("min_gpus", sa.Numeric(precision=8, scale=3), nullable=True))
        batch_op.add_column(sa.Column("verified_only", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("datacenter_only", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("min_reliability", sa.Numeric(precision=5, scale=4), nullable=True))
        batch_op.add_column(sa.Column("cloud", sa.String(length=16), nullable=True))


def downgrade() -> None:
    _no_statement_timeout()
    # A rule with offer filters would silently widen to every offer: it is kept, but disabled, so
    # nobody is notified about offers it never asked about.
    op.execute(
        "UPDATE alert_rules SET enabled = false WHERE available_only OR verified_only OR datacenter_only"
        " OR min_gpus IS NOT NULL OR min_reliability IS NOT NULL OR cloud IS NOT NULL"
    )
    with op.batch_alter_table("alert_rules", schema=None) as batch_op:
        batch_op.drop_column("cloud")
        batch_op.drop_column("min_reliability")
        batch_op.drop_column("datacenter_only")
        batch_op.drop_column("verified_only")
        batch_op.drop_column("min_gpus")
        batch_op.drop_column("available_only")
    with op.batch_alter_table("offer_availability", schema=None) as batch_op:
        batch_op.drop_index("ix_offer_availability_offer_from")
    op.drop_table("offer_availability")

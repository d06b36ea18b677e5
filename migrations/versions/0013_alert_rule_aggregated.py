"""alert_rules.aggregated: how a rule counts aggregators' resales (include | exclude | dedupe)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 07:40:00

A rule counted every listing, so a machine listed by its owner and resold by two aggregators weighed
three times in a median, unlike the market and rankings, which take `aggregated`
(tracker.market.aggregated). Existing rules keep `include`: they count as they always did.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.add_column(sa.Column("aggregated", sa.String(length=8), nullable=False, server_default="include"))


def downgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.drop_column("aggregated")

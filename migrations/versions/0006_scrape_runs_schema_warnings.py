"""scrape_runs.schema_warnings: each run's response shape against the fields its parser needs

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 13:00:00

The worker compares every fetched response with what the parser reads from the provider's bundled
cassette (tracker.pipeline.drift) and keeps the findings with the run, so provider health and
/metrics can say that a provider's API changed before a parser breaks on it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("schema_warnings", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.drop_column("schema_warnings")

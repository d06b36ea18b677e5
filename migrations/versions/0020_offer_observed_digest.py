"""offers.observed_digest: the digest of the observation each offer row was last written from

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 21:50:00

A repeated scrape states most offers exactly as before. Ingest stores each observation's digest
(tracker.ingest.digest) on the row it writes, so the next observation with the same digest is taken as
unchanged without being validated, converted and compared again. Existing rows start without one (NULL):
the first ingest after this migration compares them in full, as before, and writes theirs.

A plain nullable ADD COLUMN: metadata only on Postgres (no rewrite of the table), and no rebuild on SQLite,
whose native DROP COLUMN (3.35+) is the downgrade. No index: the column is only read with the provider's rows.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("offers", sa.Column("observed_digest", sa.String(32), nullable=True))


def downgrade() -> None:
    op.drop_column("offers", "observed_digest")

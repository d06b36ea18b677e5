"""region locations: where each provider region is (country, areas, metro), for the region filter in SQL

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 23:00:00

`region_locations` holds, per (provider, region), the place `tracker.catalog.locations` gives it, so a
filter such as `--region eu` (an area), `de` (a country) or `paris` (a metro) is one SQL condition. Ingest
keeps it current for every region it sees; this migration fills it for the regions already stored, so
filters work before the next scrape. The downgrade drops the table: nothing else refers to it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "region_locations",
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("region", sa.String(128), nullable=False),
        sa.Column("located", sa.Boolean(), nullable=False),
        sa.Column("country", sa.String(2), nullable=True),
        sa.Column("areas", sa.String(64), nullable=False),
        sa.Column("metro", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("provider", "region", name=op.f("pk_region_locations")),
    )
    # The back-fill uses the region table shipped with this code: a later release that places more
    # regions rewrites these rows through ingest, so the migration's answer is only the starting point.
    from tracker.catalog.locations import get_locations, location_row

    pairs = op.get_bind().execute(sa.text("SELECT DISTINCT provider, region FROM offers WHERE region <> ''"))
    rows = [location_row(get_locations(), provider, region) for provider, region in pairs]
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    op.drop_table("region_locations")

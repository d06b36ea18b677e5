"""offers: leave free space on each page so the per-scrape last_seen update is a HOT update

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 22:40:00

Every successful scrape rewrites `last_seen` on all of a provider's listed offers. On Postgres, an
update that changes no indexed column and finds room on the same page is HOT: it touches no index.
A full page leaves no room, so each scrape also inserted into all four indexes. SQLite has no
equivalent; the migration is a no-op there.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE offers SET (fillfactor = 50)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE offers RESET (fillfactor)")

"""scrape_runs: who holds a claim (claimed_by) and reclaimable slots (attempt)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 10:00:00

A worker killed mid-run left its `running` row behind, and the unique (provider, slot) kept every
later worker off that slot for good. Now a dead claim is closed `failed` and the slot is scraped
again as the next attempt: uniqueness is per (provider, slot, attempt). `claimed_by` (host:pid)
names each row's holder, so a worker can tell a dead holder on its own host without advisory locks
(SQLite). Existing rows are attempt 0 with no recorded holder.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _no_statement_timeout() -> None:
    # The engine's statement_timeout (30 s, meant for API reads) would cancel building the new unique
    # index over a long ledger; SET LOCAL lasts until this migration's transaction ends.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("SET LOCAL statement_timeout = 0")


def upgrade() -> None:
    _no_statement_timeout()
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attempt", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("claimed_by", sa.String(length=255), nullable=True))
        batch_op.drop_constraint("uq_scrape_runs_provider_slot", type_="unique")
        batch_op.create_unique_constraint("uq_scrape_runs_provider_slot_attempt", ["provider", "slot", "attempt"])


def downgrade() -> None:
    _no_statement_timeout()
    # Reclaimed attempts would collide with the narrower constraint: the slot stays on each slot's
    # latest attempt; earlier ones keep their row (the ledger is history) without a slot.
    op.execute(
        "UPDATE scrape_runs SET slot = NULL WHERE slot IS NOT NULL AND attempt < (SELECT MAX(r.attempt)"
        " FROM scrape_runs r WHERE r.provider = scrape_runs.provider AND r.slot = scrape_runs.slot)"
    )
    with op.batch_alter_table("scrape_runs", schema=None) as batch_op:
        batch_op.drop_constraint("uq_scrape_runs_provider_slot_attempt", type_="unique")
        batch_op.create_unique_constraint("uq_scrape_runs_provider_slot", ["provider", "slot"])
        batch_op.drop_column("claimed_by")
        batch_op.drop_column("attempt")

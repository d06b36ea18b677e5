"""offer_prices: one covering index for a card's history in place of (gpu_id, valid_from)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03 06:40:00

Market history reads, for one card and pricing type, every price row overlapping a window: the offer,
both ends and the price. Through (gpu_id, valid_from) each of those rows was a heap fetch from a page of
its own (an ingest writes every card's rows side by side): a year of one card at 10x the benchmark's size
read 63,000 pages for 186,000 rows (0.4 s in the database alone). The new index holds every column that
query reads or filters on, in the order it filters (card, pricing, time), so Postgres answers it from the
index alone (an index-only scan of ~2,000 pages: 46 ms) and SQLite from the index b-tree without touching
the table. It also serves what the old index served (a card's rows from a time on). Key columns rather than
INCLUDE: SQLite has no INCLUDE, and one definition keeps `alembic check` the same on both backends.

On Postgres the index is declared on the partitioned parent, so each month's partition gets its own, and
partitions created later (tracker.storage.partitions) get it too. Building it reads the whole table once.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ["gpu_id", "pricing", "valid_from", "valid_to", "price_per_gpu_hour", "offer_id", "price_kind", "orderable"]


def upgrade() -> None:
    op.drop_index("ix_offer_prices_gpu_from", table_name="offer_prices")
    op.create_index("ix_offer_prices_history", "offer_prices", COLUMNS, unique=False)


def downgrade() -> None:
    op.drop_index("ix_offer_prices_history", table_name="offer_prices")
    op.create_index("ix_offer_prices_gpu_from", "offer_prices", ["gpu_id", "valid_from"], unique=False)

"""native currency: prices keep the quoted amount, currency and rate; fx_rates holds daily rates

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 14:30:00

Providers quote EUR, CAD, ...; the tracker compares in USD. A price row now keeps what was quoted
(`currency`, `price_native_per_hour`, `price_native_per_gpu_hour`) and the rate its USD figure was made
with (`fx_rate` USD per unit, `fx_date`, `fx_source`), so re-fetched rates never move USD history.
`change_kind` tells a real price change ("price") from a row written only because the rate moved
("fx"); `scrape_runs.fx_rows` counts the latter apart from `price_rows`. `offers` carries the same
figures for the live price. `fx_rates` is the daily rate history (ECB reference rates first).

Every price stored before this revision was quoted in USD (the contract had no currency), so the
back-fill is exact: native = USD figure, no rate. The native columns stay nullable because SQLite
cannot add a NOT NULL column without a constant default and rebuilding `offers` there would cascade
its foreign keys; ingest always writes them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MONEY = sa.Numeric(precision=14, scale=6)
_RATE = sa.Numeric(precision=24, scale=12)


def _no_statement_timeout() -> None:
    # The back-fill rewrites every price row: the engine's API statement timeout must not cancel it.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("SET LOCAL statement_timeout = 0")


def _native_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False),
        sa.Column("price_native_per_hour", _MONEY, nullable=True),
        sa.Column("price_native_per_gpu_hour", _MONEY, nullable=True),
        sa.Column("fx_rate", _RATE, nullable=True),
        sa.Column("fx_date", sa.Date(), nullable=True),
        sa.Column("fx_source", sa.String(length=32), nullable=True),
    ]


def upgrade() -> None:
    _no_statement_timeout()
    op.create_table(
        "fx_rates",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("rate_date", sa.Date(), nullable=False),
        sa.Column("usd_per_unit", _RATE, nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("fetched_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fx_rates")),
        sa.UniqueConstraint("currency", "rate_date", "source", name="uq_fx_rates_currency_date_source"),
    )
    # Plain ALTER TABLE ADD COLUMNs on both backends, never a batch rebuild: rebuilding `offers` on SQLite
    # drops it, and with foreign keys on that deletes every price and availability row (ON DELETE CASCADE).
    for table in ("offers", "offer_prices"):
        for column in _native_columns():
            op.add_column(table, column)
    op.add_column("offer_prices", sa.Column("change_kind", sa.String(length=8), server_default="price", nullable=False))
    op.add_column("scrape_runs", sa.Column("fx_rows", sa.Integer(), server_default="0", nullable=False))
    for table in ("offers", "offer_prices"):
        op.execute(
            f"UPDATE {table} SET price_native_per_hour = price_per_hour, price_native_per_gpu_hour = price_per_gpu_hour"
        )


def downgrade() -> None:
    _no_statement_timeout()
    # The USD figures stay as they were written; what goes is the quote and the rate beside them. FX-only
    # rows stay too (each holds a USD figure that was true over its interval). Native DROP COLUMN (SQLite
    # 3.35+), never a rebuild, for the reason given in upgrade().
    op.drop_column("scrape_runs", "fx_rows")
    op.drop_column("offer_prices", "change_kind")
    for table in ("offer_prices", "offers"):
        for column in reversed(_native_columns()):
            op.drop_column(table, column.name)
    op.drop_table("fx_rates")

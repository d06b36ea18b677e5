"""price kind and orderable: asking, transacted and floor prices kept apart, on offers and price rows

Revision ID: 0016
Revises: 0012
Create Date: 2026-12-02 07:00:00

`price_kind` says what a price is (asking: the seller's price now; transacted: what a buyer paid or pays, a
trade, an auction's clearing price, a rented machine's rate; floor: a lower bound, "from $X" or a reserve)
and `orderable` whether a buyer can order at it now (providers.contract.PriceKind, the adapters set both).
They are columns on `offers` and on `offer_prices` because every statistic filters on them in SQL and a
server's rented rate and its asking price alternate under one offer key.

Back-fill: every stored price was read as an asking price until now, which is the columns' default; the
rows whose adapter now says otherwise are rewritten from what the offers already hold, the same rules the
adapters apply: Mithril's clearing prices (attribute `price_source` "last_instance_price") are transacted
and its reserve-price stand-ins ("minimum_price") floors; a rented Clore server (`available` false) shows
its renter's rate. Only the open price row of those offers is rewritten: an older row's state is unknown.
The downgrade drops the columns.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("offers", "offer_prices")


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMNs on both backends, never a batch rebuild: rebuilding `offers` on SQLite
    # drops it, and with foreign keys on that deletes every price and availability row (as in 0008).
    for table in TABLES:
        op.add_column(table, sa.Column("price_kind", sa.String(16), server_default="asking", nullable=False))
        op.add_column(table, sa.Column("orderable", sa.Boolean(), server_default=sa.true(), nullable=False))
    bind = op.get_bind()
    offers = sa.table(
        "offers",
        sa.column("id"),
        sa.column("provider"),
        sa.column("available", sa.Boolean),
        sa.column("attributes", sa.JSON),
        sa.column("price_kind"),
        sa.column("orderable"),
    )
    prices = sa.table(
        "offer_prices", sa.column("offer_id"), sa.column("valid_to"), sa.column("price_kind"), sa.column("orderable")
    )
    rows = bind.execute(
        sa.select(offers.c.id, offers.c.provider, offers.c.available, offers.c.attributes).where(
            offers.c.provider.in_(("mithril", "clore"))
        )
    ).all()
    for offer_id, provider, available, attributes in rows:
        kind = _kind(provider, available, attributes or {})
        if kind == "asking":
            continue
        bind.execute(sa.update(offers).where(offers.c.id == offer_id).values(price_kind=kind, orderable=False))
        bind.execute(
            sa.update(prices)
            .where(prices.c.offer_id == offer_id, prices.c.valid_to.is_(None))
            .values(price_kind=kind, orderable=False)
        )


def _kind(provider: str, available: bool | None, attributes: dict[str, object]) -> str:
    if provider == "mithril":
        source = attributes.get("price_source")
        return {"last_instance_price": "transacted", "minimum_price": "floor"}.get(str(source), "asking")
    return "transacted" if available is not None and not available else "asking"


def downgrade() -> None:
    # Native DROP COLUMN (SQLite 3.35+), never a rebuild, for the reason given in upgrade().
    for table in TABLES:
        op.drop_column(table, "orderable")
        op.drop_column(table, "price_kind")

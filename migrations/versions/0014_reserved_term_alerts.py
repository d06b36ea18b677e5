"""alert_rules.reserved_term: a reserved alert watches one reservation term

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-02 07:10:00

A reserved rule compared a statistic over every reserved offer of its cards, mixing 1-day and 3-year
prices. A reserved rule now names its term (tracker.alerts.rules requires it). Existing reserved rules:
where their cards' reserved offers have one term only, that blend was that term, so it is stored; where
they have several (or none), no term is the right one to pick, so the rule is disabled rather than left
to fire or resolve on a blend. Its owner re-creates it with a term. Price history needs no column: it
reads the term from the offer it joins anyway (tracker.market.statistics._interval_rows).
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.add_column(sa.Column("reserved_term", sa.String(length=16), nullable=True))
    conn = op.get_bind()
    rules = conn.execute(sa.text("SELECT id, gpu_ids FROM alert_rules WHERE pricing = 'reserved'")).all()
    for rule_id, gpu_ids in rules:
        cards = gpu_ids if isinstance(gpu_ids, list) else json.loads(gpu_ids or "[]")
        terms = (
            []
            if not cards
            else conn.execute(
                sa.text(
                    "SELECT DISTINCT reserved_term FROM offers WHERE pricing = 'reserved' AND gpu_id IN :cards"
                ).bindparams(sa.bindparam("cards", expanding=True)),
                {"cards": list(cards)},
            )
            .scalars()
            .all()
        )
        if len(terms) == 1 and terms[0]:
            conn.execute(
                sa.text("UPDATE alert_rules SET reserved_term = :term WHERE id = :id"),
                {"term": terms[0], "id": rule_id},
            )
        else:
            conn.execute(sa.text("UPDATE alert_rules SET enabled = :off WHERE id = :id"), {"off": False, "id": rule_id})


def downgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.drop_column("reserved_term")

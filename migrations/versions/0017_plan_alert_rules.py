"""alert_rules on a saved plan: subject, plan_mix, last_best_card, and a metric column wide enough

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 10:40:00

A rule may now watch a saved workload mix (tracker.alerts.plan_watch): `subject` says which kind of rule
a row is ("offers" for every existing rule, the server default), `plan_mix` holds the mix document, and
`last_best_card` the best single card type a plan_best_card rule measures a change from. The metric names
plan_monthly_cost (17 characters) do not fit VARCHAR(16): the column is widened on Postgres. SQLite does not
enforce a VARCHAR's length, and widening it there would mean rebuilding alert_rules, whose DROP (foreign keys
on) cascades to every channel, event and notification; so SQLite keeps the declared 16, which migrations/env.py
tells `alembic check` to ignore. The downgrade drops plan rules (they have no meaning at 0016) and the columns.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMNs (no batch rebuild on SQLite: see above).
    op.add_column("alert_rules", sa.Column("subject", sa.String(8), server_default="offers", nullable=False))
    op.add_column("alert_rules", sa.Column("plan_mix", sa.JSON(), nullable=True))
    op.add_column("alert_rules", sa.Column("last_best_card", sa.String(64), nullable=True))
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("alert_rules", "metric", type_=sa.String(32), existing_type=sa.String(16))


def downgrade() -> None:
    op.execute("DELETE FROM alert_rules WHERE subject = 'plan'")
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("alert_rules", "metric", type_=sa.String(16), existing_type=sa.String(32))
    # Native DROP COLUMN (SQLite 3.35+), never a rebuild, for the reason given above.
    for column in ("last_best_card", "plan_mix", "subject"):
        op.drop_column("alert_rules", column)

"""alert_rules.metric: `usd_per_mtoken` is `usd_per_mtok`, the name every other answer uses

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 13:30:00

/v1/rank, /v1/estimate and the CLI call $ per million tokens `usd_per_mtok`; alerts alone said
`usd_per_mtoken`. The old name is still accepted on input; stored rules carry the one name.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("UPDATE alert_rules SET metric = 'usd_per_mtok' WHERE metric = 'usd_per_mtoken'")


def downgrade() -> None:
    op.execute("UPDATE alert_rules SET metric = 'usd_per_mtoken' WHERE metric = 'usd_per_mtok'")

"""alert_channels.allow_networks: the webhook allow-list a channel was accepted under, kept with it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 22:30:00

A channel to a private address is accepted only inside TRACKER_WEBHOOK_ALLOW. The process that
creates the rule (the CLI, the API) and the one that delivers it (the worker) used to judge it each
against its own environment, so a rule added from a shell with the setting was refused, silently, by a
worker without it. The networks that accepted the channel are now stored with it (NULL: it needed
none) and the deliverer allows them for that channel. Existing channels keep NULL: they were accepted
under no stored list, and deliver as before.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_channels") as batch:
        batch.add_column(sa.Column("allow_networks", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_channels") as batch:
        batch.drop_column("allow_networks")

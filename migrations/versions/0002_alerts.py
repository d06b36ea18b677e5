"""alerts: rules, channels, transition events, notification outbox, delivery attempts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 21:35:01.261226
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tracker.storage.tables

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("gpu_query", sa.String(length=100), nullable=False),
        sa.Column("gpu_ids", sa.JSON(), nullable=False),
        sa.Column("pricing", sa.String(length=16), nullable=False),
        sa.Column("providers", sa.JSON(), nullable=True),
        sa.Column("regions", sa.JSON(), nullable=True),
        sa.Column("min_offers", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=16), nullable=False),
        sa.Column("price_statistic", sa.String(length=8), nullable=False),
        sa.Column("job", sa.JSON(), nullable=True),
        sa.Column("job_gpus", sa.Numeric(precision=8, scale=3), nullable=False),
        sa.Column("condition", sa.String(length=8), nullable=False),
        sa.Column("threshold", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("recovery_threshold", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("for_s", sa.Integer(), nullable=False),
        sa.Column("repeat_s", sa.Integer(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("silenced_until", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("allow_immediate", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("held_state", sa.String(length=16), nullable=True),
        sa.Column("state_since", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("pending_since", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_value", sa.Numeric(precision=14, scale=6), nullable=True),
        sa.Column("last_evaluated_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_notified_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("created_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_rules")),
    )
    op.create_table(
        "alert_channels",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=True),
        sa.Column("created_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["rule_id"], ["alert_rules.id"], name=op.f("fk_alert_channels_rule_id_alert_rules"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_channels")),
    )
    with op.batch_alter_table("alert_channels", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_channels_rule_id"), ["rule_id"], unique=False)

    op.create_table(
        "alert_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=False),
        sa.Column("to_state", sa.String(length=16), nullable=False),
        sa.Column("value", sa.Numeric(precision=14, scale=6), nullable=True),
        sa.Column("threshold", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("recovery_threshold", sa.Numeric(precision=14, scale=6), nullable=False),
        sa.Column("offers", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("notified", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["rule_id"], ["alert_rules.id"], name=op.f("fk_alert_events_rule_id_alert_rules"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_events")),
    )
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index("ix_alert_events_rule_at", ["rule_id", "at"], unique=False)

    op.create_table(
        "alert_notifications",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("channel_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("event_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("idempotency_key", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("claimed_until", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("claim_token", sa.String(length=32), nullable=True),
        sa.Column("delivered_at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["channel_id"],
            ["alert_channels.id"],
            name=op.f("fk_alert_notifications_channel_id_alert_channels"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["alert_events.id"],
            name=op.f("fk_alert_notifications_event_id_alert_events"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["rule_id"], ["alert_rules.id"], name=op.f("fk_alert_notifications_rule_id_alert_rules"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_notifications")),
        sa.UniqueConstraint("channel_id", "idempotency_key", name="uq_alert_notifications_channel_key"),
    )
    with op.batch_alter_table("alert_notifications", schema=None) as batch_op:
        batch_op.create_index("ix_alert_notifications_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_alert_notifications_rule_id"), ["rule_id"], unique=False)

    op.create_table(
        "alert_delivery_attempts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("notification_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", tracker.storage.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["notification_id"],
            ["alert_notifications.id"],
            name=op.f("fk_alert_delivery_attempts_notification_id_alert_notifications"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_delivery_attempts")),
    )
    with op.batch_alter_table("alert_delivery_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_alert_delivery_attempts_notification_id"), ["notification_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("alert_delivery_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_delivery_attempts_notification_id"))

    op.drop_table("alert_delivery_attempts")
    with op.batch_alter_table("alert_notifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_notifications_rule_id"))
        batch_op.drop_index("ix_alert_notifications_due")

    op.drop_table("alert_notifications")
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_events_rule_at")

    op.drop_table("alert_events")
    with op.batch_alter_table("alert_channels", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_channels_rule_id"))

    op.drop_table("alert_channels")
    op.drop_table("alert_rules")

"""Alert storage: rules, their channels, the transition log, and the notification outbox.

The outbox is what makes delivery survive crashes: a state change and the notifications it causes
commit in one transaction, and a separate deliverer drains `alert_notifications` with retries. Every
attempt is kept in `alert_delivery_attempts`, so "why did I not get that alert" is a query.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.storage.tables import Base, BigId, Money, UTCDateTime


class AlertRule(Base):
    """What to watch, when to fire and recover, and the rule's current place in its state machine."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # offers: a statistic of the live offers of some cards (the columns below); plan: a saved workload mix
    # (`plan_mix`, tracker.plan.mix) re-planned over the live offers at each evaluation (tracker.alerts.plan_watch).
    subject: Mapped[str] = mapped_column(String(8), default="offers", server_default="offers")
    # The mix as its validated document (re-read by tracker.plan.mix.validate_mix at each evaluation).
    plan_mix: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # plan_best_card: the best single card type last announced (or first seen), which a change is measured from.
    last_best_card: Mapped[str | None] = mapped_column(String(64))
    # Subject: what the user typed, and the canonical cards it resolved to when the rule was saved
    # (kept, so a later catalog change cannot silently widen a rule).
    gpu_query: Mapped[str] = mapped_column(String(100))
    gpu_ids: Mapped[list[str]] = mapped_column(JSON)
    pricing: Mapped[str] = mapped_column(String(16))
    # The one reservation term of a reserved rule ("1y"): a 1-day and a 3-year price are never one statistic.
    reserved_term: Mapped[str | None] = mapped_column(String(16))
    providers: Mapped[list[str] | None] = mapped_column(JSON)
    regions: Mapped[list[str] | None] = mapped_column(JSON)
    min_offers: Mapped[int] = mapped_column(Integer, default=1)
    # Offer filters: which offers count at all ("8×H100, available, verified"). A rule with any of them
    # asks whether such an offer exists, so none matching is an answer, not missing data (observe).
    available_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    min_gpus: Mapped[Decimal | None] = mapped_column(Numeric(8, 3))
    verified_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    datacenter_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    min_reliability: Mapped[Decimal | None] = mapped_column(Numeric(5, 4))
    cloud: Mapped[str | None] = mapped_column(String(16))  # secure | community
    # Resales: include | exclude | dedupe, as tracker.market.aggregated says (every listing, as before, by default).
    aggregated: Mapped[str] = mapped_column(String(8), default="include", server_default="include")
    # Metric: min | p25 | median of $/GPU-hour, cost_per_run | usd_per_mtok of `job`, or a plan's
    # plan_monthly_cost | plan_best_card.
    metric: Mapped[str] = mapped_column(String(32))
    price_statistic: Mapped[str] = mapped_column(String(8), default="min")  # the price a cost metric uses
    job: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    job_gpus: Mapped[Decimal] = mapped_column(Numeric(8, 3), default=Decimal(1))
    condition: Mapped[str] = mapped_column(String(8))  # below | above | changes (plan_best_card)
    threshold: Mapped[Decimal] = mapped_column(Money)
    recovery_threshold: Mapped[Decimal] = mapped_column(Money)
    for_s: Mapped[int] = mapped_column(Integer, default=0)
    repeat_s: Mapped[int | None] = mapped_column(Integer)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    silenced_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Set when the creator accepted a rule whose condition already held at creation.
    allow_immediate: Mapped[bool] = mapped_column(Boolean, default=False)

    # State machine: inactive | pending | firing | resolved | no_data.
    state: Mapped[str] = mapped_column(String(16), default="inactive")
    held_state: Mapped[str | None] = mapped_column(String(16))  # the state no_data interrupted
    state_since: Mapped[datetime] = mapped_column(UTCDateTime)
    pending_since: Mapped[datetime | None] = mapped_column(UTCDateTime)  # start of the current episode
    last_value: Mapped[Decimal | None] = mapped_column(Money)
    last_evaluated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    repeats: Mapped[int] = mapped_column(Integer, default=0)  # reminders sent in this episode
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Optimistic lock: an evaluator or editor working from a stale copy fails instead of overwriting.
    version: Mapped[int] = mapped_column(Integer)

    __mapper_args__ = {"version_id_col": version}  # noqa: RUF012

    channels: Mapped[list[AlertChannel]] = relationship(
        back_populates="rule", cascade="all, delete-orphan", passive_deletes=True, order_by="AlertChannel.id"
    )


class AlertChannel(Base):
    """Where a rule's notifications go: a signed webhook or an Apprise URL."""

    __tablename__ = "alert_channels"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # webhook | apprise
    url: Mapped[str] = mapped_column(Text)  # a secret too: Slack/Telegram tokens live in the URL
    secret: Mapped[str | None] = mapped_column(String(128))  # webhook signing key, "whsec_<base64>"
    # The TRACKER_WEBHOOK_ALLOW networks (comma-separated) the URL needed when the channel was accepted: the
    # deliverer, another process with perhaps another environment, allows them for this channel. NULL: none.
    allow_networks: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    rule: Mapped[AlertRule] = relationship(back_populates="channels")


class AlertEvent(Base):
    """One state transition (or reminder), with the value that caused it."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_rule_at", "rule_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    from_state: Mapped[str] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    value: Mapped[Decimal | None] = mapped_column(Money)
    threshold: Mapped[Decimal] = mapped_column(Money)
    recovery_threshold: Mapped[Decimal] = mapped_column(Money)
    offers: Mapped[int] = mapped_column(Integer, default=0)
    reason: Mapped[str] = mapped_column(Text, default="")
    notified: Mapped[bool] = mapped_column(Boolean, default=False)


class AlertNotification(Base):
    """Outbox: one message for one channel, delivered at least once by the deliverer."""

    __tablename__ = "alert_notifications"
    __table_args__ = (
        # The same message is never queued twice for a channel, whoever evaluates the rule.
        UniqueConstraint("channel_id", "idempotency_key", name="uq_alert_notifications_channel_key"),
        Index("ix_alert_notifications_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"), index=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("alert_channels.id", ondelete="CASCADE"))
    event_id: Mapped[int | None] = mapped_column(ForeignKey("alert_events.id", ondelete="SET NULL"))
    kind: Mapped[str] = mapped_column(String(16))  # firing | resolved | repeat | test
    idempotency_key: Mapped[str] = mapped_column(String(64))  # the webhook-id receivers dedupe on
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # A deliverer's lease: a crash mid-send leaves it to expire, and the message goes out again.
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    claim_token: Mapped[str | None] = mapped_column(String(32))
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)


class AlertDeliveryAttempt(Base):
    """Every send attempt, successful or not."""

    __tablename__ = "alert_delivery_attempts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    notification_id: Mapped[int] = mapped_column(ForeignKey("alert_notifications.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    ok: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)

"""Read side of alerts: a rule's transitions and its notifications with their delivery attempts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.storage.alert_tables import AlertDeliveryAttempt, AlertEvent, AlertNotification


def events(session: Session, rule_id: int, *, limit: int = 100) -> list[dict[str, Any]]:
    """Newest first."""
    rows = session.scalars(
        select(AlertEvent).where(AlertEvent.rule_id == rule_id).order_by(AlertEvent.id.desc()).limit(limit)
    )
    return [
        {
            "id": e.id,
            "at": e.at,
            "from_state": e.from_state,
            "to_state": e.to_state,
            "value": e.value,
            "threshold": e.threshold,
            "recovery_threshold": e.recovery_threshold,
            "offers": e.offers,
            "reason": e.reason,
            "notified": e.notified,
        }
        for e in rows
    ]


def notifications(session: Session, rule_id: int, *, limit: int = 100) -> list[dict[str, Any]]:
    """Newest first, each with its attempts (oldest first)."""
    rows = list(
        session.scalars(
            select(AlertNotification)
            .where(AlertNotification.rule_id == rule_id)
            .order_by(AlertNotification.id.desc())
            .limit(limit)
        )
    )
    attempts: dict[int, list[dict[str, Any]]] = {n.id: [] for n in rows}
    if rows:
        for a in session.scalars(
            select(AlertDeliveryAttempt)
            .where(AlertDeliveryAttempt.notification_id.in_(list(attempts)))
            .order_by(AlertDeliveryAttempt.id)
        ):
            attempts[a.notification_id].append(
                {
                    "attempt": a.attempt,
                    "at": a.at,
                    "ok": a.ok,
                    "status_code": a.status_code,
                    "duration_ms": a.duration_ms,
                    "error": a.error,
                }
            )
    return [
        {
            "id": n.id,
            "kind": n.kind,
            "channel_id": n.channel_id,
            "event_id": n.event_id,
            "webhook_id": n.idempotency_key,
            "status": n.status,
            "attempts": n.attempts,
            "created_at": n.created_at,
            "next_attempt_at": n.next_attempt_at if n.status == "pending" else None,
            "delivered_at": n.delivered_at,
            "last_error": n.last_error,
            "history": attempts[n.id],
        }
        for n in rows
    ]

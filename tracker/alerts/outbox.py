"""The notification outbox: queue messages with the state change, claim them for sending, record results.

Enqueueing happens inside the evaluator's transaction, so a state change and its notifications commit
or vanish together. Claiming is a compare-and-set on a lease (`claimed_until`), portable to SQLite
and Postgres: two deliverers never send the same message at once, and a deliverer that dies
mid-send loses its lease, so the message goes out again (at-least-once; receivers dedupe on the
stable `webhook-id`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import CursorResult, Engine, or_, select, update
from sqlalchemy.orm import Session

from tracker.alerts.channels import SendResult
from tracker.alerts.observe import Observation, filters_text
from tracker.config import Settings
from tracker.storage.alert_tables import (
    AlertChannel,
    AlertDeliveryAttempt,
    AlertEvent,
    AlertNotification,
    AlertRule,
)
from tracker.storage.engine import session_scope


def idempotency_key(rule_id: int, kind: str, episode: datetime | None, seq: int = 0) -> str:
    """Stable per (rule, transition, episode): a re-evaluation or a replay produces the same key."""
    basis = f"{rule_id}|{kind}|{episode.isoformat() if episode else '-'}|{seq}"
    return "msg_" + hashlib.sha256(basis.encode()).hexdigest()[:32]


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def build_payload(
    rule: AlertRule,
    kind: str,
    key: str,
    *,
    now: datetime,
    obs: Observation | None,
    previous_state: str,
    reason: str,
) -> dict[str, Any]:
    """The webhook body (Standard Webhooks shape: type, timestamp, data). Money as exact strings."""
    return {
        "type": f"alert.{kind}",
        "timestamp": now.isoformat(),
        "data": {
            "id": key,
            "status": kind,
            "previous_state": previous_state,
            "reason": reason,
            "rule": {
                "id": rule.id,
                "name": rule.name,
                "subject": rule.subject,
                "gpu": rule.gpu_query,
                "gpu_ids": list(rule.gpu_ids),
                "pricing": rule.pricing,
                "reserved_term": rule.reserved_term,
                "providers": rule.providers,
                "regions": rule.regions,
                "filters": filters_text(rule) or None,  # offer filters in words: "available, ≥ 8 GPUs"
                "metric": rule.metric,
                "condition": rule.condition,
                "threshold": _money(rule.threshold),
                "recovery_threshold": _money(rule.recovery_threshold),
            },
            "value": _money(obs.value) if obs else None,
            "best_card": obs.best_card if obs else None,  # a plan rule's best single card type
            "price_per_gpu_hour": _money(obs.price) if obs else None,
            "offers": obs.offers if obs else 0,
            "providers": obs.providers if obs else [],
            "episode_started_at": rule.pending_since.isoformat() if rule.pending_since else None,
        },
    }


def message_text(payload: dict[str, Any]) -> tuple[str, str]:
    """(title, body) for chat/e-mail channels."""
    d = payload["data"]
    r = d["rule"]
    unit = (
        "$/GPU-hour"
        if r["metric"] in ("min", "p25", "median")
        else "$ per run"
        if r["metric"] == "cost_per_run"
        else "$ per month"
        if r["metric"].startswith("plan_")
        else "$ per 1M tokens"
    )
    title = f"[{d['status'].upper()}] {r['name']}"
    if r.get("subject") == "plan":
        card = f", best single card {d['best_card']}" if d.get("best_card") else ""
        subject = f"{r['metric']} of the saved plan: {d['value'] or 'n/a'} {unit}{card}"
    else:
        subject = (
            f"{r['metric']} of {r['gpu']} ({r['pricing']}{' ' + r['reserved_term'] if r.get('reserved_term') else ''}"
            f"{', ' + r['filters'] if r.get('filters') else ''}): "
            f"{d['value'] or 'n/a'} {unit}"
        )
    lines = [
        subject,
        "fires when the best single card changes"
        if r["condition"] == "changes"
        else f"fires {r['condition']} {r['threshold']}, recovers at {r['recovery_threshold']}",
        f"{d['offers']} fresh offers from {', '.join(d['providers']) or 'no provider'}",
        d["reason"],
    ]
    return title, "\n".join(line for line in lines if line)


def enqueue(
    session: Session,
    rule: AlertRule,
    event: AlertEvent | None,
    kind: str,
    key: str,
    payload: dict[str, Any],
    *,
    now: datetime,
    max_attempts: int,
) -> list[AlertNotification]:
    """One outbox row per channel, in the caller's transaction."""
    rows = []
    for channel in rule.channels:
        row = AlertNotification(
            rule_id=rule.id,
            channel_id=channel.id,
            event_id=event.id if event else None,
            kind=kind,
            idempotency_key=key,
            payload=payload,
            status="pending",
            attempts=0,
            max_attempts=max_attempts,
            created_at=now,
            next_attempt_at=now,
        )
        session.add(row)
        rows.append(row)
    session.flush()
    return rows


@dataclass(frozen=True)
class Claimed:
    id: int
    token: str
    attempt: int
    kind: str
    key: str
    payload: dict[str, Any]
    channel_kind: str
    url: str
    secret: str | None
    max_attempts: int
    allow: str | None = None  # the allow-list networks the channel was accepted under (AlertChannel.allow_networks)


def claim_due(
    engine: Engine, *, now: datetime, lease: timedelta, limit: int, ids: list[int] | None = None
) -> list[Claimed]:
    """Take a lease on up to `limit` due messages (or exactly `ids`). Only rows this call won come back."""
    with session_scope(engine) as session:
        stmt = (
            select(AlertNotification.id)
            .where(
                AlertNotification.status == "pending",
                or_(AlertNotification.claimed_until.is_(None), AlertNotification.claimed_until < now),
            )
            .order_by(AlertNotification.next_attempt_at, AlertNotification.id)
            .limit(limit)
        )
        if ids:
            stmt = stmt.where(AlertNotification.id.in_(ids))
        else:
            stmt = stmt.where(AlertNotification.next_attempt_at <= now)
        candidates = list(session.scalars(stmt))
    won: list[Claimed] = []
    for nid in candidates:
        token = secrets.token_hex(8)
        with session_scope(engine) as session:
            # Compare-and-set: only one deliverer's UPDATE matches; Postgres re-checks the WHERE after
            # waiting on a concurrent claimer's row lock, SQLite serialises writers.
            result: CursorResult[Any] = session.execute(  # type: ignore[assignment]  # an UPDATE's cursor result
                update(AlertNotification)
                .where(
                    AlertNotification.id == nid,
                    AlertNotification.status == "pending",
                    or_(AlertNotification.claimed_until.is_(None), AlertNotification.claimed_until < now),
                )
                .values(claimed_until=now + lease, claim_token=token)
            )
            claimed = result.rowcount
            if claimed != 1:
                continue
            n = session.get_one(AlertNotification, nid)
            channel = session.get_one(AlertChannel, n.channel_id)
            won.append(
                Claimed(
                    id=n.id,
                    token=token,
                    attempt=n.attempts + 1,
                    kind=n.kind,
                    key=n.idempotency_key,
                    payload=n.payload,
                    channel_kind=channel.kind,
                    url=channel.url,
                    secret=channel.secret,
                    max_attempts=n.max_attempts,
                    allow=channel.allow_networks,
                )
            )
    return won


def backoff(attempt: int, settings: Settings) -> timedelta:
    """Exponential: base, 2×base, 4×base, … capped at the maximum."""
    return timedelta(seconds=min(settings.alert_retry_base_s * 2 ** (attempt - 1), settings.alert_retry_max_s))


def record(
    engine: Engine,
    claimed: Claimed,
    result: SendResult,
    *,
    started: datetime,
    finished: datetime,
    settings: Settings,
) -> str:
    """Store the attempt and move the message on: delivered, retry later, or failed for good."""
    with session_scope(engine) as session:
        session.add(
            AlertDeliveryAttempt(
                notification_id=claimed.id,
                attempt=claimed.attempt,
                at=started,
                ok=result.ok,
                status_code=result.status_code,
                error=result.error,
                duration_ms=max(0, int((finished - started).total_seconds() * 1000)),
            )
        )
        values: dict[str, Any] = {"attempts": claimed.attempt, "claimed_until": None, "claim_token": None}
        if result.ok:
            status = "delivered"
            values |= {"status": status, "delivered_at": finished, "last_error": None}
        elif result.retryable and claimed.attempt < min(claimed.max_attempts, settings.alert_max_attempts):
            status = "pending"
            values |= {"next_attempt_at": finished + backoff(claimed.attempt, settings), "last_error": result.error}
        else:
            status = "failed"
            values |= {"status": status, "last_error": result.error}
        # Only the lease holder moves the message; a lease that expired mid-send belongs to another.
        session.execute(
            update(AlertNotification)
            .where(AlertNotification.id == claimed.id, AlertNotification.claim_token == claimed.token)
            .values(**values)
        )
    return status

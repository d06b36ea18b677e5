"""The deliverer: drains the outbox, one send per claimed message, every attempt recorded.

Run `deliver_due` periodically (the worker does, every few seconds). Each pass claims due messages,
sends them outside any database transaction (a slow receiver never holds a lock), and records the
outcome; failures retry with exponential backoff until `alert_max_attempts`.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import Engine

from tracker.alerts.channels import SendResult, send_apprise, send_webhook, stored_networks
from tracker.alerts.outbox import Claimed, build_payload, claim_due, enqueue, idempotency_key, message_text, record
from tracker.alerts.ssrf import Resolver, system_resolver
from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.storage.alert_tables import AlertNotification, AlertRule
from tracker.storage.engine import session_scope

log = logging.getLogger(__name__)

Sender = Callable[[Claimed], SendResult]


class Deliverer:
    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        *,
        clock: Clock = utcnow,
        resolver: Resolver = system_resolver,
        webhook_transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock
        self.resolver = resolver
        self.webhook_transport = webhook_transport

    def send(self, message: Claimed) -> SendResult:
        # This process's allow-list, and the one the channel was accepted under (stored with it): a rule added
        # from a shell with TRACKER_WEBHOOK_ALLOW is delivered by a worker started without it.
        allow = (*self.settings.allowed_networks, *stored_networks(message.allow))
        if message.channel_kind == "webhook":
            return send_webhook(
                message.url,
                message.secret,
                message.key,
                message.payload,
                allow,
                timeout_s=self.settings.alert_send_timeout_s,
                resolver=self.resolver,
                now=self.clock(),
                transport=self.webhook_transport,
            )
        if message.channel_kind == "apprise":
            title, body = message_text(message.payload)
            kind = {"firing": "failure", "resolved": "success"}.get(message.kind, "info")
            return send_apprise(
                message.url,
                title,
                body,
                allow,
                resolver=self.resolver,
                notify_type=kind,
                timeout_s=self.settings.alert_send_timeout_s,
            )
        return SendResult(ok=False, error=f"unknown channel type {message.channel_kind!r}")

    def deliver(self, messages: list[Claimed]) -> Counter[str]:
        outcomes: Counter[str] = Counter()
        for message in messages:
            started = self.clock()
            try:
                result = self.send(message)
            except Exception as exc:  # a bug in one channel must not stop the others
                log.exception("sending notification %s failed", message.id)
                result = SendResult(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
            status = record(
                self.engine, message, result, started=started, finished=self.clock(), settings=self.settings
            )
            if not result.ok:
                log.warning(
                    "notification %s (%s, rule channel %s) attempt %d %s: %s",
                    message.id,
                    message.kind,
                    message.channel_kind,
                    message.attempt,
                    "failed for good" if status == "failed" else "failed",
                    result.error,
                )
            outcomes[status] += 1
        return outcomes

    def deliver_due(self) -> Counter[str]:
        """One pass over the due messages: {delivered, pending (will retry), failed} counts."""
        now = self.clock()
        claimed = claim_due(self.engine, now=now, lease=_lease(self.settings), limit=self.settings.alert_batch)
        return self.deliver(claimed)

    def deliver_ids(self, ids: list[int]) -> Counter[str]:
        """Send exactly these messages now, due or not (the `test` command)."""
        claimed = claim_due(self.engine, now=self.clock(), lease=_lease(self.settings), limit=len(ids) or 1, ids=ids)
        return self.deliver(claimed)


def _lease(settings: Settings) -> timedelta:
    return timedelta(seconds=settings.alert_claim_lease_s)


def send_test(
    engine: Engine, rule_id: int, deliverer: Deliverer, *, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Queue a one-shot `test` message to every channel of the rule and send it now.

    Recorded in the outbox and attempt log like any message, but never retried: a test reports what
    happened once. Returns one result per channel. Raises LookupError for a missing rule.
    """
    now = now or deliverer.clock()
    with session_scope(engine) as session:
        rule = session.get(AlertRule, rule_id)
        if rule is None:
            raise LookupError(f"no alert rule {rule_id}")
        key = idempotency_key(rule.id, "test", now, secrets.randbits(32))
        payload = build_payload(
            rule,
            "test",
            key,
            now=now,
            obs=None,
            previous_state=rule.state,
            reason="test notification requested by an operator",
        )
        rows = enqueue(session, rule, None, "test", key, payload, now=now, max_attempts=1)
        ids = {r.id: r.channel_id for r in rows}
    deliverer.deliver_ids(list(ids))
    with session_scope(engine) as session:
        results = []
        for nid, channel_id in ids.items():
            n = session.get_one(AlertNotification, nid)
            results.append(
                {"channel_id": channel_id, "status": n.status, "error": n.last_error, "webhook_id": n.idempotency_key}
            )
        return results

"""Evaluate rules against the store: observe, step the state machine, record events, queue notifications.

Each rule is evaluated in its own transaction, and everything a transition causes (the new state, its
event row, its outbox rows) commits together, so a crash can lose neither a notification nor a state
change without the other. Concurrent evaluators (several workers, or the sweep racing a post-ingest
evaluation) are serialised per rule: Postgres takes the rule's row lock (SELECT … FOR UPDATE), and
the rule's version counter makes a stale writer on any backend fail instead of double-transitioning;
the outbox's unique (channel, idempotency key) is the last guard against a duplicate message.

When evaluation happens: `evaluate_after_ingest` after every scrape run (the worker calls it for the
run's provider whatever the outcome, so a failed run can put rules into no_data), and `evaluate_rules`
from the worker's periodic sweep, which is what notices data going stale and pending periods ending
between scrapes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from tracker.alerts.job_cost import CostModel, default_cost_model
from tracker.alerts.outbox import build_payload, enqueue, idempotency_key
from tracker.alerts.plan_watch import BEST_CARD, PLAN, observe_rule
from tracker.alerts.states import Transition, step, step_change
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.storage.alert_tables import AlertEvent, AlertRule
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

log = logging.getLogger(__name__)


@dataclass
class EvaluationReport:
    evaluated: int = 0
    transitions: list[tuple[int, Transition]] = field(default_factory=list)
    notifications: int = 0
    conflicts: int = 0  # rules another evaluator changed first (skipped, not an error)
    errors: int = 0


def evaluate_rule(
    session: Session,
    rule: AlertRule,
    *,
    now: datetime,
    settings: Settings,
    cost_model: CostModel | None,
) -> tuple[list[Transition], int]:
    """Evaluate one (locked) rule in the caller's transaction: (transitions, notifications queued)."""
    obs = observe_rule(session, rule, now=now, settings=settings, cost_model=cost_model)
    transitions = step_change(rule, obs, now) if rule.metric == BEST_CARD else step(rule, obs, now)
    rule.last_evaluated_at = now
    if obs.value is not None or obs.unmatched:  # unmatched: no offer passes the filters, so no value now
        rule.last_value = obs.value
    silenced = rule.silenced_until is not None and rule.silenced_until > now
    queued = 0
    for t in transitions:
        event = AlertEvent(
            rule_id=rule.id,
            at=now,
            from_state=t.from_state,
            to_state=t.to_state,
            value=obs.value,
            threshold=rule.threshold,
            recovery_threshold=rule.recovery_threshold,
            offers=obs.offers,
            reason=t.reason[:2000],
            notified=False,
        )
        session.add(event)
        session.flush()
        if not t.notify:
            continue
        if silenced:
            event.reason += f" (silenced until {rule.silenced_until.isoformat() if rule.silenced_until else ''})"
            continue
        if not rule.channels:
            continue
        key = idempotency_key(rule.id, t.notify, rule.pending_since, rule.repeats if t.notify == "repeat" else 0)
        payload = build_payload(rule, t.notify, key, now=now, obs=obs, previous_state=t.from_state, reason=t.reason)
        queued += len(
            enqueue(session, rule, event, t.notify, key, payload, now=now, max_attempts=settings.alert_max_attempts)
        )
        event.notified = True
    return transitions, queued


def _touched(session: Session, rules: list[AlertRule], providers: set[str]) -> list[AlertRule]:
    """Rules a run of `providers` can change: the rule names the provider, or the provider lists its subject;
    and every plan rule, since any provider's offers may change where a plan places its workloads."""
    stmt = select(Offer.gpu_id, Offer.pricing, Offer.reserved_term).where(Offer.provider.in_(providers)).distinct()
    pairs = {(gpu, pricing, term) for gpu, pricing, term in session.execute(stmt)}
    out = []
    for rule in rules:
        if rule.subject == PLAN:
            out.append(rule)
            continue
        named = bool(rule.providers) and bool(providers & set(rule.providers or []))
        admitted = not rule.providers or named
        lists_subject = any((g, rule.pricing, rule.reserved_term) in pairs for g in rule.gpu_ids)
        if named or (admitted and lists_subject):
            out.append(rule)
    return out


def evaluate_rules(
    engine: Engine,
    settings: Settings,
    *,
    now: datetime | None = None,
    providers: Iterable[str] | None = None,
    rule_ids: Iterable[int] | None = None,
    cost_model: CostModel | None = None,
) -> EvaluationReport:
    """Evaluate enabled rules (all, those `providers` touch, or `rule_ids`), each in its own transaction."""
    now = now or utcnow()
    cost_model = cost_model or default_cost_model()
    report = EvaluationReport()
    with session_scope(engine) as session:
        stmt = select(AlertRule).where(AlertRule.enabled.is_(True)).order_by(AlertRule.id)
        if rule_ids is not None:
            stmt = stmt.where(AlertRule.id.in_(list(rule_ids)))
        rules = list(session.scalars(stmt))
        if providers is not None:
            rules = _touched(session, rules, set(providers))
        ids = [r.id for r in rules]
    for rule_id in ids:
        try:
            with session_scope(engine) as session:
                rule = session.get(AlertRule, rule_id, with_for_update=True, populate_existing=True)
                if rule is None or not rule.enabled:
                    continue
                transitions, queued = evaluate_rule(session, rule, now=now, settings=settings, cost_model=cost_model)
            report.evaluated += 1
            report.transitions.extend((rule_id, t) for t in transitions)
            report.notifications += queued
        except (StaleDataError, IntegrityError) as exc:
            # Another evaluator moved this rule (or queued this very message) first: its result stands.
            log.info("alert rule %s changed concurrently, skipped: %s", rule_id, type(exc).__name__)
            report.conflicts += 1
        except Exception:  # one broken rule must not stop the others
            log.exception("evaluating alert rule %s failed", rule_id)
            report.errors += 1
    return report


def evaluate_after_ingest(
    engine: Engine,
    settings: Settings,
    provider: str,
    observed_at: datetime,
    *,
    cost_model: CostModel | None = None,
) -> EvaluationReport:
    """Hook for after a scrape run of `provider` (ok or not): evaluate the rules that provider touches."""
    return evaluate_rules(engine, settings, now=observed_at, providers=[provider], cost_model=cost_model)

"""Alert rules on a saved plan: a workload mix re-planned over the live offers at each evaluation.

A plan rule stores the mix document (`tracker.plan.mix`, the file `gpu-tracker plan` reads, validated by
its loader when the rule is created) and is priced exactly as `gpu-tracker plan FILE` prices it: the live
frame, the one freshness rule, the mix's own power budget and overhead factor (`options_for` with no
overrides). Its metric is one of:

* `plan_monthly_cost`: the mixed fleet's monthly cost (`fleet.monthly_cost`), judged below / above a
  threshold by the same state machine, hysteresis and `for` as a price rule (tracker.alerts.states.step);
* `plan_best_card`: the plan's best single card type, `single_card.best` of the planner
  (tracker.plan.planner): the cheapest card type that runs every planned workload alone, each on that
  card's cheapest feasible offer, within the power budget where the mix sets one. That is the card the
  plan would use if it had to pick one type, not the mixed fleet's most used card. The rule fires when it
  differs from the card last announced (tracker.alerts.states.step_change); its value is that
  single-card fleet's monthly cost.

A plan that cannot be judged is no_data, never a value: a workload the plan cannot place (its monthly
cost would leave that workload out and read as a drop), no card type able to run the whole mix (for
plan_best_card), a provider behind a chosen placement whose latest scrape failed (as for price rules: a
failing scrape neither fires nor resolves), a saved mix the current catalog or estimate no longer accepts,
or a monthly cost past what a rule's money columns hold.

Any provider's scrape can change a plan (a new card may win it), so every plan rule is evaluated after every
ingest (tracker.alerts.evaluate._touched).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tracker.alerts.job_cost import CostModel
from tracker.alerts.observe import Observation, RuleSubject, failing_providers, observe
from tracker.config import Settings
from tracker.money import to_money
from tracker.plan.mix import MixError, WorkloadMix, parse_source, validate_mix
from tracker.plan.service import options_for, plan_live

PLAN = "plan"  # the subject of a plan rule (AlertRule.subject; "offers" for every other rule)
MONTHLY_COST = "plan_monthly_cost"
BEST_CARD = "plan_best_card"
PLAN_METRICS = (MONTHLY_COST, BEST_CARD)
CHANGES = "changes"  # the condition of a plan_best_card rule: it has no threshold
# What the rule's money columns (Numeric(14, 6)) hold: a larger monthly cost cannot be stored as a value.
MAX_VALUE = Decimal("1e8")


class PlanSubject(Protocol):
    subject: str
    metric: str
    plan_mix: dict[str, Any] | None


def read_mix(value: object) -> tuple[WorkloadMix, dict[str, Any]]:
    """A mix given as a parsed document or as its YAML / JSON text → (the mix, the document a rule stores).

    The stored document is the validated mix written out again, so what is re-read at each evaluation is
    plain JSON whatever the source was (a YAML date or alias included). MixError names the field."""
    raw = parse_source(value) if isinstance(value, str) else value
    mix = validate_mix(raw)
    return mix, mix.model_dump(mode="json", exclude_defaults=True)


def _engine(session: Session) -> Engine:
    bind = session.get_bind()
    return bind if isinstance(bind, Engine) else bind.engine


def observe_plan(session: Session, rule: PlanSubject, *, now: datetime, settings: Settings) -> Observation:
    """The plan of the rule's mix on the live offers now: its monthly cost, or its best single card."""
    try:
        mix = validate_mix(rule.plan_mix)
    except MixError as exc:
        return Observation(None, no_data=f"the saved mix is no longer valid: {exc.message}"[:1000])
    result = plan_live(_engine(session), session, settings, now, mix, options_for(mix))
    offers = int(result["live_offers"])
    placed = [w["choice"] for w in result["workloads"] if w["choice"] is not None]
    best = result["single_card"]["best"]
    used = {str(c["provider"]) for c in placed}
    if rule.metric == BEST_CARD and best is not None:
        used |= {str(a["provider"]) for a in best["assignments"]}
    providers = sorted(used)
    if result["unplanned"]:
        first = next(w for w in result["workloads"] if w["status"] != "ok")
        why = f"the plan cannot place {', '.join(result['unplanned'])} ({first['name']}: {first['reason']})"
        return Observation(None, offers, providers, no_data=why[:1000])
    failing = failing_providers(session, used)
    if failing:
        detail = "; ".join(f"{p} {why}" for p, why in sorted(failing.items()))
        return Observation(None, offers, providers, no_data=f"latest run failed: {detail}"[:1000])
    best_card = None if best is None else str(best["gpu"])
    if rule.metric == BEST_CARD:
        if best is None:
            return Observation(None, offers, providers, no_data=str(result["single_card"]["note"]))
        value = to_money(best["monthly_cost"])
    else:
        value = to_money(result["fleet"]["monthly_cost"])
    if value >= MAX_VALUE:
        return Observation(None, offers, providers, no_data=f"the monthly cost ${value:,.2f} is past what a rule holds")
    return Observation(value, offers, providers, best_card=best_card)


class AnyRule(RuleSubject, PlanSubject, Protocol):
    pass


def observe_rule(
    session: Session, rule: AnyRule, *, now: datetime, settings: Settings, cost_model: CostModel | None
) -> Observation:
    """What any rule sees now: a plan rule its plan, every other rule its offers (tracker.alerts.observe)."""
    if rule.subject == PLAN:
        return observe_plan(session, rule, now=now, settings=settings)
    return observe(session, rule, now=now, settings=settings, cost_model=cost_model)


__all__ = [
    "BEST_CARD",
    "CHANGES",
    "MONTHLY_COST",
    "PLAN",
    "PLAN_METRICS",
    "observe_plan",
    "observe_rule",
    "read_mix",
]

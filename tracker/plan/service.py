"""What the CLI and the API serve about a workload mix: the plan on live offers, and the plan over time.

Both read the cached live frame (`tracker.market.live`) and judge freshness by the one rule. The plan over
time reprices each workload's placements (today's cheapest feasible node of each card: GPUs per node,
pricing type, billed GPU-hours) at a daily market statistic of that card's $/GPU-hour over the last days
(`tracker.market.statistics.history`), the way `/v1/rank/history` reprices a job. It therefore shows
whether the mixed fleet's advantage holds across the period, not which single offer was cheapest on a
past day (per-card statistics, not per-offer; provider and region constraints shape the placements,
not the past prices).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tracker import money
from tracker.config import Settings
from tracker.costs import TermColumns
from tracker.estimate import EstimateError
from tracker.estimate.serving.job import SECONDS_PER_MONTH
from tracker.inference_apis import api_alternatives
from tracker.market import freshness, statistics
from tracker.market.live import LiveOffers, fresh_mask
from tracker.market.service import live_market
from tracker.market.table import OfferTable
from tracker.plan.mix import SERVING_KINDS, TRAINING_KINDS, WorkloadMix
from tracker.plan.planner import Evaluation, PlanOptions, evaluate, plan
from tracker.plan.serving import serving_estimator

STATISTICS = ("min", "p25", "median")


def options_for(mix: WorkloadMix, power_budget_kw: float | None = None, overhead: float | None = None) -> PlanOptions:
    """The mix's own power budget and overhead unless the caller (a CLI flag, an API field) overrides them."""
    return PlanOptions(
        power_budget_kw=power_budget_kw if power_budget_kw is not None else mix.power_budget_kw,
        overhead_factor=overhead if overhead is not None else mix.overhead_factor,
    )


def plan_live(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    mix: WorkloadMix,
    options: PlanOptions,
    *,
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    frame, terms = live_market(engine, session, live)
    return plan_on_frame(frame, terms, settings, now, mix, options)


def plan_on_frame(
    frame: OfferTable, terms: TermColumns, settings: Settings, now: datetime, mix: WorkloadMix, options: PlanOptions
) -> dict[str, Any]:
    """The plan on a live frame and its cost terms already read (`tracker.market.service.live_market`): CPU
    only, so a caller can release its connection first."""
    fresh, stale = fresh_mask(frame, now, settings), freshness.stale_sheets(now, settings)
    result = plan(frame, fresh, mix, now, options=options, serving=serving_estimator(), terms=terms, stale=stale)
    with_api_alternatives(result, mix, now)
    return result


def with_api_alternatives(result: dict[str, Any], mix: WorkloadMix, now: datetime) -> None:
    """Each placed serving workload gets `api_alternatives`: the model's serverless APIs, what its load
    would cost a month through each, which is cheaper, and the break-even volume on the chosen node."""
    jobs = {w.name: w for w in mix.workloads if w.kind in SERVING_KINDS}
    for row in result["workloads"]:
        workload, choice = jobs.get(row["name"]), row.get("choice")
        if workload is None or choice is None:
            continue
        try:
            spec = workload.job_input().serving_spec()
        except EstimateError:  # a model file the server may not open: planned, but nothing to compare
            continue
        alt = api_alternatives(spec.model.id, spec.prompt_tokens, spec.output_tokens, choice, now)
        monthly_tokens = float(row["demand"]["average_tokens_per_second"]) * SECONDS_PER_MONTH
        for api in alt["apis"]:
            api["monthly_cost"] = money.to_money(api["usd_per_mtok"] * Decimal(repr(monthly_tokens)) / 1_000_000)
        alt["demand_tokens_per_month"] = monthly_tokens
        own = Decimal(str(choice["monthly_cost"]))
        cheapest = alt["cheapest_api"]
        alt["cheaper"] = None if cheapest is None else ("api" if cheapest["monthly_cost"] < own else "self-hosted")
        row["api_alternatives"] = alt


def plan_history(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    mix: WorkloadMix,
    options: PlanOptions,
    *,
    days: int = 90,
    statistic: str = "median",
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    """Per day: the mixed fleet's monthly cost, each workload's card, and the best single-card fleet."""
    frame, terms = live_market(engine, session, live)
    evaluated = history_placements(frame, terms, settings, now, mix, options, statistic)
    prices = history_prices(session, settings, now, evaluated, days, statistic)
    return history_points(now, mix, evaluated, prices, days, statistic)


def history_placements(
    frame: OfferTable,
    terms: TermColumns,
    settings: Settings,
    now: datetime,
    mix: WorkloadMix,
    options: PlanOptions,
    statistic: str,
) -> list[Evaluation]:
    """Today's feasible placements of each workload, chosen as the plan chooses them (CPU only: no database)."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}")
    fresh, stale = fresh_mask(frame, now, settings), freshness.stale_sheets(now, settings)
    evaluated = evaluate(frame, fresh, mix, options, serving_estimator(), terms, stale)
    return [ev for ev in evaluated if ev.status == "ok"]


# A placement's price series: (card, pricing type, reservation term or None).
PriceKey = tuple[str, str, str | None]


def _key(gid: str, o: Any) -> PriceKey:
    return (gid, o.pricing, o.reserved_term)


def history_prices(
    session: Session, settings: Settings, now: datetime, evaluated: list[Evaluation], days: int, statistic: str
) -> dict[PriceKey, dict[datetime, Decimal]]:
    """The daily statistic of each (card, pricing, term) the placements use: the only database reads of a
    history. A reserved placement is repriced at its own term's prices: a 3-year placement at 3-year rates."""
    start, end = now - timedelta(days=days), now
    prices: dict[PriceKey, dict[datetime, Decimal]] = {}
    for ev in evaluated:
        for gid, o in ev.by_card.items():
            key = _key(gid, o)
            if key not in prices:
                include_reference = ev.workload.constraints.include_reference
                buckets = statistics.history(
                    session,
                    gpu_ids=[gid],
                    pricing=o.pricing,
                    reserved_term=o.reserved_term,
                    interval="1d",
                    start=start,
                    end=end,
                    now=now,
                    settings=settings,
                    include_reference=include_reference,
                )
                prices[key] = {b["bucket"]: b[statistic] for b in buckets}
    return prices


def _day_point(
    day: datetime, evaluated: list[Evaluation], prices: dict[PriceKey, dict[datetime, Decimal]]
) -> dict[str, Any]:
    per_workload: list[dict[str, Any]] = []
    by_card_total: dict[str, Decimal] = {}
    complete_cards: set[str] | None = None
    mixed: Decimal | None = Decimal(0)
    for ev in evaluated:
        costs = {}
        for gid, o in ev.by_card.items():
            price = prices[_key(gid, o)].get(day)
            if price is not None:
                # Billed GPU-hours of today's placement on this card × that day's $/GPU-hour.
                costs[gid] = money.cost(price, o.billed_node_hours * o.combo.gpus)
        for gid, c in costs.items():
            by_card_total[gid] = by_card_total.get(gid, Decimal(0)) + c
        complete_cards = set(costs) if complete_cards is None else complete_cards & set(costs)
        if not costs:
            per_workload.append({"workload": ev.workload.name, "gpu": None, "monthly_cost": None})
            mixed = None
            continue
        gid = min(costs, key=lambda g: (costs[g], g))
        per_workload.append({"workload": ev.workload.name, "gpu": gid, "monthly_cost": costs[gid]})
        if mixed is not None:
            mixed += costs[gid]
    singles = {g: by_card_total[g] for g in complete_cards or set()}
    single = min(singles, key=lambda g: (singles[g], g)) if singles else None
    return {
        "day": day,
        "monthly_cost": None if mixed is None else money.to_money(mixed),
        "single_card": single,
        "single_card_monthly_cost": None if single is None else money.to_money(singles[single]),
        "saving": None if mixed is None or single is None else money.to_money(singles[single] - mixed),
        "choices": per_workload,
    }


def history_points(
    now: datetime,
    mix: WorkloadMix,
    evaluated: list[Evaluation],
    prices: dict[PriceKey, dict[datetime, Decimal]],
    days: int,
    statistic: str,
) -> dict[str, Any]:
    """The plan over time from the placements and their cards' daily prices (CPU only: no database)."""
    days_seen = sorted({d for series in prices.values() for d in series})
    points = [_day_point(day, evaluated, prices) for day in days_seen]
    savings: list[Decimal] = [p["saving"] for p in points if p["saving"] is not None]
    return {
        "as_of": now,
        "days": days,
        "statistic": statistic,
        "workloads": [
            {
                "name": ev.workload.name,
                "kind": ev.workload.kind,
                "training": ev.workload.kind in TRAINING_KINDS,
                "cards": sorted(ev.by_card),
            }
            for ev in evaluated
        ],
        "unplanned": [w.name for w in mix.workloads if w.name not in {ev.workload.name for ev in evaluated}],
        "points": points,
        "summary": {
            "days_with_saving": sum(1 for s in savings if s > 0),
            "days_compared": len(savings),
            "min_saving": min(savings) if savings else None,
            "max_saving": max(savings) if savings else None,
        },
        "method": "today's placements repriced at the daily " + statistic + " $/GPU-hour of each card",
    }


__all__ = [
    "STATISTICS",
    "PriceKey",
    "history_placements",
    "history_points",
    "history_prices",
    "options_for",
    "plan_history",
    "plan_live",
    "plan_on_frame",
]

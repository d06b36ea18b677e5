"""What the API and the CLI serve about the market: snapshot, history, ranking, ranking over time.

Each function takes an engine, a session and "now", reads the cached live frame (tracker.market.live) where it
can, and returns plain dicts ready for JSON. Shells stay thin: they parse input and format output.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.costs import RunPlan, TermColumns, load_stated, resolve, run_total, term_columns
from tracker.estimate import PreparedJob
from tracker.estimate.serving import PreparedServing
from tracker.inference_apis import api_alternatives
from tracker.market import freshness
from tracker.market import statistics as market
from tracker.market import terms as term_structure
from tracker.market.live import LiveOffers, fresh_mask, live_table
from tracker.market.rank import RankFilters, RankOptions, estimates_key, rank
from tracker.market.table import OfferTable

# Multi-GPU machine sizes tried when pricing a job from per-GPU market statistics.
MACHINE_SIZES = (1, 2, 4, 8)


def market_snapshot(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    gpu_ids: Sequence[str] | None = None,
    pricing: Sequence[str] | None = None,
    include_reference: bool = True,
    max_age: timedelta | None = None,
    aggregated: str = "include",
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    table = live_table(live)
    version, frame = table.frame(engine, session)
    params = (
        "market",
        tuple(gpu_ids or ()),
        tuple(pricing or ()),
        include_reference,
        max_age,
        aggregated,
        freshness.signature(settings),
        now.replace(second=0, microsecond=0),
    )
    sheets = freshness.sheet_ages(now, settings)

    def compute() -> list[dict[str, Any]]:
        fresh = fresh_mask(frame, now, settings, max_age)
        stale = frozenset(name for name, age in sheets.items() if age.stale)
        stats = market.snapshot(
            frame.frame,
            fresh=fresh,
            gpu_ids=gpu_ids,
            pricing=pricing,
            include_reference=include_reference,
            aggregated=aggregated,
            stale_sheets=stale,
        )
        return [s.as_dict() | {"age_s": (now - s.freshest).total_seconds()} for s in stats]

    rows = table.memo(engine, version, params, compute)
    # Every rate sheet's age, stale or not: a client shows which reference prices are old (the dashboard).
    listed = [age.as_dict() for age in sheets.values()] if include_reference else []
    return {"as_of": now, "data_version": version, "cards": rows, "sheets": listed}


def market_history(
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    gpu_ids: Sequence[str],
    pricing: str,
    interval: str,
    start: datetime,
    end: datetime,
    include_reference: bool = True,
    reserved_term: str | None = None,
    aggregated: str = "include",
) -> list[dict[str, Any]]:
    return market.history(
        session,
        gpu_ids=gpu_ids,
        pricing=pricing,
        reserved_term=reserved_term,
        interval=interval,
        start=start,
        end=end,
        now=now,
        settings=settings,
        include_reference=include_reference,
        aggregated=aggregated,
    )


def market_terms(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    gpu_ids: Sequence[str],
    days: int | None = None,
    include_reference: bool = True,
    aggregated: str = "include",
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    """The term structure of each card id that has live offers (tracker.market.terms); with `days`, each
    term's daily distribution over the last `days` days too."""
    snapshot = market_snapshot(
        engine,
        session,
        settings,
        now,
        gpu_ids=gpu_ids,
        include_reference=include_reference,
        aggregated=aggregated,
        live=live,
    )
    listed = [g for g in gpu_ids if any(c["gpu"] == g for c in snapshot["cards"])]
    cards = term_structure.curve(snapshot["cards"], listed)
    if days is not None:
        start = now - timedelta(days=days)
        for card in cards:
            card["history"] = term_structure.history(
                session, settings, now, card["gpu"], start=start, include_reference=include_reference
            )
    return {"as_of": now, "data_version": snapshot["data_version"], "days": days, "cards": cards}


def rank_offers(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    prepared: PreparedJob | PreparedServing,
    filters: RankFilters,
    options: RankOptions,
    max_age: timedelta | None = None,
    plan: RunPlan | None = None,
    *,
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    """`plan` (the job's extras, tracker.costs.plan_for): rank on the whole run's cost; None: GPU time only."""
    table = live_table(live)
    version, frame = table.frame(engine, session)
    fresh = fresh_mask(frame, now, settings, max_age)
    # A run's whole cost needs every offer's terms; so does serving on spot, priced at its uptime (the
    # interruption rate and download bandwidth are terms). Serving on-demand alone reads none.
    spot_serving = isinstance(prepared, PreparedServing) and "spot" in (filters.pricing_values() or ())
    terms = cost_terms(engine, session, table, version, frame) if plan is not None or spot_serving else None
    # Estimates per (card, GPU count, slice) depend only on the job (for fine-tuning, not even on its size:
    # estimates_key): shared by its rankings on this version.
    a = prepared.assumptions
    key = ("rank-estimates", estimates_key(prepared), a.name)
    held, estimates = table.memo(engine, version, key, lambda: (a, {}))
    shared = estimates if held is a or held == a else None
    stale = freshness.stale_sheets(now, settings)
    result = rank(frame, fresh, prepared, filters, options, now, estimates=shared, plan=plan, terms=terms, stale=stale)
    extras = {"plan": plan.describe() if plan is not None else None, "gpu_only": plan is None or options.gpu_only}
    if isinstance(prepared, PreparedServing):  # serving: calling an API per token is the alternative to renting
        extras["api_alternatives"] = serving_alternatives(prepared, result["rows"], now)
    return result | extras | {"assumptions": prepared.assumptions.name, "job": prepared.job.describe(), "as_of": now}


COST_TERMS = ("cost-terms",)  # their memo key
# The memo entries a table kept on disk carries (tracker.market.spill), for the CLI and the API alike: the
# offers' cost terms, seconds to build at 200,000 offers.
KEPT_WITH_TABLE = (COST_TERMS,)


def cost_terms(engine: Engine, session: Session, table: LiveOffers, version: int, frame: OfferTable) -> TermColumns:
    """Every live offer's cost terms (tracker.costs.frame), once per data version: what the ranking and the
    plan price a whole run with."""
    terms: TermColumns = table.memo(engine, version, COST_TERMS, lambda: _term_columns(session, frame))
    return terms


def _term_columns(session: Session, frame: OfferTable) -> TermColumns:
    return term_columns(frame["id"], frame["provider"], frame["pricing"], frame["reliability_f"], load_stated(session))


def warm_statistics(session: Session, version: int, frame: OfferTable) -> list[tuple[object, object]]:
    """A `tracker.market.live.Warmer`: the pandas view the market statistics group (`OfferTable.frame`),
    built with a rebuilt table in the background (~1 s at 200,000 offers) rather than by the first
    `/v1/market` after the swap. Nothing is memoised: the view is kept on the table itself."""
    _ = frame.frame
    return []


def warm_cost_terms(session: Session, version: int, frame: OfferTable) -> list[tuple[object, object]]:
    """A `tracker.market.live.Warmer`: the cost terms of a rebuilt table, built with it in the background
    (~1 s at 200,000 offers), so the first whole-run ranking after an ingest does not compute them."""
    return [(COST_TERMS, _term_columns(session, frame))]


def live_market(engine: Engine, session: Session, live: LiveOffers | None = None) -> tuple[OfferTable, TermColumns]:
    """The live frame and its offers' cost terms, read on `session` (a caller may release it after)."""
    table = live_table(live)
    version, frame = table.frame(engine, session)
    return frame, cost_terms(engine, session, table, version, frame)


def serving_alternatives(prepared: PreparedServing, rows: Sequence[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """The model's serverless API prices beside the ranked offer that serves it cheapest per token: an
    on-demand one where the ranking has one (an API does not vanish mid-answer; a spot machine may)."""
    priced = [r for r in rows if r.get("fits") and r.get("usd_per_mtok") is not None]
    steady = [r for r in priced if r.get("pricing") == "on_demand"] or priced
    best = min(steady, key=lambda r: r["usd_per_mtok"]) if steady else None
    job = prepared.job
    return api_alternatives(job.model.id, job.prompt_tokens, job.output_tokens, best, now)


def cheapest_machine(prepared: PreparedJob | PreparedServing, gpu_id: str) -> tuple[int, Any] | None:
    """The smallest machine of this card (1, 2, 4 or 8 GPUs) the job fits on, with its estimate."""
    card = get_catalog().get(gpu_id)
    for n in MACHINE_SIZES:
        est = prepared.on(card, n)
        if est.fits:
            return n, est
    return None


def rank_history(
    session: Session,
    settings: Settings,
    now: datetime,
    prepared: PreparedJob | PreparedServing,
    *,
    gpu_ids: Sequence[str],
    pricing: str,
    statistic: str,
    start: datetime,
    end: datetime,
    include_reference: bool = True,
    plan: RunPlan | None = None,
    gpu_only: bool = False,
    reserved_term: str | None = None,
) -> dict[str, Any]:
    """Cost per run per card per day, from a daily market statistic of $/GPU-hour. With `plan` (and not
    `gpu_only`) the cost is the whole run's under the default cost terms of `pricing` (a statistic over
    providers has no one provider's terms: tracker.costs.terms.DEFAULTS); `gpu_cost_per_run` is GPU time.
    A reserved history is of one `reserved_term` (market.commitment: never a blend of terms)."""
    term = market.commitment(pricing, reserved_term)
    series = []
    for gpu_id in gpu_ids:
        machine = cheapest_machine(prepared, gpu_id)
        if machine is None:
            series.append({"gpu": gpu_id, "fits": False, "points": []})
            continue
        gpus, est = machine
        buckets = market.history(
            session,
            gpu_ids=[gpu_id],
            pricing=pricing,
            reserved_term=term,
            interval="1d",
            start=start,
            end=end,
            now=now,
            settings=settings,
            include_reference=include_reference,
        )
        points = [
            {
                "day": b["bucket"],
                "price_per_gpu_hour": b[statistic],
                "cost_per_run": money.cost(b[statistic] * gpus, est.hours),
                "offers": b["offers"],
                # Serving's figure (and fine-tuning's $/Mtok): the machine's price over its tokens/s.
                "usd_per_mtok": money.per_million_tokens(b[statistic] * gpus, est.tokens_per_second),
            }
            for b in buckets
        ]
        if plan is not None:
            defaults = resolve("", pricing)
            for p in points:
                p["gpu_cost_per_run"] = p["cost_per_run"]
                if not gpu_only:
                    p["cost_per_run"] = run_total(p["price_per_gpu_hour"] * gpus, est.hours, defaults, plan)
        series.append(
            {
                "gpu": gpu_id,
                "fits": True,
                "gpus": gpus,
                "hours": round(est.hours, 3),
                "tokens_per_second": round(est.tokens_per_second, 1),
                "points": points,
            }
        )
    return {
        "assumptions": prepared.assumptions.name,
        "job": prepared.job.describe(),
        "statistic": statistic,
        "pricing": pricing,
        "reserved_term": term,
        "series": series,
    }


__all__ = [
    "COST_TERMS",
    "KEPT_WITH_TABLE",
    "cheapest_machine",
    "cost_terms",
    "live_market",
    "market_history",
    "market_snapshot",
    "market_terms",
    "rank_history",
    "rank_offers",
    "warm_cost_terms",
    "warm_statistics",
]

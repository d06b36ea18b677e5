"""POST /v1/rank and /v1/rank/history: offers ranked for one fine-tuning job, now and over time.

Both are served from encoded answers memoised per (data version, validated body, minute) (api.cached).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field, ValidationInfo, field_validator
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Live, Now
from providers.contract import Pricing
from tracker.catalog.gpus import get_catalog
from tracker.costs import RunPlan, plan_for
from tracker.estimate import JobInput, PreparedJob, prepare
from tracker.estimate.serving import PreparedServing, prepare_serving
from tracker.market.filters import OfferFilters
from tracker.market.offers import gpu_ids_for
from tracker.market.rank import RANKS_LIVE, RankFilters, RankOptions
from tracker.market.responses import RankAnswer, RankHistory
from tracker.market.service import rank_history, rank_offers
from tracker.market.statistics import TermError, commitment

router = APIRouter(prefix="/v1", tags=["rank"])


class RankBody(JobInput, OfferFilters):
    """The job, the offer filters (tracker.market.filters, by their own names) and how to rank."""

    gpu: str | None = Field(None, max_length=100, description="Only this card, family or alias.")
    max_hours: float | None = Field(None, gt=0)
    max_age_hours: float | None = Field(None, gt=0, le=24 * 365)
    sort_by: Literal["cost_per_run", "hours", "usd_per_mtok"] = "cost_per_run"
    include_unfit: bool = Field(False, description="List offers the job does not fit, with the reason.")
    best_per_card: bool = Field(False, description="Only the best offer of each card.")
    limit: int = Field(50, ge=1, le=1000)
    gpu_only: bool = Field(False, description="cost_per_run is GPU time alone (no disk, transfer, interruptions).")
    live: Literal[True] | None = Field(None, description=RANKS_LIVE)


class RankHistoryBody(JobInput):
    gpu: str | None = Field(None, max_length=100, description="Card, family or alias; default: the job's top cards.")
    pricing: Pricing = Pricing.on_demand
    term: str | None = Field(
        None,
        max_length=16,
        validate_default=True,
        description="The reservation term of pricing=reserved (1d, 7d, 1mo, 3mo, 1y, 3y): terms are never blended.",
    )
    statistic: Literal["min", "p25", "median"] = "median"
    days: int = Field(90, ge=1, le=3650)

    @field_validator("term")
    @classmethod
    def _one_term(cls, term: str | None, info: ValidationInfo) -> str | None:
        pricing = info.data.get("pricing")
        if pricing is None:  # pricing itself was invalid: its own error says so
            return term
        try:
            return commitment(Pricing(pricing).value, term)
        except TermError as exc:
            raise ValueError(str(exc)) from None

    include_reference: bool = True
    gpu_only: bool = Field(False, description="cost_per_run is GPU time alone, not the whole run.")


def _job(body: JobInput) -> tuple[PreparedJob | PreparedServing, RunPlan | None]:
    """The prepared job and its run's extras. An inference job (kind inference) is priced on GPU time
    alone: serving traffic has no dataset, checkpoints or finish line."""
    if body.kind == "inference":
        return prepare_serving(body.serving_spec()), None
    spec = body.spec()
    return prepare(spec, body.assumptions), plan_for(body, spec)


def _filters(body: RankBody) -> RankFilters:
    own = {name: getattr(body, name) for name in OfferFilters.model_fields}
    return RankFilters(**own, gpu_ids=gpu_ids_for(body.gpu) if body.gpu else None, max_hours=body.max_hours)


@router.post("/rank", response_model=RankAnswer)
async def post_rank(body: RankBody, request: Request, now: Now, live: Live) -> Any:
    """Live offers ranked by cost per run (or hours, or $/Mtoken) for the job."""
    engine, settings = request.app.state.engine, request.app.state.settings

    def compute(session: Session) -> dict[str, Any]:
        # Errors (unknown model, GPU, bad job) propagate in the order they always did and are never cached.
        prepared, plan = _job(body)
        filters = _filters(body)
        options = RankOptions(
            sort_by=body.sort_by,
            include_unfit=body.include_unfit,
            best_per_card=body.best_per_card,
            limit=body.limit,
            gpu_only=body.gpu_only,
        )
        max_age = timedelta(hours=body.max_age_hours) if body.max_age_hours else None
        return rank_offers(engine, session, settings, now, prepared, filters, options, max_age, plan, live=live)

    return json_response(await market_answer(request, ("rank", body.model_dump_json()), compute, now, as_of="last"))


@router.post("/rank/history", response_model=RankHistory)
async def post_rank_history(body: RankHistoryBody, request: Request, now: Now) -> Any:
    """Cost per run of the job per card per day, from a daily market statistic of $/GPU-hour."""
    settings = request.app.state.settings

    def compute(session: Session) -> dict[str, Any]:
        prepared, plan = _job(body)
        ids = gpu_ids_for(body.gpu) if body.gpu else [g.id for g in get_catalog().all()]
        result = rank_history(
            session,
            settings,
            now,
            prepared,
            gpu_ids=ids,
            pricing=body.pricing.value,
            reserved_term=body.term,
            statistic=body.statistic,
            start=now - timedelta(days=body.days),
            end=now,
            include_reference=body.include_reference,
            plan=plan,
            gpu_only=body.gpu_only,
        )
        if not body.gpu:  # all cards: keep those with data, so the answer stays small
            result["series"] = [s for s in result["series"] if s["points"]]
        return result

    return json_response(await market_answer(request, ("rank-history", body.model_dump_json()), compute, now))

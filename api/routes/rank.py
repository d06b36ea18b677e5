"""POST /v1/rank and /v1/rank/history: offers ranked for one fine-tuning job, now and over time.

Both are served from encoded answers memoised per (data version, validated body, minute) (api.cached).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field, model_validator

from api.cached import cached_body, json_response, minute, with_field
from providers.contract import Pricing
from tracker.catalog.gpus import get_catalog
from tracker.clock import utcnow
from tracker.costs import RunPlan, plan_for
from tracker.estimate import JobInput, PreparedJob, prepare
from tracker.estimate.serving import PreparedServing, prepare_serving
from tracker.market import freshness
from tracker.market.fabric import INTERCONNECT_HELP, MAX_NODES, MIN_NODES_HELP, Interconnect
from tracker.market.offers import gpu_ids_for
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import rank_history, rank_offers
from tracker.storage.engine import session_scope

router = APIRouter(prefix="/v1", tags=["rank"])


class RankBody(JobInput):
    gpu: str | None = Field(None, max_length=100, description="Only this card, family or alias.")
    providers: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=100)
    pricing: list[Pricing] | None = None
    regions: list[Annotated[str, Field(max_length=128)]] | None = Field(None, max_length=100)
    min_gpus: float | None = Field(None, gt=0, le=1024)
    max_gpus: float | None = Field(None, gt=0, le=1024)
    max_hours: float | None = Field(None, gt=0)
    include_reference: bool = True
    aggregated: Literal["include", "exclude", "dedupe"] = Field(
        "include", description="Offers resold by aggregators: count them, leave them out, or each machine once."
    )
    available_only: bool = Field(False, description="Only offers the provider says are available.")
    # Quality filters; offers that do not state an attribute: see tracker.market.quality.
    verified_only: bool = Field(False, description="Only verified machines (stated, or a cloud's own).")
    datacenter_only: bool = Field(False, description="Only datacenter-hosted machines (stated, or a cloud's own).")
    min_reliability: float | None = Field(None, ge=0, le=1, description="Host reliability score, 0-1.")
    cloud: Literal["secure", "community"] | None = None
    interconnect: Interconnect | None = Field(None, description=INTERCONNECT_HELP)
    min_nodes: int | None = Field(None, ge=1, le=MAX_NODES, description=MIN_NODES_HELP)
    max_age_hours: float | None = Field(None, gt=0, le=24 * 365)
    sort_by: Literal["cost_per_run", "hours", "usd_per_mtok"] = "cost_per_run"
    include_unfit: bool = Field(False, description="List offers the job does not fit, with the reason.")
    best_per_card: bool = Field(False, description="Only the best offer of each card.")
    limit: int = Field(50, ge=1, le=1000)
    gpu_only: bool = Field(False, description="cost_per_run is GPU time alone (no disk, transfer, interruptions).")

    @model_validator(mode="after")
    def _gpu_range(self) -> RankBody:
        if self.min_gpus is not None and self.max_gpus is not None and self.min_gpus > self.max_gpus:
            raise ValueError("min_gpus must not exceed max_gpus")
        return self


class RankHistoryBody(JobInput):
    gpu: str | None = Field(None, max_length=100, description="Card, family or alias; default: the job's top cards.")
    pricing: Pricing = Pricing.on_demand
    statistic: Literal["min", "p25", "median"] = "median"
    days: int = Field(90, ge=1, le=3650)
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
    return RankFilters(
        providers=body.providers, pricing=[p.value for p in body.pricing or []] or None, regions=body.regions,
        gpu_ids=gpu_ids_for(body.gpu) if body.gpu else None, min_gpus=body.min_gpus, max_gpus=body.max_gpus,
        max_hours=body.max_hours, include_reference=body.include_reference, available_only=body.available_only,
        verified_only=body.verified_only, datacenter_only=body.datacenter_only, min_reliability=body.min_reliability,
        cloud=body.cloud, aggregated=body.aggregated, interconnect=body.interconnect, min_nodes=body.min_nodes,
    )  # fmt: skip


@router.post("/rank", response_model=None)
async def post_rank(body: RankBody, request: Request) -> Any:
    """Live offers ranked by cost per run (or hours, or $/Mtoken) for the job."""
    now = utcnow()
    engine, settings = request.app.state.engine, request.app.state.settings

    def compute() -> dict[str, Any]:
        # Errors (unknown model, GPU, bad job) propagate in the order they always did and are never cached.
        prepared, plan = _job(body)
        filters = _filters(body)
        options = RankOptions(sort_by=body.sort_by, include_unfit=body.include_unfit,
                              best_per_card=body.best_per_card, limit=body.limit, gpu_only=body.gpu_only)  # fmt: skip
        max_age = timedelta(hours=body.max_age_hours) if body.max_age_hours else None
        with session_scope(engine) as session:
            result = rank_offers(engine, session, settings, now, prepared, filters, options, max_age, plan)
        del result["as_of"]  # the request's own, added below
        return result

    key = ("rank", body.model_dump_json(), freshness.signature(settings), minute(now))
    return json_response(with_field(await cached_body(request, key, compute), "as_of", now, first=False))


@router.post("/rank/history", response_model=None)
async def post_rank_history(body: RankHistoryBody, request: Request) -> Any:
    """Cost per run of the job per card per day, from a daily market statistic of $/GPU-hour."""
    now = utcnow()
    engine, settings = request.app.state.engine, request.app.state.settings

    def compute() -> dict[str, Any]:
        prepared, plan = _job(body)
        ids = gpu_ids_for(body.gpu) if body.gpu else [g.id for g in get_catalog().all()]
        with session_scope(engine) as session:
            result = rank_history(
                session, settings, now, prepared, gpu_ids=ids, pricing=body.pricing.value,
                statistic=body.statistic, start=now - timedelta(days=body.days), end=now,
                include_reference=body.include_reference, plan=plan, gpu_only=body.gpu_only,
            )  # fmt: skip
        if not body.gpu:  # all cards: keep those with data, so the answer stays small
            result["series"] = [s for s in result["series"] if s["points"]]
        return result

    key = ("rank-history", body.model_dump_json(), freshness.signature(settings), minute(now))
    return json_response(await cached_body(request, key, compute))

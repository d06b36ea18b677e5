"""POST /v1/plan and /v1/plan/history: a workload mix placed on live offers, now and over the last days.

The body is the mix itself (`tracker.plan.mix.WorkloadMix`: the same schema as a mix file) or its text,
YAML or JSON, in `source` (what the dashboard's editor and upload send), parsed by the same loader as
`gpu-tracker plan FILE`, so a bad mix gets the same message naming the workload and the field.
Answers are memoised per (data version, body, minute) like /v1/rank (api.cached).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Live, Now
from api.validation import FieldError
from tracker.plan.mix import (
    DEFAULT_OVERHEAD,
    MAX_WORKLOADS,
    MixError,
    Workload,
    WorkloadMix,
    load_mix,
    validate_mix,
)
from tracker.plan.responses import PlanAnswer, PlanHistory
from tracker.plan.service import options_for, plan_history, plan_live

router = APIRouter(prefix="/v1", tags=["plan"])
# Mix text in a body: bounded so that even escaped (6 bytes a character in JSON) it stays under the API's
# body limit (api.limits, 256 KiB by default) and a too-long text is a 422 naming `source`, not a 413.
MAX_BODY_SOURCE_CHARS = 32_000


class PlanBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workloads: list[Workload] | None = Field(None, min_length=1, max_length=MAX_WORKLOADS)
    source: str | None = Field(
        None, max_length=MAX_BODY_SOURCE_CHARS, description="The whole mix as YAML or JSON text (instead of workloads)."
    )
    power_budget_kw: float | None = Field(None, gt=0, le=1e7, description="Facility cap on the fleet's power, kW.")
    overhead_factor: float | None = Field(
        None,
        ge=1,
        le=5,
        description=f"PUE-like factor on the cards' TDP (default: the mix's, else {DEFAULT_OVERHEAD}).",
    )

    @model_validator(mode="after")
    def _one_form(self) -> PlanBody:
        if (self.workloads is None) == (self.source is None):
            raise ValueError("give the mix as workloads or as source text, not both and not neither")
        return self

    def mix(self) -> WorkloadMix:
        try:
            if self.source is not None:
                return load_mix(self.source)
            return validate_mix({"workloads": [w.model_dump(mode="json", exclude_unset=True)
                                               for w in self.workloads or []]})  # fmt: skip
        except MixError as exc:
            prefix = "source" if self.source is not None else "body"
            raise FieldError(exc.message, f"{prefix}.{exc.field}" if exc.field else prefix) from None


class PlanHistoryBody(PlanBody):
    days: int = Field(90, ge=1, le=365)
    statistic: Literal["min", "p25", "median"] = "median"


@router.post("/plan", response_model=PlanAnswer)
async def post_plan(body: PlanBody, request: Request, now: Now, live: Live) -> Any:
    """Each workload on the live offer that runs its month cheapest; the fleet, one card type beside it, power."""
    engine, settings = request.app.state.engine, request.app.state.settings
    mix = body.mix()  # a bad mix is a 422 before anything is computed or cached
    options = options_for(mix, body.power_budget_kw, body.overhead_factor)

    def compute(session: Session) -> dict[str, Any]:
        return plan_live(engine, session, settings, now, mix, options, live=live)

    return json_response(await market_answer(request, ("plan", body.model_dump_json()), compute, now, as_of="first"))


@router.post("/plan/history", response_model=PlanHistory)
async def post_plan_history(body: PlanHistoryBody, request: Request, now: Now, live: Live) -> Any:
    """The plan's monthly cost and per-workload cards per day, mixed against the best single card type."""
    engine, settings = request.app.state.engine, request.app.state.settings
    mix = body.mix()
    options = options_for(mix, body.power_budget_kw, body.overhead_factor)

    def compute(session: Session) -> dict[str, Any]:
        return plan_history(engine, session, settings, now, mix, options, days=body.days, statistic=body.statistic,
                            live=live)  # fmt: skip

    key = ("plan-history", body.model_dump_json())
    return json_response(await market_answer(request, key, compute, now, as_of="first"))

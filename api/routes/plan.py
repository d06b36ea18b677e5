"""POST /v1/plan and /v1/plan/history: a workload mix placed on live offers, now and over the last days.

The body is the mix itself (`tracker.plan.mix.WorkloadMix`: the same schema as a mix file) or its text,
YAML or JSON, in `source` (what the dashboard's editor and upload send), parsed by the same loader as
`gpu-tracker plan FILE`, so a bad mix gets the same message naming the workload and the field.
Answers are memoised per (data version, body, minute) like /v1/rank (api.cached).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.cached import cached_body, json_response, minute, with_field
from api.deps import Live, Now
from api.validation import FieldError
from tracker.costs import TermColumns
from tracker.market import freshness
from tracker.market.live import LiveOffers
from tracker.market.service import live_market
from tracker.market.table import OfferTable
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
from tracker.plan.service import history_placements, history_points, history_prices, options_for, plan_on_frame
from tracker.storage.engine import session_scope

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
            return validate_mix(
                {"workloads": [w.model_dump(mode="json", exclude_unset=True) for w in self.workloads or []]}
            )
        except MixError as exc:
            prefix = "source" if self.source is not None else "body"
            raise FieldError(exc.message, f"{prefix}.{exc.field}" if exc.field else prefix) from None


class PlanHistoryBody(PlanBody):
    days: int = Field(90, ge=1, le=365)
    statistic: Literal["min", "p25", "median"] = "median"


# Plans are CPU-bound (seconds for a large mix): at most this many run at once per process, each in the
# threadpool and holding a database connection only while it reads; past the bound a request is a 429 with
# Retry-After, so a burst of plans can neither exhaust the pool nor starve every other request.
MAX_CONCURRENT_PLANS = 4
RETRY_AFTER_S = 2


@contextmanager
def _plan_slot(request: Request) -> Iterator[None]:
    slots: threading.BoundedSemaphore | None = getattr(request.app.state, "plan_slots", None)
    if slots is None:
        slots = request.app.state.plan_slots = threading.BoundedSemaphore(MAX_CONCURRENT_PLANS)
    if not slots.acquire(blocking=False):
        raise HTTPException(
            429,
            f"{MAX_CONCURRENT_PLANS} plans are being computed; retry shortly",
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    try:
        yield
    finally:
        slots.release()


def _read_frame(request: Request, live: LiveOffers) -> tuple[OfferTable, TermColumns]:
    """The live frame and its offers' cost terms, read on a connection released before any planning starts."""
    engine = request.app.state.engine
    with session_scope(engine) as session:
        return live_market(engine, session, live)


@router.post("/plan", response_model=PlanAnswer)
async def post_plan(body: PlanBody, request: Request, now: Now, live: Live) -> Any:
    """Each workload on the live offer that runs its month cheapest; the fleet, one card type beside it, power."""
    settings = request.app.state.settings
    with _plan_slot(request):
        mix = await run_in_threadpool(body.mix)  # a bad mix is a 422 before anything is computed or cached
        options = options_for(mix, body.power_budget_kw, body.overhead_factor)

        def compute() -> dict[str, Any]:
            result = plan_on_frame(*_read_frame(request, live), settings, now, mix, options)
            del result["as_of"]  # the request's own, added below
            return result

        key = ("plan", body.model_dump_json(), freshness.signature(settings), minute(now))
        body_bytes = await cached_body(request, key, compute)
    return json_response(with_field(body_bytes, "as_of", now, first=True))


@router.post("/plan/history", response_model=PlanHistory)
async def post_plan_history(body: PlanHistoryBody, request: Request, now: Now, live: Live) -> Any:
    """The plan's monthly cost and per-workload cards per day, mixed against the best single card type."""
    engine, settings = request.app.state.engine, request.app.state.settings
    with _plan_slot(request):
        mix = await run_in_threadpool(body.mix)
        options = options_for(mix, body.power_budget_kw, body.overhead_factor)

        def compute() -> dict[str, Any]:
            frame, terms = _read_frame(request, live)
            evaluated = history_placements(frame, terms, settings, now, mix, options, body.statistic)
            with session_scope(engine) as session:  # the daily prices: read, released, then combined
                prices = history_prices(session, settings, now, evaluated, body.days, body.statistic)
            result = history_points(now, mix, evaluated, prices, body.days, body.statistic)
            del result["as_of"]
            return result

        key = ("plan-history", body.model_dump_json(), freshness.signature(settings), minute(now))
        body_bytes = await cached_body(request, key, compute)
    return json_response(with_field(body_bytes, "as_of", now, first=True))

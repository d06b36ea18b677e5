"""GET /v1/availability: when was a card last available per provider, and for what share of the window.

"When was 8×H100 last available on Vast.ai, and what share of the last 7 days":
`/v1/availability?gpu=H100&min_gpus=8&provider=vastai&days=7`. Computed from the change-only
availability history (tracker.market.availability); memoised per (data version, parameters, minute),
since shares and liveness move with the clock. `as_of` is the instant the answer was computed for.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Now
from api.filters import offer_filters
from tracker.market.availability import availability
from tracker.market.filters import RANKING_ONLY, OfferFilters
from tracker.market.offers import gpu_ids_for
from tracker.market.responses import AvailabilityAnswer

router = APIRouter(prefix="/v1", tags=["availability"])


@router.get("/availability", response_model=AvailabilityAnswer)
async def get_availability(
    request: Request,
    now: Now,
    filters: Annotated[OfferFilters, Depends(offer_filters(exclude=RANKING_ONLY))],
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card id, family or alias")],
    days: Annotated[int, Query(ge=1, le=365, description="Window: the last this many days")] = 7,
) -> Any:
    """Per provider and card: matching offers live and available now, the last time one was available,
    and the share of the window during which at least one was (time-weighted, from the intervals)."""
    gpu_ids = gpu_ids_for(gpu)  # unknown names are a 404 with suggestions, never cached
    settings = request.app.state.settings

    def compute(session: Session) -> dict[str, Any]:
        rows = availability(session, settings, now, gpu_ids=gpu_ids, days=days, filters=filters)
        return {
            "as_of": now,
            "gpu": gpu,
            "gpu_ids": gpu_ids,
            "min_gpus": filters.min_gpus,
            "providers": filters.providers,
            "regions": filters.regions,
            "pricing": filters.pricing_values(),
            "days": days,
            "rows": rows,
        }

    key = ("availability", tuple(gpu_ids), gpu, filters.model_dump_json(), days)
    return json_response(await market_answer(request, key, compute, now))

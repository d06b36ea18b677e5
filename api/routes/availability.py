"""GET /v1/availability: when was a card last available per provider, and for what share of the window.

"When was 8×H100 last available on Vast.ai, and what share of the last 7 days":
`/v1/availability?gpu=H100&min_gpus=8&provider=vastai&days=7`. Computed from the change-only
availability history (tracker.market.availability); memoised per (data version, parameters, minute),
since shares and liveness move with the clock. `as_of` is the instant the answer was computed for.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Now
from api.routes.offers import NAME
from providers.contract import Pricing
from tracker.market.availability import availability
from tracker.market.offers import gpu_ids_for

router = APIRouter(prefix="/v1", tags=["availability"])


@router.get("/availability", response_model=None)
async def get_availability(
    request: Request,
    now: Now,
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card id, family or alias")],
    min_gpus: Annotated[Decimal | None, Query(gt=0, le=1024, description="Offers with at least this many GPUs")] = None,
    provider: Annotated[list[Annotated[str, Query(pattern=NAME)]] | None, Query(max_length=64)] = None,
    region: Annotated[
        list[Annotated[str, Query(pattern=NAME)]] | None, Query(max_length=128, description="Region or prefix")
    ] = None,
    pricing: Annotated[list[Pricing] | None, Query()] = None,
    days: Annotated[int, Query(ge=1, le=365, description="Window: the last this many days")] = 7,
) -> Any:
    """Per provider and card: matching offers live and available now, the last time one was available,
    and the share of the window during which at least one was (time-weighted, from the intervals)."""
    gpu_ids = gpu_ids_for(gpu)  # unknown names are a 404 with suggestions, never cached
    settings = request.app.state.settings
    pricings = sorted({p.value for p in pricing}) if pricing else None

    def compute(session: Session) -> dict[str, Any]:
        rows = availability(
            session, settings, now, gpu_ids=gpu_ids, days=days, min_gpus=min_gpus, providers=provider,
            regions=region, pricing=pricings,
        )  # fmt: skip
        return {
            "as_of": now,
            "gpu": gpu,
            "gpu_ids": gpu_ids,
            "min_gpus": min_gpus,
            "providers": provider,
            "regions": region,
            "pricing": pricings,
            "days": days,
            "rows": rows,
        }

    key = ("availability", tuple(gpu_ids), gpu, min_gpus, tuple(provider or ()), tuple(region or ()),
           tuple(pricings or ()), days)  # fmt: skip
    return json_response(await market_answer(request, key, compute, now))

"""GET /v1/offers: current offers with filters, sort and pagination.

Pages are served from encoded answers memoised per data version (api.cached). Each row says whether the
offer is live now (the freshness rule, tracker.market.freshness), and `live=` filters on it, so a page
depends on the time too: it is keyed by the minute and the freshness settings, as the market's answers are.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Now
from api.filters import offer_filters
from tracker.market.filters import RANKING_ONLY, OfferFilters
from tracker.market.offers import SORTS, OfferListing, current_offers, gpu_ids_for, listed_rows
from tracker.market.responses import OffersPage

router = APIRouter(prefix="/v1", tags=["offers"])


@router.get("/offers", response_model=OffersPage)
async def list_offers(
    request: Request,
    now: Now,
    filters: Annotated[OfferFilters, Depends(offer_filters(exclude=RANKING_ONLY))],
    gpu: Annotated[str | None, Query(description="Card id, family or alias", max_length=100)] = None,
    sort: Annotated[str, Query(pattern="^(" + "|".join(SORTS) + ")$")] = "price_per_gpu_hour",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    listing = OfferListing(**dict(filters), gpu=gpu, sort=sort, limit=limit, offset=offset)
    gpu_ids = tuple(gpu_ids_for(gpu)) if gpu else ()  # unknown names are a 404 with suggestions, never cached
    settings = request.app.state.settings

    def compute(session: Session) -> dict[str, Any]:
        rows = listed_rows(current_offers(session, listing, now=now, settings=settings), now, settings)
        return {"offers": rows, "count": len(rows), "limit": limit, "offset": offset}

    key = ("offers", gpu_ids, filters.model_dump_json(), sort, limit, offset)
    return json_response(await market_answer(request, key, compute, now))

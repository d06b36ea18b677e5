"""GET /v1/offers: current offers with filters, sort and pagination.

Pages are served from encoded answers memoised per data version (api.cached); offer rows do not
depend on the time, so a page is computed once per ingest and parameters.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from api.cached import cached_body, json_response
from api.filters import offer_filters
from tracker.market.filters import RANKING_ONLY, OfferFilters
from tracker.market.offers import SORTS, OfferListing, current_offers, gpu_ids_for, offer_row
from tracker.market.responses import OffersPage
from tracker.storage.engine import session_scope

router = APIRouter(prefix="/v1", tags=["offers"])


@router.get("/offers", response_model=OffersPage)
async def list_offers(
    request: Request,
    filters: Annotated[OfferFilters, Depends(offer_filters(exclude=RANKING_ONLY))],
    gpu: Annotated[str | None, Query(description="Card id, family or alias", max_length=100)] = None,
    sort: Annotated[str, Query(pattern="^(" + "|".join(SORTS) + ")$")] = "price_per_gpu_hour",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    listing = OfferListing(**dict(filters), gpu=gpu, sort=sort, limit=limit, offset=offset)
    gpu_ids = tuple(gpu_ids_for(gpu)) if gpu else ()  # unknown names are a 404 with suggestions, never cached
    engine = request.app.state.engine

    def compute() -> dict[str, Any]:
        with session_scope(engine) as session:
            rows = [offer_row(o) for o in current_offers(session, listing)]
        return {"offers": rows, "count": len(rows), "limit": limit, "offset": offset}

    key = ("offers", gpu_ids, filters.model_dump_json(), sort, limit, offset)
    return json_response(await cached_body(request, key, compute))

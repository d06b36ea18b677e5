"""GET /v1/offers: current offers with filters, sort and pagination.

Pages are served from encoded answers memoised per data version (api.cached); offer rows do not
depend on the time, so a page is computed once per ingest and parameters.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request

from api.cached import cached_body, json_response
from providers.contract import Pricing
from tracker.market.fabric import INTERCONNECT_HELP, MAX_NODES, MIN_NODES_HELP, Interconnect
from tracker.market.offers import SORTS, OfferFilters, current_offers, gpu_ids_for, offer_row
from tracker.storage.engine import session_scope

router = APIRouter(prefix="/v1", tags=["offers"])

# Provider names and normalised regions ("us-texas", "eu-ro-1"): lower-case words joined by - or _.
NAME = r"^[a-z0-9][a-z0-9_-]{0,127}$"


@router.get("/offers", response_model=None)
async def list_offers(
    request: Request,
    gpu: Annotated[str | None, Query(description="Card id, family or alias", max_length=100)] = None,
    provider: Annotated[list[Annotated[str, Query(pattern=NAME)]] | None, Query(max_length=64)] = None,
    pricing: Annotated[list[Pricing] | None, Query()] = None,
    region: Annotated[
        list[Annotated[str, Query(pattern=NAME)]] | None, Query(max_length=128, description="Region or prefix")
    ] = None,
    min_gpus: Annotated[Decimal | None, Query(gt=0, le=1024)] = None,
    available: Annotated[bool, Query(description="Only offers the provider says are available")] = False,
    # Quality filters; offers that do not state an attribute: see tracker.market.quality.
    verified: Annotated[bool, Query(description="Only verified machines (stated, or a cloud's own)")] = False,
    datacenter: Annotated[bool, Query(description="Only datacenter machines (stated, or a cloud's own)")] = False,
    min_reliability: Annotated[float | None, Query(ge=0, le=1, description="Host reliability score, 0-1")] = None,
    cloud: Annotated[Literal["secure", "community"] | None, Query(description="RunPod-style cloud tier")] = None,
    interconnect: Annotated[Interconnect | None, Query(description=INTERCONNECT_HELP)] = None,
    min_nodes: Annotated[int | None, Query(ge=1, le=MAX_NODES, description=MIN_NODES_HELP)] = None,
    include_reference: bool = True,
    aggregated: Annotated[
        Literal["include", "exclude", "dedupe"],
        Query(description="Offers resold by aggregators: count them, leave them out, or count each machine once"),
    ] = "include",
    sort: Annotated[str, Query(pattern="^(" + "|".join(SORTS) + ")$")] = "price_per_gpu_hour",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    try:
        filters = OfferFilters(
            gpu=gpu,
            providers=provider,
            pricing=[p.value for p in pricing] if pricing else None,
            regions=region,
            min_gpus=min_gpus,
            available_only=available,
            verified_only=verified,
            datacenter_only=datacenter,
            min_reliability=min_reliability,
            cloud=cloud,
            include_reference=include_reference,
            aggregated=aggregated,
            interconnect=interconnect,
            min_nodes=min_nodes,
            sort=sort,
            limit=limit,
            offset=offset,
        )
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    gpu_ids = tuple(gpu_ids_for(gpu)) if gpu else ()  # unknown names are a 404 with suggestions, never cached
    engine = request.app.state.engine

    def compute() -> dict[str, Any]:
        with session_scope(engine) as session:
            rows = [offer_row(o) for o in current_offers(session, filters)]
        return {"offers": rows, "count": len(rows), "limit": limit, "offset": offset}

    key = ("offers", gpu_ids, tuple(provider or ()), tuple(filters.pricing or ()), tuple(region or ()), min_gpus,
           available, verified, datacenter, min_reliability, cloud, include_reference, aggregated, sort, limit,
           offset, interconnect, min_nodes)  # fmt: skip
    return json_response(await cached_body(request, key, compute))

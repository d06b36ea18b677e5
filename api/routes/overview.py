"""GET /v1/market/overview: each card's live prices with their 7- and 30-day change and a sparkline."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from api.cached import answer
from api.deps import Live, Now, db_session
from providers.contract import Pricing
from tracker.market.overview import market_overview
from tracker.market.responses import MarketOverview

router = APIRouter(prefix="/v1", tags=["market"])


@router.get("/market/overview", response_model=MarketOverview)
def get_market_overview(
    request: Request,
    session: Annotated[Session, Depends(db_session)],
    now: Now,
    live: Live,
    pricing: Annotated[list[Pricing] | None, Query()] = None,
    include_reference: Annotated[bool, Query(description="Count static reference sheets")] = True,
    aggregated: Annotated[
        Literal["include", "exclude", "dedupe"], Query(description="Resold offers: count, leave out, or once")
    ] = "include",
) -> Any:
    """Per card × pricing type: live min/p25/median/p75, offers, providers, demo flag, change over 7 and
    30 days (against the daily median of that day) and a 30-day sparkline of daily median and min."""
    return answer(
        market_overview(
            request.app.state.engine,
            session,
            request.app.state.settings,
            now,
            pricing=[p.value for p in pricing or []],
            include_reference=include_reference,
            aggregated=aggregated,
            live=live,
        )
    )

"""GET /v1/market/reference: external market-statistics series (tracker.history.imports.aggregates) for a
card over a window, drawn by the dashboard as a labelled reference line beside our own median."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from api.cached import cached_body, json_response, minute
from api.validation import FieldError, aware_in_range
from tracker.clock import utcnow
from tracker.history.imports.aggregates import reference_series
from tracker.history.responses import ReferenceAnswer
from tracker.history.spans import imported_spans
from tracker.market.offers import gpu_ids_for
from tracker.storage.engine import session_scope

router = APIRouter(prefix="/v1", tags=["market"])


@router.get("/market/reference", response_model=ReferenceAnswer)
async def get_reference(
    request: Request,
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card, family or alias")],
    start: datetime | None = None,
    end: datetime | None = None,
) -> Any:
    """Each imported series for the card: points of min, p25, median, p75 ($/GPU-hour) and listings; and
    `imported`, the stretches of the card's own history that came from an import rather than a scrape."""
    now = utcnow()
    end_at = aware_in_range(end, "end") if end else now
    start_at = aware_in_range(start, "start") if start else end_at - timedelta(days=30)
    if start_at >= end_at:
        raise FieldError("start must be before end", "start")
    ids = gpu_ids_for(gpu)
    engine, settings = request.app.state.engine, request.app.state.settings

    def compute() -> dict[str, Any]:
        with session_scope(engine) as session:
            series = reference_series(session, ids, start_at, end_at)
            imported = imported_spans(session, settings, ids, start_at, end_at)
        return {"gpu": gpu, "gpu_ids": ids, "start": start_at, "end": end_at, "series": series, "imported": imported}

    bounds = (start.isoformat() if start else None, end.isoformat() if end else None)
    key = ("market-reference", tuple(ids), *bounds, minute(now))
    return json_response(await cached_body(request, key, compute))

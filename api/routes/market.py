"""GET /v1/market and /v1/market/history: the distribution of $/GPU-hour now and over time."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api.deps import db_session
from tracker.clock import utcnow
from tracker.market import INTERVALS
from tracker.offers import Pricing
from tracker.queries import gpu_ids_for
from tracker.views import market_history, market_snapshot

router = APIRouter(prefix="/v1", tags=["market"])

# Bounds on how many buckets one request may ask for (keeps every request cheap).
MAX_BUCKETS = 24 * 400


def _utc(value: datetime | None, field: str) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise HTTPException(422, detail=f"{field} must include a timezone (e.g. 2026-01-01T00:00:00Z)")
    return value


@router.get("/market", response_model=None)
def get_market(
    request: Request,
    session: Annotated[Session, Depends(db_session)],
    gpu: Annotated[str | None, Query(max_length=100, description="Card, family or alias")] = None,
    pricing: Annotated[list[Pricing] | None, Query()] = None,
    include_reference: Annotated[bool, Query(description="Count static reference sheets")] = True,
    max_age_hours: Annotated[float | None, Query(gt=0, le=24 * 365)] = None,
) -> Any:
    """Per card × pricing type: min, p25, median, p75, max, offers, providers, freshness."""
    return market_snapshot(
        request.app.state.engine, session, request.app.state.settings, utcnow(),
        gpu_ids=gpu_ids_for(gpu) if gpu else None, pricing=[p.value for p in pricing or []],
        include_reference=include_reference,
        max_age=timedelta(hours=max_age_hours) if max_age_hours else None,
    )  # fmt: skip


@router.get("/market/history", response_model=None)
def get_market_history(
    request: Request,
    session: Annotated[Session, Depends(db_session)],
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card, family or alias")],
    pricing: Pricing = Pricing.on_demand,
    interval: Literal["1h", "1d", "1w"] = "1d",
    start: datetime | None = None,
    end: datetime | None = None,
    include_reference: bool = True,
    format: Literal["json", "csv"] = "json",
) -> Any:
    """Bucketed statistics over time, exact from the change-only history (see tracker.market)."""
    now = utcnow()
    end_at = _utc(end, "end") or now
    start_at = _utc(start, "start") or end_at - timedelta(days=30)
    if start_at >= end_at:
        raise HTTPException(422, detail="start must be before end")
    if (end_at - start_at) / INTERVALS[interval] > MAX_BUCKETS:
        raise HTTPException(422, detail=f"too many buckets: use a coarser interval than {interval} for this range")
    ids = gpu_ids_for(gpu)
    rows = market_history(
        session, request.app.state.settings, now, gpu_ids=ids, pricing=pricing.value, interval=interval,
        start=start_at, end=end_at, include_reference=include_reference,
    )  # fmt: skip
    if format == "csv":
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["bucket", "min", "p25", "median", "p75", "max", "offers", "providers"])
        for r in rows:
            writer.writerow([r["bucket"].isoformat(), r["min"], r["p25"], r["median"], r["p75"], r["max"],
                             r["offers"], r["providers"]])  # fmt: skip
        name = f"{gpu}-{pricing.value}-{interval}.csv".replace(" ", "_")
        return Response(out.getvalue(), media_type="text/csv",
                        headers={"content-disposition": f'attachment; filename="{name}"'})  # fmt: skip
    return {"gpu": gpu, "gpu_ids": ids, "pricing": pricing.value, "interval": interval, "start": start_at,
            "end": end_at, "buckets": rows}  # fmt: skip

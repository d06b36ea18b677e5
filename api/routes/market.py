"""GET /v1/market, /v1/market/history and /v1/market/terms: the distribution of $/GPU-hour now and over
time, and per commitment length.

Both are served from encoded answers memoised per data version (api.cached): a request costs a (shared)
version read on the event loop unless an ingest or the minute changed what it would return; only then
does the computation run, in the threadpool.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Live, Now
from api.validation import FieldError, aware_in_range
from providers.contract import Pricing
from tracker.market.offers import gpu_ids_for
from tracker.market.responses import MarketHistory, MarketSnapshot, MarketTerms
from tracker.market.service import market_history, market_snapshot, market_terms
from tracker.market.statistics import INTERVALS, TermError, commitment

router = APIRouter(prefix="/v1", tags=["market"])

# Bounds on how many buckets one request may ask for (keeps every request cheap).
MAX_BUCKETS = 24 * 400


def _term(pricing: str, term: str | None) -> str | None:
    try:
        return commitment(pricing, term)
    except TermError as exc:
        raise FieldError(str(exc), exc.field) from None


def _utc(value: datetime | None, field: str) -> datetime | None:
    # A bound near year 1 or 9999 overflows once moved to UTC or by the default 30 days (500), or
    # reaches the database as a timestamp it cannot hold (503): refused first, naming the field.
    return None if value is None else aware_in_range(value, field)


@router.get("/market", response_model=MarketSnapshot)
async def get_market(
    request: Request,
    now: Now,
    live: Live,
    gpu: Annotated[str | None, Query(max_length=100, description="Card, family or alias")] = None,
    pricing: Annotated[list[Pricing] | None, Query()] = None,
    include_reference: Annotated[bool, Query(description="Count static reference sheets")] = True,
    max_age_hours: Annotated[float | None, Query(gt=0, le=24 * 365)] = None,
    aggregated: Annotated[
        Literal["include", "exclude", "dedupe"],
        Query(description="Offers resold by aggregators: count them, leave them out, or count each machine once"),
    ] = "include",
) -> Any:
    """Per card × pricing type (× reservation term): min, p25, median, p75, max, offers, providers,
    freshness; `sheets` gives each rate sheet's age, and a card names the stale ones it counts."""
    engine, settings = request.app.state.engine, request.app.state.settings
    gpu_ids = gpu_ids_for(gpu) if gpu else None  # unknown names are a 404 with suggestions, never cached
    kinds = [p.value for p in pricing or []]
    max_age = timedelta(hours=max_age_hours) if max_age_hours else None

    def compute(session: Session) -> dict[str, Any]:
        return market_snapshot(
            engine,
            session,
            settings,
            now,
            gpu_ids=gpu_ids,
            pricing=kinds,
            include_reference=include_reference,
            max_age=max_age,
            aggregated=aggregated,
            live=live,
        )

    key = ("market", tuple(gpu_ids or ()), tuple(kinds), include_reference, max_age, aggregated)
    return json_response(await market_answer(request, key, compute, now, as_of="first"))


@router.get(
    "/market/history",
    response_model=MarketHistory,
    responses={200: {"content": {"text/csv": {}}, "description": "JSON, or CSV with format=csv"}},
)
async def get_market_history(
    request: Request,
    now: Now,
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card, family or alias")],
    pricing: Pricing = Pricing.on_demand,
    term: Annotated[
        str | None, Query(max_length=16, description="Reservation term of pricing=reserved (1d, 7d, 1mo, 3mo, 1y, 3y)")
    ] = None,
    interval: Literal["1h", "1d", "1w"] = "1d",
    start: datetime | None = None,
    end: datetime | None = None,
    include_reference: bool = True,
    aggregated: Annotated[
        Literal["include", "exclude", "dedupe"],
        Query(description="Offers resold by aggregators: count them, leave them out, or count each machine once"),
    ] = "include",
    format: Literal["json", "csv"] = "json",
) -> Any:
    """Bucketed statistics over time, exact from the change-only history (see tracker.market.statistics);
    a reserved history is of one `term`, never a blend of terms."""
    reserved_term = _term(pricing.value, term)
    end_at = _utc(end, "end") or now
    start_at = _utc(start, "start") or end_at - timedelta(days=30)
    if start_at >= end_at:
        raise FieldError("start must be before end", "start")
    if (end_at - start_at) / INTERVALS[interval] > MAX_BUCKETS:
        raise FieldError(f"too many buckets: use a coarser interval than {interval} for this range", "interval")
    ids = gpu_ids_for(gpu)
    settings = request.app.state.settings

    def compute(session: Session) -> bytes | dict[str, Any]:
        rows = market_history(
            session,
            settings,
            now,
            gpu_ids=ids,
            pricing=pricing.value,
            reserved_term=reserved_term,
            interval=interval,
            start=start_at,
            end=end_at,
            include_reference=include_reference,
            aggregated=aggregated,
        )
        if format == "csv":
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(["bucket", "min", "p25", "median", "p75", "max", "offers", "providers"])
            for r in rows:
                writer.writerow(
                    [
                        r["bucket"].isoformat(),
                        r["min"],
                        r["p25"],
                        r["median"],
                        r["p75"],
                        r["max"],
                        r["offers"],
                        r["providers"],
                    ]
                )
            return out.getvalue().encode("utf-8")
        return {
            "gpu": gpu,
            "gpu_ids": ids,
            "pricing": pricing.value,
            "reserved_term": reserved_term,
            "interval": interval,
            "start": start_at,
            "end": end_at,
            "buckets": rows,
        }

    # Explicit bounds are keyed as written: the answer echoes them, offset included.
    bounds = (start.isoformat() if start else None, end.isoformat() if end else None)
    what = (pricing.value, reserved_term)
    key = ("market-history", gpu, tuple(ids), *what, interval, *bounds, include_reference, aggregated, format)
    body = await market_answer(request, key, compute, now)
    if format == "csv":
        name = f"{gpu}-{pricing.value}{'-' + reserved_term if reserved_term else ''}-{interval}.csv".replace(" ", "_")
        return Response(body, media_type="text/csv", headers={"content-disposition": f'attachment; filename="{name}"'})
    return json_response(body)


@router.get("/market/terms", response_model=MarketTerms)
async def get_market_terms(
    request: Request,
    now: Now,
    live: Live,
    gpu: Annotated[str, Query(min_length=1, max_length=100, description="Card, family or alias")],
    days: Annotated[int | None, Query(ge=1, le=365, description="Also each term's daily distribution")] = None,
    include_reference: bool = True,
    aggregated: Literal["include", "exclude", "dedupe"] = "include",
) -> Any:
    """The term structure per card: on-demand, spot and each reservation term (1 day to 3 years) as separate
    distributions of $/GPU-hour (offers, min, p25, median, p75, providers), now and, with `days`, per day."""
    engine, settings = request.app.state.engine, request.app.state.settings
    ids = gpu_ids_for(gpu)

    def compute(session: Session) -> dict[str, Any]:
        answer = market_terms(
            engine,
            session,
            settings,
            now,
            gpu_ids=ids,
            days=days,
            include_reference=include_reference,
            aggregated=aggregated,
            live=live,
        )
        return {"gpu": gpu, "gpu_ids": ids} | answer

    key = ("market-terms", gpu, tuple(ids), days, include_reference, aggregated)
    return json_response(await market_answer(request, key, compute, now))

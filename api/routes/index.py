"""GET /v1/index: the open GPU price index (tracker.market.index; docs/index-methodology.md), as JSON or CSV
(format=csv, or Accept: text/csv). Memoised per data version and minute like the market (api.cached)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from api.cached import json_response, market_answer
from api.deps import Now
from api.validation import FieldError
from tracker.market.index import AREAS, CURRENT, METHODS
from tracker.market.index_source import MAX_DAYS, baskets, index_csv, index_values
from tracker.market.responses import IndexAnswer

router = APIRouter(prefix="/v1", tags=["market"])


@router.get(
    "/index",
    response_model=IndexAnswer,
    responses={200: {"content": {"text/csv": {}}, "description": "JSON, or CSV with format=csv or Accept: text/csv"}},
)
async def get_index(
    request: Request,
    now: Now,
    card: Annotated[
        str | None, Query(max_length=100, description="Card family or card; every family if left out")
    ] = None,
    days: Annotated[int, Query(description=f"Complete UTC days ending yesterday (1 to {MAX_DAYS})")] = 30,
    area: Annotated[list[str] | None, Query(description=f"Areas: {', '.join(AREAS)} (default all)")] = None,
    version: Annotated[str, Query(description=f"Methodology version: {', '.join(METHODS)}")] = CURRENT,
    format: Literal["json", "csv"] | None = None,
) -> Any:
    """A daily $/GPU-hour value per card family and area, each with its methodology version, the providers
    and offers it used (each provider's capped weight) and its dispersion (p25, p75, spread); a day without
    enough providers has no value and says why."""
    # Bad input is a 422 naming the field, before any work; an unknown card a 404 with suggestions.
    if not 1 <= days <= MAX_DAYS:
        raise FieldError(f"days must be between 1 and {MAX_DAYS}, got {days}", "days")
    areas = area or list(AREAS)
    for a in areas:
        if a not in AREAS:
            raise FieldError(f"area must be one of {', '.join(AREAS)}, got {a[:40]!r}", "area")
    if version not in METHODS:
        raise FieldError(f"version must be one of {', '.join(METHODS)}, got {version[:40]!r}", "version")
    baskets(card)
    csv_out = format == "csv" or (format is None and "text/csv" in request.headers.get("accept", ""))
    settings = request.app.state.settings

    def compute(session: Session) -> bytes | dict[str, Any]:
        values = index_values(session, settings, now, card=card, days=days, areas=areas, version=version)
        if csv_out:
            return index_csv(values).encode("utf-8")
        return {"version": version, "card": card, "days": days, "areas": areas, "values": [v.as_dict() for v in values]}

    key = ("index", card, days, tuple(areas), version, csv_out)
    body = await market_answer(request, key, compute, now)
    if csv_out:
        name = f"index-{card or 'all'}-{days}d.csv".replace(" ", "_")
        return Response(body, media_type="text/csv", headers={"content-disposition": f'attachment; filename="{name}"'})
    return json_response(body)

"""GET /v1/providers: each provider's health."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from api.cached import answer
from tracker.ops.responses import ProvidersAnswer
from tracker.ops.status import provider_status

router = APIRouter(prefix="/v1", tags=["providers"])


@router.get("/providers", response_model=ProvidersAnswer)
def get_providers(request: Request) -> Any:
    """Kind, credentials present, interval, last run, last success, age, offers, last error, stale flag."""
    return answer({"providers": provider_status(request.app.state.engine, request.app.state.settings)})

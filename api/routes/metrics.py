"""GET /metrics: Prometheus text exposition (HTTP request metrics plus series read from the database)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api import metrics

router = APIRouter(tags=["ops"])


@router.get("/metrics", include_in_schema=False)
def get_metrics(request: Request) -> Response:
    # A sync route: the collector queries the database, which must not block the event loop.
    registry = metrics.metrics_for(request.app).registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

"""The history package's answers as schemas: what `/v1/market/reference` returns (the external series
imported by `gpu-tracker import aggregates`, and the stretches of a card's history that came from an
import). Like tracker.market.responses they describe the JSON for `/docs` and schemathesis; the route
serves already-encoded bytes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from tracker.market.responses import Number

__all__ = ["ReferenceAnswer", "ReferencePoint", "ReferenceSeries"]


class ReferencePoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    at: datetime
    min: Number | None = None
    p25: Number | None = None
    median: Number | None = None
    p75: Number | None = None
    offers: int | None = None


class ReferenceSeries(BaseModel):
    model_config = ConfigDict(extra="allow")

    source: str
    gpu: str
    points: list[ReferencePoint]


class ReferenceAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    gpu: str
    gpu_ids: list[str]
    start: datetime
    end: datetime
    series: list[ReferenceSeries]
    imported: list[dict[str, Any]]

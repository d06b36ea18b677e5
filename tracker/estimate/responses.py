"""The estimate's answers as schemas: `/v1/estimate`, `/v1/models`, `/v1/gpus`, `/v1/assumptions`
(documented in /docs, checked by schemathesis). Rows keep every key the estimate gives (`extra="allow"`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["AssumptionSets", "EstimateAnswer", "EstimateRow", "GpuList", "ModelList"]


class EstimateRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    gpu: str
    gpus: float
    fits: bool
    vram_gb: float
    hours: float | None
    cost_per_run: float | None


class EstimateAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    assumptions: dict[str, Any]
    job: dict[str, Any]
    rows: list[EstimateRow]


class ModelList(BaseModel):
    models: list[dict[str, Any]]
    count: int


class GpuList(BaseModel):
    gpus: list[dict[str, Any]]
    count: int


class AssumptionSets(BaseModel):
    default: str
    sets: list[dict[str, Any]]

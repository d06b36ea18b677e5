"""The planner's answers as schemas: what `/v1/plan` and `/v1/plan/history` return (documented in /docs,
checked by schemathesis). Built as dicts by tracker.plan.service and served memoised (api.cached);
nested placements keep their own keys (`extra="allow"`), listed in tracker.plan.planner."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from tracker.market.responses import Number

__all__ = ["PlanAnswer", "PlanHistory", "PlanHistoryPoint", "PlannedWorkload"]


class PlannedWorkload(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    kind: str
    status: str
    reason: str | None
    choice: dict[str, Any] | None


class PlanAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    as_of: datetime
    hours_per_month: Number
    live_offers: int
    complete: bool
    unplanned: list[str]
    workloads: list[PlannedWorkload]
    fleet: dict[str, Any]
    single_card: dict[str, Any]
    power: dict[str, Any]
    method: str


class PlanHistoryPoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    day: datetime
    monthly_cost: Number | None
    single_card: str | None
    single_card_monthly_cost: Number | None
    saving: Number | None
    choices: list[dict[str, Any]]


class PlanHistory(BaseModel):
    as_of: datetime
    days: int
    statistic: str
    workloads: list[dict[str, Any]]
    unplanned: list[str]
    points: list[PlanHistoryPoint]
    summary: dict[str, Any]
    method: str

"""An alert rule's public shape as a schema: `RuleRead` is what `rule_dict` returns and what the API's
rule endpoints answer with (documented in /docs and checked by schemathesis against every answer)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from tracker.market.responses import Number

__all__ = ["ChannelRead", "RuleEvents", "RuleList", "RuleRead", "TestSent"]


class ChannelRead(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    type: str
    url: str  # redacted except in the answer that created it
    secret: str | None  # a webhook's signing secret: whole once, then only its last characters


class RuleRead(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    name: str | None
    gpu: str
    gpu_ids: list[str]
    pricing: str
    providers: list[str] | None
    regions: list[str] | None
    min_offers: int
    available_only: bool
    min_gpus: Number | None
    verified_only: bool
    datacenter_only: bool
    min_reliability: Number | None
    cloud: str | None
    metric: str
    price_statistic: str | None
    job: dict[str, Any] | None
    job_gpus: Number | None
    condition: str
    threshold: Number
    recovery_threshold: Number | None
    for_s: int
    repeat_s: int | None
    enabled: bool
    silenced_until: datetime | None
    allow_immediate: bool
    state: str
    state_since: datetime | None
    pending_since: datetime | None
    last_value: Number | None
    last_evaluated_at: datetime | None
    last_notified_at: datetime | None
    created_at: datetime
    updated_at: datetime
    channels: list[ChannelRead]


class RuleList(BaseModel):
    alerts: list[RuleRead]
    count: int


class RuleEvents(BaseModel):
    rule_id: int
    events: list[dict[str, Any]]
    notifications: list[dict[str, Any]]


class TestSent(BaseModel):
    __test__ = False  # not a pytest test class, whatever its name

    rule_id: int
    sent_at: datetime
    results: list[dict[str, Any]]

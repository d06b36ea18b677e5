"""Provider health as a schema: what `/v1/providers` returns (tracker.ops.status.provider_status)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ProviderHealth", "ProvidersAnswer"]


class ProviderHealth(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    kind: str
    credentials_set: bool
    last_run: dict[str, Any] | None  # the latest scrape run: status, times, counts
    last_success_at: datetime | None
    age_s: float | None
    interval_s: int | None
    stale: bool
    current_offers: int


class ProvidersAnswer(BaseModel):
    providers: list[ProviderHealth]

"""Scheduler settings for the worker (prefix `TRACKER_`), kept apart from tracker.config until merged there.

`TRACKER_INTERVALS` overrides providers' default cadences, in seconds, as JSON:
`TRACKER_INTERVALS='{"vastai": 300, "aws": 7200}'`.
"""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIN_INTERVAL_S = 30


class WorkerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACKER_", env_file=".env", extra="ignore")

    intervals: dict[str, int] = Field(default_factory=dict)  # provider → seconds
    worker_jitter_s: float = 30.0  # random delay after each slot start; capped at a quarter of the interval
    # APScheduler's default grace is 1 s: a run delayed by a busy host would be dropped, not late.
    worker_misfire_grace_s: int = 900
    worker_threads: int = 8  # providers scraping at the same time
    worker_job_timeout_s: float | None = None  # whole run incl. ingest; default: scrape timeout + 120 s
    alert_sweep_s: int = 60  # re-evaluate every rule: stale data, pending periods ending between scrapes
    alert_deliver_s: int = 5  # outbox polling

    @field_validator("intervals")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        for name, seconds in value.items():
            if seconds < MIN_INTERVAL_S:
                raise ValueError(f"TRACKER_INTERVALS: {name} every {seconds}s is below the {MIN_INTERVAL_S}s minimum")
        return value

"""Configuration from the environment (prefix `TRACKER_`), with an embedded default that needs none.

With no configuration the service runs on a SQLite file under the data directory, in one process.
Provider credentials are secrets: read from `TRACKER_<NAME>` or from a file (`TRACKER_<NAME>_FILE`,
or `<secrets_dir>/<name>` for Docker/Kubernetes secrets) and never logged or printed.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIN_INTERVAL_S = 30
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _split(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gpu-price-tracker"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACKER_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None  # None → sqlite file in data_dir
    secrets_dir: Path | None = None

    # Ingest sanity limits: a price outside them is a parser or provider bug, not a deal.
    max_price_per_gpu_hour: Decimal = Decimal("200")
    quarantine_min_previous: int = 20  # from this many last-good offers, falling under the ratio alone is enough
    quarantine_collapse_ratio: float = 0.5  # fewer than this fraction of the last good count → quarantine
    # Below quarantine_min_previous a drop under the ratio must also lose this many offers: one or two
    # coming and going is normal on a tiny provider (3 → 1 passes, 4 → 1 does not). An empty batch after
    # a good run with offers is quarantined whatever the size (tracker/ingest/quarantine.py).
    quarantine_min_lost: int = 3
    # Price level: a card (GPU × pricing) has jumped when its median new/previous price ratio is at least
    # this factor either way; scaling bugs are ×8 and more (cents, per-minute, per-box), markets move far less.
    quarantine_price_ratio: float = 3.0
    quarantine_price_share: float = 0.5  # more than this fraction of compared cards jumped one way → quarantine

    http_timeout_s: float = 30.0
    http_retries: int = 3
    max_connections: int = 16  # across all providers scraping concurrently
    scrape_timeout_s: float = 300.0
    stale_after: timedelta = timedelta(hours=6)
    # A price-page sheet read this many days ago or more is stale (tracker.market.freshness.sheet_ages):
    # the market and the dashboard say so. Its prices still count: a dated published price is data.
    sheet_max_age_days: int = Field(45, ge=1)

    api_token: SecretStr | None = None  # bearer token for mutating endpoints and alert reads
    # Answers an API process computes at once (api.cached.computed); None: max(4, 2 x its cores). Computing
    # threads share one interpreter lock, so more at once mostly interleave them.
    api_compute_slots: int | None = Field(None, ge=1, le=256)

    # Database timeouts: with the database unreachable, a request or a worker job fails within a
    # bound (an API answers 503) instead of hanging. During a partition a request costs at most
    # ping + connect (plus pool wait when every connection is busy); a slow query, the statement
    # timeout. Applied by tracker.storage.engine.make_engine; a key already in the URL wins.
    # Sized so that ping + connect (3.5 s) keeps every API answer during a partition under 5 s, the
    # probe timeout orchestrators commonly use (a handshake within one site takes milliseconds).
    db_connect_timeout_s: int = 2  # libpq connect_timeout, whole handshake; psycopg's minimum is 2
    db_ping_timeout_s: float = 1.5  # a pooled connection must answer an empty query this fast before use
    db_pool_timeout_s: float = 2.5  # wait for a free pooled connection (SQLAlchemy's default is 30)
    db_pool_size: int = 10  # connections kept per process; up to db_max_overflow more under load
    db_max_overflow: int = 20
    # Postgres statement_timeout (0 = none: e.g. behind a pgbouncer that rejects the `options`
    # startup parameter; set it on the role instead). 30 s is far above any API read or ingest
    # batch; migrations run without it. On SQLite: how long a statement waits for another writer.
    db_statement_timeout_s: float = 30.0
    # A connection silent this long gets TCP keepalive probes; with tcp_user_timeout, a peer that
    # stops acknowledging (a silent partition) is declared dead after db_tcp_user_timeout_s.
    db_keepalive_idle_s: int = 10
    db_tcp_user_timeout_s: int = 15

    # Worker. TRACKER_INTERVALS overrides providers' default cadences, in seconds, as JSON:
    # TRACKER_INTERVALS='{"vastai": 300, "aws": 7200}'.
    intervals: dict[str, int] = Field(default_factory=dict)
    # Where the worker writes the install's own open dataset once a day (tracker.history.export); None: off.
    export_dir: Path | None = None
    export_format: Literal["csv", "jsonl", "parquet"] = "csv"
    # Which sources' prices this install republishes (the export, the index; tracker.market.data_terms
    # reads each source's terms from providers/terms.toml). "cleared": only sources whose terms say yes or
    # that TRACKER_REPUBLISH_CLEARED names (the operator holds permission); "labelled": also sources whose
    # terms are unknown, each labelled so in the export's manifest; "private": every source, even one whose
    # terms forbid it, for an operator's own use — the manifest then says the dataset is not for
    # publication. Scraping and storing are never blocked by it: a private install scrapes every source.
    republish: Literal["cleared", "labelled", "private"] = "labelled"
    republish_cleared: str = ""  # comma-separated provider names whose prices the operator may republish
    worker_jitter_s: float = 30.0  # random delay after each slot start; capped at a quarter of the interval
    # APScheduler's default grace is 1 s: a run delayed by a busy host would be dropped, not late.
    worker_misfire_grace_s: int = 900
    worker_threads: int = 8  # providers scraping at the same time
    worker_job_timeout_s: float | None = None  # whole run incl. ingest; default: scrape timeout + 120 s
    # Without advisory locks (SQLite) a `running` ledger row is presumed dead once this old, unless
    # its holder is a process on this host that is gone (then at once). Default: job timeout + 60 s,
    # since a live holder closes its own row when its job timeout fires.
    worker_claim_lease_s: float | None = None
    alert_sweep_s: int = 60  # re-evaluate every rule: stale data, pending periods ending between scrapes
    alert_deliver_s: int = 5  # outbox polling

    # Alerts. TRACKER_WEBHOOK_ALLOW is the operator's escape hatch from the SSRF guard: comma-separated
    # networks (e.g. 127.0.0.1/32,10.1.0.0/16) that channel URLs may resolve into although private.
    webhook_allow: str = ""
    # Delivery: exponential backoff base × 2^(attempt-1), capped; then give up and mark `failed`.
    alert_retry_base_s: float = 10.0
    alert_retry_max_s: float = 3600.0
    alert_max_attempts: int = 12  # ~10 s … 1 h: a receiver may be down for about 5 hours
    alert_send_timeout_s: float = 10.0
    alert_claim_lease_s: float = 120.0  # a deliverer that dies mid-send gives its message back after this
    alert_batch: int = 50  # messages one delivery pass takes

    @field_validator("intervals")
    @classmethod
    def _positive_intervals(cls, value: dict[str, int]) -> dict[str, int]:
        for name, seconds in value.items():
            if seconds < MIN_INTERVAL_S:
                raise ValueError(f"TRACKER_INTERVALS: {name} every {seconds}s is below the {MIN_INTERVAL_S}s minimum")
        return value

    @field_validator("webhook_allow")
    @classmethod
    def _valid_networks(cls, value: str) -> str:
        for part in _split(value):
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError as exc:
                raise ValueError(f"TRACKER_WEBHOOK_ALLOW: {part!r} is not a network ({exc})") from None
        return value

    @property
    def cleared_sources(self) -> frozenset[str]:
        """TRACKER_REPUBLISH_CLEARED as names: the sources the operator holds permission to republish."""
        return frozenset(_split(self.republish_cleared))

    @property
    def allowed_networks(self) -> tuple[Network, ...]:
        return tuple(ipaddress.ip_network(p, strict=False) for p in _split(self.webhook_allow))

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'tracker.db'}"

    def credentials_for(self, names: Iterable[str]) -> tuple[dict[str, str], list[str]]:
        """The secret values of a provider's declared credentials, and the variables still to set."""
        found = {name: self.credential(name) for name in names}
        missing = [f"TRACKER_{name.upper()}" for name, value in found.items() if value is None]
        return {name: value.get_secret_value() for name, value in found.items() if value is not None}, missing

    def credential(self, name: str) -> SecretStr | None:
        """A provider credential by its declared name, e.g. "LAMBDA_API_KEY"."""
        env_name = f"TRACKER_{name.upper()}"
        if value := os.environ.get(env_name):
            return SecretStr(value)
        candidates = []
        if file_path := os.environ.get(f"{env_name}_FILE"):
            candidates.append(Path(file_path))
        if self.secrets_dir:
            candidates.append(self.secrets_dir / name.lower())
        for path in candidates:
            if path.is_file():
                return SecretStr(path.read_text().strip())
        return None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()

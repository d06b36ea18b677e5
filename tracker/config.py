"""Configuration from the environment (prefix `TRACKER_`), with an embedded default that needs none.

With no configuration the service runs on a SQLite file under the data directory, in one process.
Provider credentials are secrets: read from `TRACKER_<NAME>` or from a file (`TRACKER_<NAME>_FILE`,
or `<secrets_dir>/<name>` for Docker/Kubernetes secrets) and never logged or printed.
"""

from __future__ import annotations

import os
from datetime import timedelta
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    quarantine_min_previous: int = 20  # collapse check only when the last good run had this many offers
    quarantine_collapse_ratio: float = 0.5  # fewer than this fraction of the last good count → quarantine

    http_timeout_s: float = 30.0
    http_retries: int = 3
    max_connections: int = 16  # across all providers scraping concurrently
    scrape_timeout_s: float = 300.0
    stale_after: timedelta = timedelta(hours=6)

    api_token: SecretStr | None = None  # bearer token for mutating endpoints

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'tracker.db'}"

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

"""Alert delivery settings (prefix `TRACKER_`), kept apart from tracker.config until they are merged there.

`TRACKER_WEBHOOK_ALLOW` is the operator's escape hatch from the SSRF guard: a comma-separated list of
networks (e.g. `127.0.0.1/32,10.1.0.0/16`) that channel URLs may resolve into even though they are
private. Nothing is allowed by default.
"""

from __future__ import annotations

import ipaddress
from functools import cached_property

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class AlertSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACKER_", env_file=".env", extra="ignore")

    webhook_allow: str = ""  # comma-separated CIDRs that bypass the private-address refusal
    # Delivery: exponential backoff base × 2^(attempt-1), capped; then give up and mark `failed`.
    alert_retry_base_s: float = 10.0
    alert_retry_max_s: float = 3600.0
    alert_max_attempts: int = 12  # ~10 s … 1 h: a receiver may be down for about 5 hours
    alert_send_timeout_s: float = 10.0
    alert_claim_lease_s: float = 120.0  # a deliverer that dies mid-send gives its message back after this
    alert_batch: int = 50  # messages one delivery pass takes

    @field_validator("webhook_allow")
    @classmethod
    def _valid_networks(cls, value: str) -> str:
        for part in _split(value):
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError as exc:
                raise ValueError(f"TRACKER_WEBHOOK_ALLOW: {part!r} is not a network ({exc})") from None
        return value

    @cached_property
    def allowed_networks(self) -> tuple[Network, ...]:
        return tuple(ipaddress.ip_network(p, strict=False) for p in _split(self.webhook_allow))


def _split(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]

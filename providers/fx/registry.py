"""The rate-source registry: every exchange-rate source, listed by hand (no discovery, no import side effects)."""

from __future__ import annotations

from providers.fx.contract import RateSource
from providers.fx.ecb import EcbRates

__all__ = ["DEFAULT_RATE_SOURCE", "RATE_SOURCES", "UnknownRateSource", "get_rate_source"]

RATE_SOURCES: tuple[type[RateSource], ...] = (EcbRates,)
DEFAULT_RATE_SOURCE = EcbRates.name


class UnknownRateSource(KeyError):
    def __str__(self) -> str:
        return f"unknown rate source {self.args[0]!r}; known: {', '.join(s.name for s in RATE_SOURCES)}"


def get_rate_source(name: str) -> type[RateSource]:
    for source in RATE_SOURCES:
        if source.name == name:
            return source
    raise UnknownRateSource(name)

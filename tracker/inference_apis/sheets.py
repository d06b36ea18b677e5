"""The serverless API price sheet: published $/Mtok per provider and model, dated and sourced.

The file says when it was read (`read_on`); a sheet older than STALE_AFTER_DAYS is still shown but
flagged stale, since API prices move (mostly down) every few months. A malformed sheet is a
SheetError naming the entry and the field, never a half-loaded table.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import Any

STALE_AFTER_DAYS = 120
SOURCES = ("provider", "listing")
_REQUIRED = ("provider", "model", "api_model", "input_usd_per_mtok", "output_usd_per_mtok", "source", "source_url")


class SheetError(ValueError):
    """The price sheet cannot be used: which entry and field, and why."""


@dataclass(frozen=True)
class ApiPrice:
    provider: str
    model: str  # the estimate catalog's id
    api_model: str  # the provider's name for it
    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal
    source: str  # "provider" (its own page) or "listing" (a third party's table of its rates)
    source_url: str
    read_on: date
    precision: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "api_model": self.api_model,
            "input_usd_per_mtok": self.input_usd_per_mtok,
            "output_usd_per_mtok": self.output_usd_per_mtok,
            "precision": self.precision,
            "source": self.source,
            "source_url": self.source_url,
            "read_on": self.read_on.isoformat(),
        }


@dataclass(frozen=True)
class Sheet:
    read_on: date
    prices: tuple[ApiPrice, ...]

    def age_days(self, now: datetime) -> int:
        return (now.astimezone(UTC).date() - self.read_on).days

    def stale(self, now: datetime) -> bool:
        return self.age_days(now) > STALE_AFTER_DAYS


def _price(value: Any, where: str) -> Decimal:
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise SheetError(f"{where}: not a number: {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise SheetError(f"{where}: must be a finite amount of at least 0, got {value!r}")
    return amount


def _entry(raw: Any, index: int, read_on: date) -> ApiPrice:
    if not isinstance(raw, dict):
        raise SheetError(f"price[{index}]: must be a table")
    for key in _REQUIRED:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise SheetError(f"price[{index}].{key}: required, a non-empty string")
    if raw["source"] not in SOURCES:
        raise SheetError(f"price[{index}].source: must be one of {', '.join(SOURCES)}")
    if not raw["source_url"].startswith("https://"):
        raise SheetError(f"price[{index}].source_url: must be an https:// address")
    return ApiPrice(
        provider=raw["provider"],
        model=raw["model"],
        api_model=raw["api_model"],
        input_usd_per_mtok=_price(raw["input_usd_per_mtok"], f"price[{index}].input_usd_per_mtok"),
        output_usd_per_mtok=_price(raw["output_usd_per_mtok"], f"price[{index}].output_usd_per_mtok"),
        source=raw["source"],
        source_url=raw["source_url"],
        read_on=read_on,
        precision=raw.get("precision"),
    )


def parse_sheet(data: dict[str, Any]) -> Sheet:
    """A sheet from its TOML tables (tests feed broken ones)."""
    read_on = data.get("read_on")
    if not isinstance(read_on, date) or isinstance(read_on, datetime):
        raise SheetError("read_on: required, a date (YYYY-MM-DD)")
    entries = data.get("price")
    if not isinstance(entries, list) or not entries:
        raise SheetError("price: at least one [[price]] entry is required")
    prices = tuple(_entry(raw, i, read_on) for i, raw in enumerate(entries))
    seen: set[tuple[str, str]] = set()
    for p in prices:
        if (p.provider, p.api_model) in seen:
            raise SheetError(f"{p.provider} {p.api_model}: listed twice")
        seen.add((p.provider, p.api_model))
    return Sheet(read_on, prices)


@cache
def load_sheet() -> Sheet:
    with resources.files("tracker.inference_apis").joinpath("data/serverless.toml").open("rb") as fh:
        return parse_sheet(tomllib.load(fh))


def prices_for(model_id: str) -> list[ApiPrice]:
    """Every API price of this catalog model, cheapest output first."""
    rows = [p for p in load_sheet().prices if p.model == model_id]
    return sorted(rows, key=lambda p: (p.output_usd_per_mtok, p.input_usd_per_mtok, p.provider))

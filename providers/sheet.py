"""Static rate sheets: published prices shipped as data, for sources with no pricing API.

A sheet is labelled reference data wherever it shows: its offers carry the sheet's source and date.
Sheet format (TOML): title, source, as_of, url, and [[rates]] with gpu (canonical id or raw name),
gpu_count, price_per_gpu_hour (string, USD), pricing, optional region and note.
"""

from __future__ import annotations

import tomllib
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any, ClassVar

from providers.contract import FetchContext, Pricing, Provider, ProviderError, ProviderKind, ScrapedOffer, ScrapeResult

__all__ = ["StaticSheetProvider", "load_sheet", "parse_sheet"]


def load_sheet(name: str) -> dict[str, Any]:
    path = resources.files("providers") / "sheets" / f"{name}.toml"
    try:
        return tomllib.loads(path.read_text())
    except (FileNotFoundError, tomllib.TOMLDecodeError) as exc:
        raise ProviderError(f"rate sheet {name}.toml unreadable: {exc}") from None


class StaticSheetProvider(Provider):
    kind: ClassVar[ProviderKind] = ProviderKind.static_sheet
    default_interval: ClassVar[timedelta] = timedelta(days=1)
    sheet: ClassVar[str]

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse_sheet(load_sheet(self.sheet))

    @classmethod
    def describe(cls) -> dict[str, object]:
        sheet = load_sheet(cls.sheet)
        return super().describe() | {
            "reference": True,
            "source": sheet.get("source"),
            "as_of": str(sheet.get("as_of", "")),
        }


def parse_sheet(sheet: dict[str, Any]) -> ScrapeResult:
    result = ScrapeResult()
    meta = {"reference": True, "source": sheet.get("source", ""), "as_of": str(sheet.get("as_of", ""))}
    for i, rate in enumerate(sheet.get("rates", [])):
        try:
            count = Decimal(str(rate.get("gpu_count", 1)))
            per_gpu = Decimal(str(rate["price_per_gpu_hour"]))
            pricing = Pricing(rate.get("pricing", sheet.get("pricing", "on_demand")))
        except (KeyError, InvalidOperation, ValueError) as exc:
            raise ProviderError(f"rate sheet row {i} is malformed: {exc!r}") from None
        region = str(rate.get("region", sheet.get("region", "")))
        result.offers.append(
            ScrapedOffer(
                key=f"{rate['gpu']}:{count}:{pricing.value}:{region}",
                gpu_name=str(rate["gpu"]),
                gpu_count=count,
                price_per_hour=per_gpu * count,
                pricing=pricing,
                region=region,
                attributes=meta | ({"note": rate["note"]} if "note" in rate else {}),
            )
        )
    return result

"""Static rate sheets: published prices shipped as data, for sources with no pricing API.

A sheet is labelled reference data wherever it shows: its offers carry the sheet's source and date.
Sheet format (TOML): title, source, as_of, url, optional source_type ("price_page": transcribed from the
provider's public pricing page), and [[rates]] with gpu (canonical id or raw name), gpu_count, one price
(strings, USD) — price_per_gpu_hour, price_per_hour (the whole instance, as pages often quote it),
price_per_gpu_second or price_per_second (per-second pages, × 3600) — pricing, reserved_term (required
for reserved rates, spelled by `providers.parsing.reservation_term`), optional region, instance_type
(part of the key: two instances of one card and count), note, and `fabric`, a table of what the page
says of the machine's interconnect and cluster shape (`providers.fabric` keys: gpu_link, network,
network_gbps_per_gpu or network_gbps_per_node, gpus_per_node, cluster_nodes, nodes_available), so a
cluster sheet lists its price per cluster size as one row per size. A row may say `price_kind` ("floor" for a
page's "from $X" / "starting at", "transacted" for a published trade; default "asking") and `orderable`
(default: true for an asking price, and never true for another kind: `providers.contract.offer_problem`).
"""

from __future__ import annotations

import tomllib
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any, ClassVar

from providers.contract import (
    FetchContext,
    PriceKind,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.fabric import fabric
from providers.parsing import reservation_term

__all__ = ["StaticSheetProvider", "load_sheet", "parse_sheet"]

# Each price column and how many of it make one $/GPU-hour (per instance or per GPU, per hour or second).
_PRICE_FIELDS = ("price_per_gpu_hour", "price_per_hour", "price_per_gpu_second", "price_per_second")
_SECONDS_PER_HOUR = Decimal(3600)


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
            "source_type": sheet.get("source_type"),
        }


def parse_sheet(sheet: dict[str, Any]) -> ScrapeResult:
    result = ScrapeResult()
    meta = {"reference": True, "source": sheet.get("source", ""), "as_of": str(sheet.get("as_of", ""))}
    meta |= {k: sheet[k] for k in ("source_type", "url") if sheet.get(k)}
    for i, rate in enumerate(sheet.get("rates", [])):
        try:
            count = Decimal(str(rate.get("gpu_count", 1)))
            pricing = Pricing(rate.get("pricing", sheet.get("pricing", "on_demand")))
            price = _instance_hourly(rate, count)
        except (KeyError, InvalidOperation, ValueError) as exc:
            raise ProviderError(f"rate sheet row {i} is malformed: {exc!r}") from None
        if not (count.is_finite() and price.is_finite()) or count <= 0 or price <= 0:
            raise ProviderError(f"rate sheet row {i} is malformed: GPU count and price must be positive")
        kind, orderable = _kind(rate, i)
        term = rate.get("reserved_term")
        if (pricing is Pricing.reserved) != (term is not None):
            raise ProviderError(f"rate sheet row {i}: a reserved rate needs its reserved_term, and only it has one")
        term = reservation_term(term, f"rate sheet row {i}") if term is not None else None
        region = str(rate.get("region", sheet.get("region", "")))
        instance = rate.get("instance_type")
        # The key keeps its historical shape; the term and instance are appended only where a sheet has them.
        key = f"{rate['gpu']}:{count}:{pricing.value}:{region}" + (f":{term}" if term else "")
        result.offers.append(
            ScrapedOffer(
                key=key + (f":{instance}" if instance else ""),
                gpu_name=str(rate["gpu"]),
                gpu_count=count,
                price_per_hour=price,
                pricing=pricing,
                region=region,
                reserved_term=term,
                instance_type=str(instance) if instance else None,
                price_kind=kind,
                orderable=orderable,
                attributes=meta | ({"note": rate["note"]} if "note" in rate else {}) | _fabric(rate, i, count),
            )
        )
    return result


def _kind(rate: dict[str, Any], i: int) -> tuple[PriceKind, bool]:
    """The row's price kind and orderability (module docstring); a misspelt kind is a malformed sheet."""
    try:
        kind = PriceKind(rate.get("price_kind", PriceKind.asking.value))
    except ValueError:
        kinds = ", ".join(PriceKind)
        raise ProviderError(f"rate sheet row {i}: price_kind {rate['price_kind']!r} is not one of {kinds}") from None
    orderable = rate.get("orderable", kind is PriceKind.asking)
    if not isinstance(orderable, bool) or (orderable and kind is not PriceKind.asking):
        raise ProviderError(f"rate sheet row {i}: orderable must be a boolean, and true only for an asking price")
    return kind, orderable


_FABRIC_KEYS = frozenset(
    {
        "gpu_link",
        "network",
        "network_gbps_per_gpu",
        "network_gbps_per_node",
        "gpus_per_node",
        "cluster_nodes",
        "nodes_available",
    }
)


def _fabric(rate: dict[str, Any], i: int, count: Decimal) -> dict[str, Any]:
    table = rate.get("fabric")
    if table is None:
        return {}
    if not isinstance(table, dict) or set(table) - _FABRIC_KEYS:
        raise ProviderError(f"rate sheet row {i}: fabric must be a table of {', '.join(sorted(_FABRIC_KEYS))}")
    said = fabric(**table, gpus=count)
    if len(said) < len(set(table) - {"network_gbps_per_node"}):
        raise ProviderError(f"rate sheet row {i}: a fabric value is not one providers.fabric knows: {table}")
    return said


def _instance_hourly(rate: dict[str, Any], count: Decimal) -> Decimal:
    """The row's one price as $ per instance-hour: pages quote per GPU or per instance, per hour or second."""
    given = [f for f in _PRICE_FIELDS if f in rate]
    if len(given) != 1:
        raise ValueError(f"exactly one of {', '.join(_PRICE_FIELDS)} is needed, got {given or 'none'}")
    value = Decimal(str(rate[given[0]]))
    if not value.is_finite():  # a NaN would raise InvalidOperation at the caller's `price <= 0` check
        raise ValueError(f"{given[0]} {rate[given[0]]!r} is not a finite number")
    if given[0].endswith("_second"):
        value *= _SECONDS_PER_HOUR
    return value * count if "_gpu_" in given[0] else value

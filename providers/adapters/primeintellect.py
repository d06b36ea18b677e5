"""Prime Intellect (aggregator): `GET /api/v1/availability/gpus` (providers.md A.1 #16, A.2, C.3, C.4).

Auth: `Authorization: Bearer <PRIME_API_KEY>`. Paginated with `page` (from 1) and `page_size=100`; the
answer is `{items, totalCount}` and we walk pages until we hold `totalCount` items (or a page is empty).

Each item is one upstream box (`provider`: runpod, lambdalabs, nebius, dc_*, … with its `cloudId`):
* `prices.onDemand` is USD per hour for the whole box (all `gpuCount` GPUs); `prices.communityPrice` is
  used when no on-demand price is given (recorded in attributes.price_field);
* `isSpot` → a spot offer (distinct key), otherwise on-demand;
* `gpuMemory` is the box's TOTAL GPU memory → divided by `gpuCount`. If that contradicts the memory in the
  GPU type's own name while the raw field equals it, the field is taken as per-GPU (noted in attributes);
* `gpuType` ("H100_80GB") has no form factor; `socket` ("SXM5", "PCIe") does, so the raw name passed on
  is e.g. "H100 80GB SXM5" (original in attributes.raw_gpu);
* `stockStatus` Available/High/Medium/Low → available, Unavailable/Out of stock → not, else unknown.

Disk: `disk.{minCount, defaultCount, maxCount, pricePerUnit, step, defaultIncludedInPrice}` (GB; the
rate is USD per GB-hour, like the box's hourly price). When `defaultIncludedInPrice` is false the box
cannot run without a disk it does not include: the least one (`minCount`, else `defaultCount`) is billed
on top, so it is part of the offer's price (`box_price_per_hour` and `disk_price_per_hour` in attributes),
and the cost terms say that disk is paid and what more costs ($/GB-month at 730 h). When it is true the
default disk is included and only disk beyond it costs. Where the field is absent nothing is assumed.

Aggregator: each box is another provider's machine. `upstream` is that provider (`provider`, normalised
by `providers.parsing.upstream_provider`, so "lambdalabs" or "runpod" match our own adapters); the
offer then reaches us `via=primeintellect` (`providers.fetching.labelled_aggregated`). Prime's own
datacenters (`dc_*`) are Prime's machines, not resales: no upstream. The raw name stays in
attributes.upstream_raw. Rate limit: none documented for the availability endpoint (429 is retried).

Known quirk (providers.md A.2): a flaky replica sometimes answers `200 {"items": [], "totalCount": 0}`.
This parser returns an empty result for it rather than guessing; ingest's quarantine (a batch collapsing
against the previous run's offer count) keeps the last good data instead of recording every offer as gone.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.cost_terms import COST_TERMS, terms
from providers.fabric import fabric
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, to_optional_decimal, upstream_provider

URL = "https://api.primeintellect.ai/api/v1/availability/gpus"
PAGE_SIZE = 100
MAX_PAGES = 200
OWN_DATACENTER = "dc_"  # Prime Intellect's own datacenters ("dc_roan"): its machines, not a resale
GB_PLACES = Decimal("0.01")
IN_STOCK = {"available", "high", "medium", "low"}
OUT_OF_STOCK = {"unavailable", "out_of_stock", "out of stock", "outofstock", "none", "sold_out", "sold out"}


def _default_count(value: Any, where: str) -> Decimal | None:
    """`vcpu` / `memory` are objects with a `defaultCount`; tolerate a bare number or null."""
    if isinstance(value, dict):
        return to_optional_decimal(value.get("defaultCount"), f"{where}.defaultCount")
    return to_optional_decimal(value, where)


def availability(stock: Any) -> bool | None:
    if not isinstance(stock, str):
        return None
    status = stock.strip().lower()
    if status in IN_STOCK:
        return True
    if status in OUT_OF_STOCK:
        return False
    return None


def raw_gpu_name(gpu_type: str, socket: str | None) -> str:
    """'H100_80GB' + 'SXM5' → 'H100 80GB SXM5'; 'RTX_PRO_6000B_96GB' + None → 'RTX PRO 6000B 96GB'."""
    name = gpu_type.replace("_", " ").strip()
    if socket and socket.strip().lower() not in name.lower():
        name = f"{name} {socket.strip()}"
    return name


def _per_gpu_memory(total: Decimal | None, count: Decimal, gpu_type: str) -> tuple[Decimal | None, bool]:
    if not total:
        return None, False
    per_gpu = total / count
    named = memory_in_name(gpu_type)
    # A multi-GPU box whose "total" equals one card's memory reported it per GPU already.
    if named is not None and count > 1 and abs(per_gpu - named) > named / 10 >= abs(total - named):
        return total, True
    return per_gpu.quantize(GB_PLACES) if per_gpu != per_gpu.to_integral_value() else per_gpu, False


HOURS_PER_MONTH = Decimal(730)


def disk_terms(disk: Any, where: str) -> tuple[Decimal, dict[str, Any]]:
    """(USD/hour of disk the box must buy on top, the cost terms its disk block states)."""
    if not isinstance(disk, dict) or not isinstance(disk.get("defaultIncludedInPrice"), bool):
        return Decimal(0), {}
    rate = to_optional_decimal(disk.get("pricePerUnit"), f"{where}.disk.pricePerUnit")
    least = to_optional_decimal(disk.get("minCount"), f"{where}.disk.minCount")
    default = to_optional_decimal(disk.get("defaultCount"), f"{where}.disk.defaultCount")
    monthly = None if rate is None else rate * HOURS_PER_MONTH
    if disk["defaultIncludedInPrice"]:
        return Decimal(0), terms(included_disk_gb=default, disk_usd_per_gb_month=monthly)
    least = least if least is not None else default
    if rate is None or least is None or rate <= 0 or least <= 0:
        return Decimal(0), terms(included_disk_gb=Decimal(0), disk_usd_per_gb_month=monthly)
    return least * rate, terms(included_disk_gb=least, disk_usd_per_gb_month=monthly)


def parse_page(payload: Any, result: ScrapeResult | None = None, seen: set[str] | None = None) -> ScrapeResult:
    result = result if result is not None else ScrapeResult()
    seen = seen if seen is not None else set()
    for i, raw in enumerate(as_list(require(payload, "items", "response"), "items")):
        with dropping(result, f"items[{i}]"):  # one malformed object is dropped with its reason
            where = f"items[{i}]"
            gpu_type = require(raw, "gpuType", where)
            count = to_optional_decimal(require(raw, "gpuCount", where), f"{where}.gpuCount")
            if not gpu_type or not count or count <= 0 or str(gpu_type).upper().startswith("CPU"):
                continue  # CPU node
            gpu_type = str(gpu_type)
            provider = str(require(raw, "provider", where))
            cloud_id = str(require(raw, "cloudId", where))
            prices = require(raw, "prices", where)
            price_field = "onDemand"
            price = to_optional_decimal(require(prices, "onDemand", f"{where}.prices"), f"{where}.prices.onDemand")
            if price is None:
                price_field = "communityPrice"
                price = to_optional_decimal(prices.get("communityPrice"), f"{where}.prices.communityPrice")
            if price is None or price <= 0:
                result.skipped.append(f"{provider}:{cloud_id}: no price")
                continue
            currency = prices.get("currency")
            if currency and str(currency).upper() != "USD":
                result.skipped.append(f"{provider}:{cloud_id}: price in {currency}")
                continue
            spot = raw.get("isSpot") is True
            datacenter = raw.get("dataCenter")
            country = raw.get("country")
            region = str(datacenter or country or "").strip().lower()
            security = raw.get("security")
            key = ":".join(
                [provider, cloud_id, region, str(count)]
                + ([str(security)] if security else [])
                + (["spot"] if spot else [])
            )
            if key in seen:
                result.skipped.append(f"{key}: listed twice")
                continue
            seen.add(key)
            memory, per_gpu_field = _per_gpu_memory(
                to_optional_decimal(raw.get("gpuMemory"), f"{where}.gpuMemory"), count, gpu_type
            )
            socket = raw.get("socket")
            # `upstream` in attributes is set from ScrapedOffer.upstream by fetch_offers, with `via`.
            attributes: dict[str, Any] = {"upstream_raw": provider, "cloud_id": cloud_id, "raw_gpu": gpu_type}
            for field_name, attr in (
                ("socket", "socket"),
                ("security", "security"),
                ("country", "country"),
                ("dataCenter", "datacenter"),
                ("stockStatus", "stock_status"),
            ):
                if raw.get(field_name) is not None:
                    attributes[attr] = raw[field_name]
            if price_field != "onDemand":
                attributes["price_field"] = price_field
            # `interconnect` is the box's inter-node bandwidth (Gbit/s), `interconnectType` its kind.
            attributes |= fabric(
                network=raw.get("interconnectType"), network_gbps_per_node=raw.get("interconnect"), gpus_per_node=count
            )
            disk_price, disk_cost_terms = disk_terms(raw.get("disk"), where)
            if disk_cost_terms:
                attributes[COST_TERMS] = disk_cost_terms
            if disk_price:
                attributes |= {"box_price_per_hour": str(price), "disk_price_per_hour": str(disk_price)}
            if per_gpu_field:
                attributes["gpu_memory_field"] = "per_gpu"
            result.offers.append(
                ScrapedOffer(
                    key=key,
                    gpu_name=raw_gpu_name(gpu_type, str(socket) if socket else None),
                    gpu_count=count,
                    price_per_hour=price + disk_price,
                    pricing=Pricing.spot if spot else Pricing.on_demand,
                    region=region,
                    gpu_memory_gb=memory,
                    instance_type=cloud_id,
                    available=availability(raw.get("stockStatus")),
                    vcpus=_default_count(raw.get("vcpu"), f"{where}.vcpu"),
                    ram_gb=_default_count(raw.get("memory"), f"{where}.memory"),
                    attributes=attributes,
                    upstream=None if provider.lower().startswith(OWN_DATACENTER) else upstream_provider(provider),
                )
            )
    return result


class PrimeIntellect(Provider):
    name = "primeintellect"
    title = "Prime Intellect (aggregator)"
    kind = ProviderKind.marketplace
    homepage = "https://www.primeintellect.ai"
    credentials = ("PRIME_API_KEY",)
    # 3: a disk not included in the price is billed in it. 2: upstream set (via=primeintellect); the raw
    # provider in attributes.upstream_raw.
    parser_version = "3"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"Authorization": f"Bearer {ctx.secret('PRIME_API_KEY')}"}
        result = ScrapeResult()
        seen: set[str] = set()
        received = 0
        for page in range(1, MAX_PAGES + 1):
            payload = await get_json(ctx, URL, params={"page": page, "page_size": PAGE_SIZE}, headers=headers)
            total = to_optional_decimal(require(payload, "totalCount", "response"), "totalCount") or Decimal(0)
            items = require(payload, "items", "response")
            parse_page(payload, result, seen)
            received += len(items)
            if not items or received >= total:
                return result
        raise ProviderError(f"pagination did not end after {MAX_PAGES} pages")

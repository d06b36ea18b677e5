"""Nebula Block: GPU instances by country.

API: `GET https://api.nebulablock.com/api/v1/computing/products`, public and unauthenticated, one document.

Shape: `{status, data: {<COUNTRY>: {<gpu_type>: [{id, product_type, price_per_hour, gpu: "A100-80G-PCIe",
gpu_type, gpu_count, vram?, cpu, ram (GB), disk_size (GB), region, country, stock, is_available, is_spot}]}}}`
(a map by country, then by GPU type, of product lists).

Units and rules:
* `price_per_hour` is **USD per instance-hour** for all `gpu_count` GPUs;
* `is_spot` → a spot offer (interruptible), else on demand; both are kept, labelled;
* the raw GPU name is `gpu` ("H100-80G-SXM": model, memory and form factor in one), its memory read
  from the name (`vram` when given);
* region: `country` slugged ("CANADA" → "canada"), the broad `region` ("North America") in attributes;
* `available`: `is_available` and `stock > 0` (the stock count kept in attributes).
A `status` other than "success" is a failed answer, not an empty market.

Rate limit: none documented; one request per run. Kind: marketplace (stock moves by the minute).
"""

from __future__ import annotations

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
from providers.http import get_json, require
from providers.items import parse_items
from providers.parsing import as_list, memory_in_name, slug, to_decimal, to_optional_decimal

URL = "https://api.nebulablock.com/api/v1/computing/products"


def _product(raw: dict[str, Any], where: str) -> ScrapedOffer | str:
    product_id = str(require(raw, "id", where))
    gpu = str(raw.get("gpu") or "").strip()
    count = to_optional_decimal(raw.get("gpu_count"), f"{where}.gpu_count")
    if not gpu or not count or count <= 0:
        return f"{product_id}: no GPU model or count"
    price = to_decimal(require(raw, "price_per_hour", where), f"{where}.price_per_hour")
    if price <= 0:
        return f"{product_id}: price {raw.get('price_per_hour')!r} per hour"
    stock = to_optional_decimal(raw.get("stock"), f"{where}.stock")
    available = raw.get("is_available")
    attributes: dict[str, Any] = {"raw_gpu": gpu}
    for field_name in ("product_type", "gpu_type", "region", "disk_size"):
        if raw.get(field_name) is not None:
            attributes[field_name] = raw[field_name]
    if stock is not None:
        attributes["stock"] = int(stock)
    spot = raw.get("is_spot") is True
    return ScrapedOffer(
        key=product_id,
        gpu_name=gpu,
        gpu_count=count,
        price_per_hour=price,
        pricing=Pricing.spot if spot else Pricing.on_demand,
        region=slug(raw.get("country")),
        gpu_memory_gb=to_optional_decimal(raw.get("vram"), f"{where}.vram") or memory_in_name(gpu),
        instance_type=f"{int(count)}x {gpu}",
        available=None if available is None else (available is True and (stock is None or stock > 0)),
        vcpus=to_optional_decimal(raw.get("cpu"), f"{where}.cpu"),
        ram_gb=to_optional_decimal(raw.get("ram"), f"{where}.ram"),
        attributes=attributes,
    )


def parse(payload: Any) -> ScrapeResult:
    status = require(payload, "status", "response")
    if status != "success":
        raise ProviderError(f"products answered status {status!r}")
    data = require(payload, "data", "response")
    if not isinstance(data, dict):
        raise ProviderError("schema changed: data is not an object of countries")
    items: list[tuple[str, Any]] = []
    for country, by_type in data.items():
        if not isinstance(by_type, dict):
            raise ProviderError(f"schema changed: data.{country} is not an object of GPU types")
        for gpu_type, products in by_type.items():
            where = f"data.{country}.{gpu_type}"
            items += [(f"{where}[{i}]", p) for i, p in enumerate(as_list(products, "products", where))]
    return parse_items(items, _product, ScrapeResult())


class NebulaBlock(Provider):
    name = "nebulablock"
    title = "Nebula Block"
    kind = ProviderKind.marketplace
    homepage = "https://www.nebulablock.com/pricing"
    credentials = ()
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL))

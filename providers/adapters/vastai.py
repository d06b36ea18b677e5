"""Vast.ai marketplace: `POST /api/v0/bundles/` lists every rentable machine (providers.md A.2 §1, B.1).

Quirks handled here:
* a bundle's price covers all of its `num_gpus` GPUs; we take `dph_total` (Vast's hourly total with the
  default storage allocation) and fall back to `dph_base`;
* `min_bid` (may be null) is the interruptible floor for the whole machine → a separate spot offer;
* `geolocation` may be null ("" region); `cpu_cores` may be null (the offer is still a real price);
* `gpu_ram` is MB per GPU (≈ MiB): passed on as GiB and snapped to the card's size by the catalog.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
    default_interval_for,
)
from providers.http import post_json, require
from providers.parsing import as_list, gigabytes, slug, to_decimal, to_optional_decimal

URL = "https://console.vast.ai/api/v0/bundles/"
QUERY: dict[str, Any] = {
    "rentable": {"eq": True},
    "rented": {"eq": False},
    "order": [["score", "desc"]],
    "type": "on-demand",
    "limit": 10000,
}


def region_of(geolocation: str | None) -> str:
    """'Texas, US' → 'us-texas'; null → ''."""
    if not geolocation:
        return ""
    parts = [p.strip() for p in geolocation.split(",")]
    if len(parts) >= 2 and len(parts[-1]) == 2:
        return f"{parts[-1].lower()}-{slug(','.join(parts[:-1]))}"
    return slug(geolocation)


def parse(payload: Any) -> ScrapeResult:
    offers = as_list(require(payload, "offers", "response"), "'offers'")
    result = ScrapeResult()
    for i, raw in enumerate(offers):
        where = f"offers[{i}]"
        offer_id = require(raw, "id", where)
        num_gpus = to_decimal(require(raw, "num_gpus", where), f"{where}.num_gpus")
        if not num_gpus or num_gpus <= 0:
            result.skipped.append(f"{where}: num_gpus={num_gpus}")
            continue
        price = to_optional_decimal(raw.get("dph_total"), f"{where}.dph_total") or to_optional_decimal(
            raw.get("dph_base"), f"{where}.dph_base"
        )
        if price is None:
            raise ProviderError(f"schema changed: no dph_total/dph_base at {where}")
        gpu_ram_mb = to_optional_decimal(raw.get("gpu_ram"), f"{where}.gpu_ram")
        cpu_ram_mb = to_optional_decimal(raw.get("cpu_ram"), f"{where}.cpu_ram")
        on_demand = ScrapedOffer(
            key=str(offer_id),
            gpu_name=str(require(raw, "gpu_name", where)),
            gpu_count=num_gpus,
            price_per_hour=price,
            region=region_of(raw.get("geolocation")),
            gpu_memory_gb=gigabytes(gpu_ram_mb, 1024),  # MB per GPU, ≈ MiB
            instance_type=f"machine-{raw['machine_id']}" if raw.get("machine_id") is not None else None,
            available=True,  # every listed bundle is rentable and not rented
            vcpus=to_optional_decimal(raw.get("cpu_cores_effective"), f"{where}.cpu_cores_effective")
            if raw.get("cpu_cores") is not None
            else None,
            ram_gb=gigabytes(cpu_ram_mb, 1000),
            attributes={
                k: raw[k]
                for k in ("machine_id", "host_id", "verified", "datacenter", "reliability2", "compute_cap")
                if k in raw
            },
        )
        result.offers.append(on_demand)
        min_bid = to_optional_decimal(raw.get("min_bid"), f"{where}.min_bid")
        if min_bid is not None and min_bid > 0:
            # The bid is the same machine at another price: everything but key, price and pricing carries over.
            result.offers.append(
                replace(on_demand, key=f"{offer_id}:bid", price_per_hour=min_bid, pricing=Pricing.spot)
            )
    return result


class VastAi(Provider):
    name = "vastai"
    title = "Vast.ai"
    kind = ProviderKind.marketplace
    homepage = "https://vast.ai"
    default_interval = default_interval_for(ProviderKind.marketplace)
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await post_json(ctx, URL, json=QUERY))

"""Daytona GPU sandboxes: `GET https://billing.app.daytona.io/gpu-pricing` (market-2026.md §4.1 A "Daytona").

API and auth: one public JSON rate card, no credentials (SkyPilot's `fetch_daytona.py` reads it anonymously,
`skypilot-org/skypilot@35cd9876`). No pagination. No rate limit is documented (`requests_per_minute` None);
one request per run, and a 429 is retried with backoff by `providers.http`.

Units: USD per hour, JSON numbers.
* `gpus[].{type, onDemandPricePerHour, spotPricePerHour}` is the rate of ONE GPU;
* `resources.{onDemand,spot}.{vcpuPerHour, memoryGiBPerHour}` are per vCPU-hour and per GiB-hour.

A sandbox is billed for its GPUs plus its vCPUs and memory, so an offer's price is the sum of the parts for
a representative shape: 8 vCPUs per GPU and 100 GiB of memory per GPU (50 GiB for GeForce cards), the shapes
SkyPilot's fetcher documents for Daytona. The GPU-only rate and the resource rates are kept in attributes,
so a consumer can re-price another shape. One offer per GPU type and count (1, 2, 4, 8); the spot offer
(key suffix ":spot") uses the spot rates and exists only when it is positive and below on demand. Disk is
billed per GiB on top and is not included (attributes say so).

GPU sandboxes run in Daytona's shared GPU fleet, with no region choice: `region` is empty. The card's memory
comes from a table of the types Daytona lists (the feed gives none); a type missing from it passes through
without memory, so the catalog decides. The feed says nothing of capacity: `available` is None.

Orderability comes from the feed itself: a type with a positive on-demand rate is on the rate card and is
offered (a real 2026 response prices B200 at 6.25 on demand, 3.59 spot, and it is listed); a type without
one is dropped with a reason. No hard-coded list decides it, so a type Daytona starts selling shows up on
the next scrape, and one it stops pricing drops out.

Docs-built: the bundled cassette follows the field names SkyPilot reads; its rates are solved from
SkyPilot's published Daytona catalog (built from the live feed), and the tests check our prices against it.
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
from providers.http import get_json, require
from providers.parsing import as_list, dropping, to_decimal, to_optional_decimal

URL = "https://billing.app.daytona.io/gpu-pricing"
GPU_COUNTS = (1, 2, 4, 8)
VCPUS_PER_GPU = 8
MEMORY_PER_GPU_GIB = 100
CONSUMER_MEMORY_PER_GPU_GIB = 50

# Daytona GPU type → (raw name passed on, memory per GPU in GB, GeForce card). H100/H200 carry no form
# factor: Daytona does not say which, and the catalog must not be handed a guess.
GPU_TYPES: dict[str, tuple[str, Decimal, bool]] = {
    "B300": ("B300", Decimal(288), False),
    "B200": ("B200", Decimal(180), False),
    "H200": ("H200", Decimal(141), False),
    "H100": ("H100", Decimal(80), False),
    "RTX-PRO-6000": ("RTX PRO 6000", Decimal(96), False),
    "RTX-5090": ("RTX 5090", Decimal(32), True),
    "RTX-4090": ("RTX 4090", Decimal(24), True),
    "MI355X": ("MI355X", Decimal(288), False),
}


def _rates(resources: Any, tier: str) -> tuple[Decimal, Decimal] | None:
    """(per vCPU-hour, per GiB-hour) of one tier ("onDemand" / "spot"); None when the feed has no such tier."""
    block = resources.get(tier) if isinstance(resources, dict) else None
    if not isinstance(block, dict):
        return None
    where = f"resources.{tier}"
    return (
        to_decimal(require(block, "vcpuPerHour", where), f"{where}.vcpuPerHour"),
        to_decimal(require(block, "memoryGiBPerHour", where), f"{where}.memoryGiBPerHour"),
    )


def parse(payload: Any) -> ScrapeResult:
    gpus = as_list(require(payload, "gpus", "response"), "gpus")
    resources = require(payload, "resources", "response")
    require(resources, "onDemand", "resources")
    on_demand_rates = _rates(resources, "onDemand")
    if on_demand_rates is None:
        raise ProviderError("schema changed: resources.onDemand is not an object")
    spot_rates = _rates(resources, "spot")
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(gpus):
        with dropping(result, f"gpus[{i}]"):  # one malformed object is dropped with its reason
            where = f"gpus[{i}]"
            gpu_type = str(require(raw, "type", where)).strip()
            gpu_rate = to_optional_decimal(require(raw, "onDemandPricePerHour", where), f"{where}.onDemandPricePerHour")
            if not gpu_type:
                result.skipped.append(f"{where}: GPU entry without a type")
                continue
            if gpu_type in seen:
                result.skipped.append(f"{gpu_type}: listed twice")
                continue
            seen.add(gpu_type)
            if gpu_rate is None or gpu_rate <= 0:
                result.skipped.append(f"{gpu_type}: no on-demand price")
                continue
            spot_rate = to_optional_decimal(raw.get("spotPricePerHour"), f"{where}.spotPricePerHour")
            name, memory, consumer = GPU_TYPES.get(gpu_type.upper(), (gpu_type.replace("-", " "), None, False))
            memory_per_gpu = CONSUMER_MEMORY_PER_GPU_GIB if consumer else MEMORY_PER_GPU_GIB
            for count in GPU_COUNTS:
                vcpus, ram = VCPUS_PER_GPU * count, memory_per_gpu * count
                vcpu_rate, mem_rate = on_demand_rates
                attributes: dict[str, Any] = {
                    "daytona_type": gpu_type,
                    "gpu_price_per_hour": str(gpu_rate),
                    "vcpu_price_per_hour": str(vcpu_rate),
                    "memory_gib_price_per_hour": str(mem_rate),
                    "shape": "representative",  # GPU + vCPU + RAM at the documented sandbox shape; disk extra
                    "disk_included": False,
                }
                template = ScrapedOffer(
                    key=f"{gpu_type}:{count}",
                    gpu_name=name,
                    gpu_count=Decimal(count),
                    price_per_hour=gpu_rate * count + vcpu_rate * vcpus + mem_rate * ram,
                    gpu_memory_gb=memory,
                    instance_type=f"{count}x-{gpu_type}",
                    available=None,
                    vcpus=Decimal(vcpus),
                    ram_gb=Decimal(ram),
                    attributes=attributes,
                )
                result.offers.append(template)
                if spot_rate is None or spot_rate <= 0 or spot_rates is None:
                    continue
                s_vcpu, s_mem = spot_rates
                spot_price = spot_rate * count + s_vcpu * vcpus + s_mem * ram
                if spot_price >= template.price_per_hour:
                    result.skipped.append(f"{template.key}:spot: spot price not below on demand")
                    continue
                spot_attributes = attributes | {
                    "gpu_price_per_hour": str(spot_rate),
                    "vcpu_price_per_hour": str(s_vcpu),
                    "memory_gib_price_per_hour": str(s_mem),
                }
                result.offers.append(
                    ScrapedOffer(
                        key=f"{template.key}:spot",
                        gpu_name=name,
                        gpu_count=template.gpu_count,
                        price_per_hour=spot_price,
                        pricing=Pricing.spot,
                        gpu_memory_gb=memory,
                        instance_type=template.instance_type,
                        available=None,
                        vcpus=template.vcpus,
                        ram_gb=template.ram_gb,
                        attributes=spot_attributes,
                    )
                )
    return result


class Daytona(Provider):
    name = "daytona"
    title = "Daytona (GPU sandboxes)"
    kind = ProviderKind.cloud
    homepage = "https://www.daytona.io/pricing"
    credentials = ()
    parser_version = "2"  # 2: orderability from the feed (B200 no longer dropped by a constant)
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL))

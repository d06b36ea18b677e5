"""TensorDock v2: `GET https://dashboard.tensordock.com/api/v2/locations`.

Auth: `Authorization: Bearer <TENSORDOCK_API_KEY>`. No pagination. The v2 response is documented only
 (documented, not seen in a real response): `data.locations[].{id, city, stateprovince, country, tier, gpus[]}` with
`gpus[].{v0Name, displayName, max_count, price_per_hr, resources.{max_vcpus, max_ram_gb,
max_storage_gb}, pricing.{per_vcpu_hr, per_gb_ram_hr, per_gb_storage_hr}}`.

Pricing semantics:
* `price_per_hr` is USD per GPU-hour, so an offer of n GPUs costs n × price_per_hr;
* it is the GPU's price only: TensorDock bills vCPUs, RAM and storage on top at the per-unit rates in
  `pricing`, which are kept in attributes (with `price_scope: "gpu_only"`), not folded into the price.

Offers: one per (location × GPU model × count) for every count 1..max_count, capped at 8 (a linear
per-GPU price gives no extra information beyond 8, and bigger VMs are rare on TensorDock). Every row
listed is deployable, so `available` is True; a GPU listed with `max_count` 0 yields a single count-1
offer marked unavailable, so its price history is kept.
The raw GPU name is `displayName` ("NVIDIA GeForce RTX 4090 PCIe 24GB"); `v0Name` is kept in attributes
and gives the memory (…-24gb) when the display name does not.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, slug, to_decimal, to_optional_decimal

URL = "https://dashboard.tensordock.com/api/v2/locations"
MAX_COUNT = 8


def _memory(display: str, v0_name: str) -> Decimal | None:
    for text in (display, v0_name):
        if (memory := memory_in_name(text)) is not None:
            return memory
    return None


def parse(payload: Any) -> ScrapeResult:
    data = require(payload, "data", "response")
    locations = as_list(require(data, "locations", "data"), "data.locations")
    result = ScrapeResult()
    for i, loc in enumerate(locations):
        with dropping(result, f"locations[{i}]"):
            where = f"locations[{i}]"
            loc_id = str(require(loc, "id", where))
            region = slug(loc.get("country"), loc.get("stateprovince"), loc.get("city"))
            for j, gpu in enumerate(as_list(require(loc, "gpus", where), f"{where}.gpus")):
                with dropping(result, f"locations[{i}].gpus[{j}]"):
                    gwhere = f"{where}.gpus[{j}]"
                    v0_name = str(require(gpu, "v0Name", gwhere))
                    display = str(gpu.get("displayName") or v0_name)
                    per_gpu = to_optional_decimal(require(gpu, "price_per_hr", gwhere), f"{gwhere}.price_per_hr")
                    if per_gpu is None or per_gpu <= 0:
                        result.skipped.append(f"{loc_id}:{v0_name}: no price")
                        continue
                    max_count = to_optional_decimal(require(gpu, "max_count", gwhere), f"{gwhere}.max_count")
                    max_count = max_count or Decimal(0)
                    resources = gpu.get("resources") if isinstance(gpu.get("resources"), dict) else {}
                    unit_prices = gpu.get("pricing") if isinstance(gpu.get("pricing"), dict) else {}
                    attributes: dict[str, Any] = {
                        "price_scope": "gpu_only",
                        "v0_name": v0_name,
                        "location_id": loc_id,
                        "max_count": int(max_count),
                    }
                    attributes |= {k: v for k, v in resources.items() if v is not None}
                    attributes |= {
                        k: format(to_decimal(v, f"{gwhere}.pricing.{k}"), "f")
                        for k, v in unit_prices.items()
                        if v is not None
                    }
                    if loc.get("tier") is not None:
                        attributes["tier"] = loc["tier"]
                    counts = range(1, min(int(max_count), MAX_COUNT) + 1) if max_count >= 1 else range(1, 2)
                    for n in counts:
                        result.offers.append(
                            ScrapedOffer(
                                key=f"{loc_id}:{v0_name}:{n}",
                                gpu_name=display,
                                gpu_count=Decimal(n),
                                price_per_hour=per_gpu * n,
                                region=region,
                                gpu_memory_gb=_memory(display, v0_name),
                                instance_type=f"{n}x {v0_name}",
                                available=max_count >= 1,
                                attributes=dict(attributes),
                            )
                        )
    return result


class TensorDock(Provider):
    name = "tensordock"
    title = "TensorDock"
    kind = ProviderKind.marketplace
    homepage = "https://tensordock.com"
    credentials = ("TENSORDOCK_API_KEY",)
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"Authorization": f"Bearer {ctx.secret('TENSORDOCK_API_KEY')}"}
        return parse(await get_json(ctx, URL, headers=headers))

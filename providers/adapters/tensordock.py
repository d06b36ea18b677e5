"""TensorDock v2: `GET https://dashboard.tensordock.com/api/v2/locations` (providers.md A.1 #22, A.2, E.3).

Auth: `Authorization: Bearer <TENSORDOCK_API_KEY>`. No pagination. The v2 response is documented only
(providers.md marks it [doc]): `data.locations[].{id, city, stateprovince, country, tier, gpus[]}` with
`gpus[].{v0Name, displayName, max_count, price_per_hr, resources.{max_vcpus, max_ram_gb,
max_storage_gb}, pricing.{per_vcpu_hr, per_gb_ram_hr, per_gb_storage_hr}}`.

Pricing semantics:
* `price_per_hr` is USD per GPU-hour, and it is the GPU's price only: a TensorDock VM is billed for its
  GPUs plus its vCPUs, RAM and storage at the per-unit rates in `pricing`. A GPU alone cannot be rented,
  so an offer is priced as the SMALLEST VALID MACHINE with its n GPUs: n × price_per_hr plus the least
  vCPUs, RAM and disk a VM must have (`resources.min_vcpus` / `min_ram_gb` / `min_storage_gb` where the
  API states them; else 2 vCPUs and 4 GB of RAM per GPU and a 100 GB boot disk, the floor of TensorDock's
  deploy form, an assumption the attributes say: `min_shape_from`). A count whose minimum exceeds the
  location's `max_*` is no valid machine and is left out. The parts are kept in attributes
  (`price_scope: "smallest_machine"`, `gpu_price_per_hour`, `vcpus`, `ram_gb`, `storage_gb` and the unit
  rates), and the cost terms say the disk priced in and what more disk costs.

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
from providers.cost_terms import COST_TERMS, terms
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, slug, to_decimal, to_optional_decimal

URL = "https://dashboard.tensordock.com/api/v2/locations"
MAX_COUNT = 8
# The smallest VM when the listing states no minimum (see the module docstring): per GPU, and one disk.
MIN_VCPUS_PER_GPU = Decimal(2)
MIN_RAM_GB_PER_GPU = Decimal(4)
MIN_STORAGE_GB = Decimal(100)
HOURS_PER_MONTH = Decimal(730)


def _memory(display: str, v0_name: str) -> Decimal | None:
    for text in (display, v0_name):
        if (memory := memory_in_name(text)) is not None:
            return memory
    return None


def _rate(unit_prices: dict[str, Any], name: str, where: str) -> Decimal:
    value = unit_prices.get(name)
    return Decimal(0) if value is None else to_decimal(value, f"{where}.pricing.{name}")


def smallest_machine(
    n: int, resources: dict[str, Any], unit_prices: dict[str, Any], where: str, *, in_stock: bool = True
) -> tuple[Decimal, Decimal, Decimal, Decimal, str] | None:
    """(extra $/hour, vCPUs, RAM GB, disk GB, where the minimum came from) of the smallest VM with n GPUs;
    None when that VM exceeds what the location offers (a sold-out GPU, whose limits read 0, keeps its
    one priced placeholder)."""
    stated = {
        k: to_optional_decimal(resources.get(k), f"{where}.resources.{k}")
        for k in ("min_vcpus", "min_ram_gb", "min_storage_gb")
    }
    vcpus = stated["min_vcpus"] if stated["min_vcpus"] is not None else MIN_VCPUS_PER_GPU * n
    ram = stated["min_ram_gb"] if stated["min_ram_gb"] is not None else MIN_RAM_GB_PER_GPU * n
    disk = stated["min_storage_gb"] if stated["min_storage_gb"] is not None else MIN_STORAGE_GB
    source = "api" if all(v is not None for v in stated.values()) else "assumed"
    for need, cap in ((vcpus, "max_vcpus"), (ram, "max_ram_gb"), (disk, "max_storage_gb")):
        most = to_optional_decimal(resources.get(cap), f"{where}.resources.{cap}")
        if in_stock and most is not None and need > most:
            return None
    extra = (
        vcpus * _rate(unit_prices, "per_vcpu_hr", where)
        + ram * _rate(unit_prices, "per_gb_ram_hr", where)
        + disk * _rate(unit_prices, "per_gb_storage_hr", where)
    )
    return extra, vcpus, ram, disk, source


def parse(payload: Any) -> ScrapeResult:
    data = require(payload, "data", "response")
    locations = as_list(require(data, "locations", "data"), "data.locations")
    result = ScrapeResult()
    for i, loc in enumerate(locations):
        with dropping(result, f"locations[{i}]"):  # one malformed object is dropped with its reason
            where = f"locations[{i}]"
            loc_id = str(require(loc, "id", where))
            region = slug(loc.get("country"), loc.get("stateprovince"), loc.get("city"))
            for j, gpu in enumerate(as_list(require(loc, "gpus", where), f"{where}.gpus")):
                gwhere = f"{where}.gpus[{j}]"
                v0_name = str(require(gpu, "v0Name", gwhere))
                display = str(gpu.get("displayName") or v0_name)
                per_gpu = to_optional_decimal(require(gpu, "price_per_hr", gwhere), f"{gwhere}.price_per_hr")
                if per_gpu is None or per_gpu <= 0:
                    result.skipped.append(f"{loc_id}:{v0_name}: no price")
                    continue
                max_count = to_optional_decimal(require(gpu, "max_count", gwhere), f"{gwhere}.max_count") or Decimal(0)
                resources = gpu.get("resources") if isinstance(gpu.get("resources"), dict) else {}
                unit_prices = gpu.get("pricing") if isinstance(gpu.get("pricing"), dict) else {}
                attributes: dict[str, Any] = {
                    "price_scope": "smallest_machine",
                    "gpu_price_per_hour": str(per_gpu),
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
                    machine = smallest_machine(n, resources, unit_prices, gwhere, in_stock=max_count >= 1)
                    if machine is None:
                        result.skipped.append(f"{loc_id}:{v0_name}:{n}: the smallest VM exceeds the location's limits")
                        continue
                    extra, vcpus, ram, disk, source = machine
                    storage_rate = _rate(unit_prices, "per_gb_storage_hr", gwhere)
                    shape: dict[str, Any] = {"storage_gb": str(disk), "min_shape_from": source}
                    shape[COST_TERMS] = terms(
                        included_disk_gb=disk, disk_usd_per_gb_month=storage_rate * HOURS_PER_MONTH
                    )
                    result.offers.append(
                        ScrapedOffer(
                            key=f"{loc_id}:{v0_name}:{n}",
                            gpu_name=display,
                            gpu_count=Decimal(n),
                            price_per_hour=per_gpu * n + extra,
                            region=region,
                            gpu_memory_gb=_memory(display, v0_name),
                            instance_type=f"{n}x {v0_name}",
                            available=max_count >= 1,
                            vcpus=vcpus,
                            ram_gb=ram,
                            attributes=attributes | shape,
                        )
                    )
    return result


class TensorDock(Provider):
    name = "tensordock"
    title = "TensorDock"
    kind = ProviderKind.marketplace
    homepage = "https://tensordock.com"
    credentials = ("TENSORDOCK_API_KEY",)
    parser_version = "2"  # 2: priced as the smallest valid VM (GPU + vCPU + RAM + disk)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"Authorization": f"Bearer {ctx.secret('TENSORDOCK_API_KEY')}"}
        return parse(await get_json(ctx, URL, headers=headers))

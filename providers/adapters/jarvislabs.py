"""JarvisLabs: `GET https://backendn.jarvislabs.net/misc/server_meta` is the price and free-capacity
catalogue the official SDK reads.

Quirks handled here:
* `price_per_hour` and `spot_price` are per GPU; billing is linear in the GPU count (no multi-GPU
  discount), so an N-GPU offer costs N × the rate;
* `num_gpus` (a string, e.g. "8") is the most GPUs one instance may have; we emit one offer per count
  1..num_gpus, capped at 8 (the provider's per-instance limit). Rows without it (europe-01) allow a
  single GPU per instance, as the SDK enforces;
* availability: an N-GPU offer is available when N ≤ `effective_num_free_devices` (what the SDK uses to
  admit an on-demand create; falls back to `num_free_devices`); spot uses `spot_num_free_devices`;
* the same GPU can appear twice per region, as `workload_type` "vm" and "container" (or null, meaning
  unspecified): the workload is part of the offer key;
* SPOT DECISION: `spot_price` is present on VM rows too, but JarvisLabs sells spot for GPU *containers*
  only (the SDK refuses `--spot` for VMs). We therefore emit spot offers only from rows whose
  `workload_type` is "container" and that carry a positive `spot_price`; a VM row's spot_price is not
  a price anyone can pay, and rows with no workload type (europe-01) carry no spot_price at all;
* `reserved_pricing` (1/3/6-month and 1-year rates) is contact-sales only with no API to buy it, so it
  is not turned into offers;
* `vram` is a string ("80", sometimes "141 GB") of GB per GPU; H100/H200 here are SXM boards, so the raw
  name passed on says so (the provider's `gpu_type` is kept in attributes["raw_gpu"]);
* `cpu_meta` (CPU-only VMs) is ignored; prices must be USD (`currency`, when present).
"""

from __future__ import annotations

import re
from dataclasses import replace
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
from providers.http import get_json, redacting_secrets, require
from providers.parsing import as_list, dropping, slug, to_optional_decimal

URL = "https://backendn.jarvislabs.net/misc/server_meta"
MAX_GPUS_PER_INSTANCE = 8

# gpu_type → raw name with the form factor JarvisLabs states for that card on its pricing pages.
GPU_NAMES = {"H100": "H100 SXM", "H200": "H200 SXM"}
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)")


def _opt_dec(value: Any, where: str) -> Decimal | None:
    return to_optional_decimal(value, where, blank_is_none=True)


def _opt_int(value: Any, where: str) -> int | None:
    number = _opt_dec(value, where)
    return None if number is None else int(number)


def _vram(value: Any) -> Decimal | None:
    """'80' / 80 / '141 GB' → GB per GPU; None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    match = _NUMBER.match(str(value))
    return Decimal(match[1]) if match and Decimal(match[1]) > 0 else None


def parse(payload: Any) -> ScrapeResult:
    rows = as_list(require(payload, "server_meta", "response"), "'server_meta'")
    currency = payload.get("currency")
    if currency is not None and str(currency).upper() != "USD":
        raise ProviderError(f"prices are quoted in {currency}, expected USD")
    result = ScrapeResult()
    for i, row in enumerate(rows):
        with dropping(result, f"server_meta[{i}]"):
            where = f"server_meta[{i}]"
            gpu_type = require(row, "gpu_type", where)
            price = _opt_dec(require(row, "price_per_hour", where), f"{where}.price_per_hour")
            if not gpu_type or not str(gpu_type).strip():
                result.skipped.append(f"{where}: no gpu_type")
                continue
            gpu_type = str(gpu_type).strip()
            region = slug(row.get("region") or "")  # always a well-formed code (or "")
            label = f"{gpu_type} in {region or '?'}"
            if price is None or price <= 0:
                result.skipped.append(f"{label}: price_per_hour={price}")
                continue
            if row.get("currency") is not None and str(row["currency"]).upper() != "USD":
                result.skipped.append(f"{label}: priced in {row['currency']}")
                continue
            workload = str(row.get("workload_type") or "").strip().lower() or None
            max_gpus = _opt_int(row.get("num_gpus"), f"{where}.num_gpus") or 1
            max_gpus = max(1, min(max_gpus, MAX_GPUS_PER_INSTANCE))
            free = _opt_int(row.get("effective_num_free_devices"), f"{where}.effective_num_free_devices")
            if free is None:
                free = _opt_int(row.get("num_free_devices"), f"{where}.num_free_devices")
            spot_free = _opt_int(row.get("spot_num_free_devices"), f"{where}.spot_num_free_devices")
            spot_price = _opt_dec(row.get("spot_price"), f"{where}.spot_price")
            # Spot is sold for GPU containers only (see the module docstring).
            spot_rate = spot_price if workload == "container" and spot_price and spot_price > 0 else None
            cpus_per_gpu = _opt_dec(row.get("cpus_per_gpu"), f"{where}.cpus_per_gpu")
            ram_per_gpu = _opt_dec(row.get("ram_per_gpu"), f"{where}.ram_per_gpu")
            base_key = f"{region}:{gpu_type}:{workload or 'any'}"
            attributes = {"raw_gpu": gpu_type, "workload_type": workload, "max_gpus": max_gpus}
            for count in range(1, max_gpus + 1):
                n = Decimal(count)
                on_demand = ScrapedOffer(
                    key=f"{base_key}:{count}",
                    gpu_name=GPU_NAMES.get(gpu_type, gpu_type),
                    gpu_count=n,
                    price_per_hour=price * n,
                    region=region,
                    gpu_memory_gb=_vram(row.get("vram")),
                    instance_type=f"{gpu_type}x{count}",
                    available=None if free is None else count <= free,
                    vcpus=cpus_per_gpu * n if cpus_per_gpu else None,
                    ram_gb=ram_per_gpu * n if ram_per_gpu else None,
                    attributes=dict(attributes),
                )
                result.offers.append(on_demand)
                if spot_rate is not None:
                    # Spot is the same machine: only key, price, pricing and free capacity differ.
                    result.offers.append(
                        replace(
                            on_demand,
                            key=f"{base_key}:{count}:spot",
                            price_per_hour=spot_rate * n,
                            pricing=Pricing.spot,
                            available=None if spot_free is None else count <= spot_free,
                            attributes=dict(attributes),
                        )
                    )
    return result


class JarvisLabs(Provider):
    name = "jarvislabs"
    title = "JarvisLabs"
    kind = ProviderKind.cloud
    homepage = "https://jarvislabs.ai"
    credentials = ("JARVISLABS_API_KEY",)
    parser_version = "2"  # 2: region codes normalised with slug() (well formed whatever the API sends)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("JARVISLABS_API_KEY")
        with redacting_secrets(key):
            return parse(await get_json(ctx, URL, headers={"Authorization": f"Bearer {key}"}))

"""Shadeform (aggregator): `GET /v1/instances/types` (providers.md A.1 #15, A.2 "Shadeform", C.3).

Auth: header `X-API-KEY`. We ask for every instance type, not only `available=true`, so an offer that runs
out of capacity stays in the history as unavailable instead of vanishing.

Each `instance_types[]` row is one upstream cloud's machine (`cloud`, `shade_instance_type`,
`cloud_instance_type`) with `configuration.{gpu_type, num_gpus, vcpus, memory_in_gb, vram_per_gpu_in_gb,
interconnect}`; `hourly_price` is US cents for the whole instance → dollars. `availability[]` lists
regions with an `available` flag: one offer per (cloud, shade_instance_type, region). The upstream cloud
is kept in the key and in attributes, so the same card resold from two clouds stays two offers.

GPU names: Shadeform's `gpu_type` ("H100", "A100_80G") has no form factor, but `interconnect` ("sxm5",
"sxm4", "pcie") gives it; the raw name passed on is e.g. "H100 SXM 80GB" (original in attributes.raw_gpu).
Rows without a price or without any region are skipped with a reason. No spot pricing; no pagination.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult, default_interval_for
from providers.http import get_json, require
from providers.parsing import as_list, cents_to_dollars, to_optional_decimal

URL = "https://api.shadeform.ai/v1/instances/types"
_MEM_SUFFIX = re.compile(r"^(.*?)[ _-](\d+)GB?$", re.IGNORECASE)


def gpu_name(gpu_type: str, interconnect: str | None, vram_gb: Decimal | None) -> str:
    """'A100_80G' + 'sxm4' + 80 → 'A100 SXM 80GB'; 'L40S' + 'pcie' + 48 → 'L40S PCIe 48GB'."""
    model, memory = gpu_type.strip(), None
    if match := _MEM_SUFFIX.match(model):
        model, memory = match.group(1), match.group(2)
    model = model.replace("_", " ").strip()
    if memory is None and vram_gb:
        memory = str(int(vram_gb)) if vram_gb == int(vram_gb) else str(vram_gb)
    form = ""
    link = (interconnect or "").strip().lower()
    lowered = model.lower()
    if link.startswith("sxm") and "sxm" not in lowered:
        form = "SXM"
    elif link == "pcie" and "pcie" not in lowered:
        form = "PCIe"
    return " ".join(p for p in (model, form, f"{memory}GB" if memory else "") if p)


def parse(payload: Any) -> ScrapeResult:
    rows = as_list(require(payload, "instance_types", "response"), "instance_types")
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(rows):
        where = f"instance_types[{i}]"
        cloud = str(require(raw, "cloud", where))
        shade_type = str(require(raw, "shade_instance_type", where))
        config = require(raw, "configuration", where)
        cwhere = f"{where}.configuration"
        count = to_optional_decimal(require(config, "num_gpus", cwhere), f"{cwhere}.num_gpus")
        gpu_type = config.get("gpu_type")
        if not count or count <= 0 or not gpu_type:
            continue  # CPU-only
        cents = to_optional_decimal(require(raw, "hourly_price", where), f"{where}.hourly_price")
        if cents is None or cents <= 0:
            result.skipped.append(f"{cloud}:{shade_type}: no price")
            continue
        availability = as_list(require(raw, "availability", where), f"{where}.availability")
        if not availability:
            result.skipped.append(f"{cloud}:{shade_type}: no regions listed")
            continue
        vram = to_optional_decimal(config.get("vram_per_gpu_in_gb"), f"{cwhere}.vram_per_gpu_in_gb")
        attributes: dict[str, Any] = {
            "cloud": cloud,
            "cloud_instance_type": raw.get("cloud_instance_type"),
            "raw_gpu": gpu_type,
        }
        for extra in ("interconnect", "nvlink"):
            if config.get(extra) is not None:
                attributes[extra] = config[extra]
        if raw.get("deployment_type"):
            attributes["deployment_type"] = raw["deployment_type"]
        for j, zone in enumerate(availability):
            region = str(require(zone, "region", f"{where}.availability[{j}]")).strip().lower()
            key = f"{cloud}:{shade_type}:{region}"
            if key in seen:
                result.skipped.append(f"{key}: listed twice")
                continue
            seen.add(key)
            flag = zone.get("available")
            result.offers.append(
                ScrapedOffer(
                    key=key,
                    gpu_name=gpu_name(str(gpu_type), config.get("interconnect"), vram),
                    gpu_count=count,
                    price_per_hour=cents_to_dollars(cents),
                    region=region,
                    gpu_memory_gb=vram,
                    instance_type=shade_type,
                    available=flag if isinstance(flag, bool) else None,
                    vcpus=to_optional_decimal(config.get("vcpus"), f"{cwhere}.vcpus"),
                    ram_gb=to_optional_decimal(config.get("memory_in_gb"), f"{cwhere}.memory_in_gb"),
                    attributes=dict(attributes),
                )
            )
    return result


class Shadeform(Provider):
    name = "shadeform"
    title = "Shadeform (aggregator)"
    kind = ProviderKind.marketplace
    homepage = "https://www.shadeform.ai"
    credentials = ("SHADEFORM_API_KEY",)
    default_interval = default_interval_for(ProviderKind.marketplace)
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"X-API-KEY": ctx.secret("SHADEFORM_API_KEY")}
        return parse(await get_json(ctx, URL, headers=headers))

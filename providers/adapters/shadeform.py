"""Shadeform (aggregator): `GET /v1/instances/types` (providers.md A.1 #15, A.2 "Shadeform", C.3).

Auth: header `X-API-KEY`. We ask for every instance type, not only `available=true`, so an offer that runs
out of capacity stays in the history as unavailable instead of vanishing.

Each `instance_types[]` row is one upstream cloud's machine (`cloud`, `shade_instance_type`,
`cloud_instance_type`) with `configuration.{gpu_type, num_gpus, vcpus, memory_in_gb, vram_per_gpu_in_gb,
interconnect}`; `hourly_price` is US cents for the whole instance → dollars. `availability[]` lists
regions with an `available` flag: one offer per (cloud, shade_instance_type, region). The upstream cloud
is kept in the key and in attributes, so the same card resold from two clouds stays two offers.

Aggregator: every row is the upstream cloud's machine. `upstream` is that cloud (`cloud`, normalised by
`providers.parsing.upstream_provider`: "datacrunch" → "verda", so it matches our own adapter); the offer
reaches us `via=shadeform` (`providers.fetching.labelled_aggregated`). The raw name stays in
attributes.cloud. Rate limit: none documented (429 is retried).

Spot: an availability row with `rental_type: "spot"` (issue #12; not in Shadeform's public OpenAPI yet)
is the same machine rented interruptibly at the row's own `hourly_price` (cents): it becomes a spot offer,
key suffix ":spot", with that row's `available`. A spot row without its own positive price is skipped
with a reason (the on-demand price is never reused as a spot price). A row with no `rental_type` (or an
on-demand one) is on demand, at its own `hourly_price` when it has one, else the instance's.

GPU names: Shadeform's `gpu_type` ("H100", "A100_80G") has no form factor, but `interconnect` ("sxm5",
"sxm4", "pcie") gives it; the raw name passed on is e.g. "H100 SXM 80GB" (original in attributes.raw_gpu).
Rows without a price or without any region are skipped with a reason. No pagination.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.fabric import fabric, gpu_link_of
from providers.http import get_json, require
from providers.parsing import as_list, cents_to_dollars, dropping, slug, to_optional_decimal, upstream_provider

URL = "https://api.shadeform.ai/v1/instances/types"
_MEM_SUFFIX = re.compile(r"^(.*?)[ _-](\d+)GB?$", re.IGNORECASE)
ON_DEMAND_RENTALS = frozenset({"", "on_demand", "on-demand", "ondemand"})


def gpu_link(interconnect: Any, nvlink: Any, gpus: Decimal | None) -> str | None:
    """The GPU link (providers.fabric) of `configuration.{interconnect, nvlink}`: "sxm5" on 8 GPUs is an
    NVSwitch board, "pcie" with `nvlink: true` has NVLink bridges, "infinity_fabric" is AMD's xGMI."""
    link = gpu_link_of(interconnect, gpus=gpus)
    if nvlink is True and link in (None, "pcie"):
        return "nvlink"
    return link


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


def _rental(zone: Any) -> str:
    """An availability row's `rental_type`, lower case; "" when it has none."""
    value = zone.get("rental_type") if isinstance(zone, dict) else None
    return str(value or "").strip().lower()


def parse(payload: Any) -> ScrapeResult:
    rows = as_list(require(payload, "instance_types", "response"), "instance_types")
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(rows):
        with dropping(result, f"instance_types[{i}]"):  # one malformed object is dropped with its reason
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
            listed = raw.get("availability")
            spot_rows = [z for z in listed if _rental(z) == "spot"] if isinstance(listed, list) else []
            if (cents is None or cents <= 0) and not spot_rows:  # nothing priced to offer, whatever the regions
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
            attributes |= fabric(
                gpu_link=gpu_link(config.get("interconnect"), config.get("nvlink"), count), gpus_per_node=count
            )
            for j, zone in enumerate(availability):
                zwhere = f"{where}.availability[{j}]"
                region = slug(require(zone, "region", zwhere))  # always a well-formed code ("FIN-01" → "fin-01")
                rental = _rental(zone)
                if rental != "spot" and rental not in ON_DEMAND_RENTALS:
                    result.skipped.append(f"{cloud}:{shade_type}:{region}: unknown rental_type {rental!r}")
                    continue
                spot = rental == "spot"
                own = to_optional_decimal(zone.get("hourly_price"), f"{zwhere}.hourly_price")
                # A spot row must carry its own rate; an on-demand row may refine the instance's.
                price = own if spot or own is not None else cents
                key = f"{cloud}:{shade_type}:{region}" + (":spot" if spot else "")
                if price is None or price <= 0:
                    what = "spot row without its own price" if spot else "no price"
                    result.skipped.append(f"{key}: {what}")
                    continue
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
                        price_per_hour=cents_to_dollars(price),
                        pricing=Pricing.spot if spot else Pricing.on_demand,
                        region=region,
                        gpu_memory_gb=vram,
                        instance_type=shade_type,
                        available=flag if isinstance(flag, bool) else None,
                        vcpus=to_optional_decimal(config.get("vcpus"), f"{cwhere}.vcpus"),
                        ram_gb=to_optional_decimal(config.get("memory_in_gb"), f"{cwhere}.memory_in_gb"),
                        attributes=dict(attributes),
                        upstream=upstream_provider(cloud),
                    )
                )
    return result


class Shadeform(Provider):
    name = "shadeform"
    title = "Shadeform (aggregator)"
    kind = ProviderKind.marketplace
    homepage = "https://www.shadeform.ai"
    credentials = ("SHADEFORM_API_KEY",)
    # 2: spot offers from availability rows with rental_type "spot"; slug() regions. 3: upstream (via=shadeform)
    parser_version = "3"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"X-API-KEY": ctx.secret("SHADEFORM_API_KEY")}
        return parse(await get_json(ctx, URL, headers=headers))

"""CloudRift: `POST /api/v1/instance-types/list` (providers.md A.1 #17, A.2 "CloudRift", C.2, C.5).

Anonymous. The body is CloudRift's versioned envelope with a selector for VM instance types. The answer is
`data.instance_types[]`, each with a GPU brand (`brand_short`) and `variants[]`:
* `cost_per_hour` is in US cents for the whole variant (all of its `gpu_count` GPUs) → dollars;
* `vram` is bytes PER GPU, `dram` and `disk` are bytes for the variant;
* `nodes_per_dc` maps a datacenter id to how many nodes can host the variant right now (also the offer's
  `nodes_available`, `providers.fabric`).

One offer per (variant × datacenter in `nodes_per_dc`), available when that count is > 0. A variant with
no datacenter at all still yields one offer (region "", available False) so its price history is kept.
Variants without GPUs (CPU-only) are skipped silently. No pagination.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.fabric import fabric
from providers.http import post_json, require
from providers.parsing import as_list, cents_to_dollars, dropping, gigabytes, slug, to_optional_decimal

URL = "https://api.cloudrift.ai/api/v1/instance-types/list"
BODY: dict[str, Any] = {
    "version": "2025-03-21",
    "data": {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}},
}
GIB = 1024**3  # bytes


def parse(payload: Any) -> ScrapeResult:
    data = require(payload, "data", "response")
    types = as_list(require(data, "instance_types", "data"), "data.instance_types")
    result = ScrapeResult()
    for i, itype in enumerate(types):
        with dropping(result, f"instance_types[{i}]"):  # one malformed object is dropped with its reason
            where = f"instance_types[{i}]"
            brand = itype.get("brand_short") if isinstance(itype, dict) else None
            for j, variant in enumerate(as_list(require(itype, "variants", where), f"{where}.variants")):
                vwhere = f"{where}.variants[{j}]"
                name = str(require(variant, "name", vwhere))
                count = to_optional_decimal(variant.get("gpu_count"), f"{vwhere}.gpu_count")
                if not count or count <= 0:
                    continue  # CPU-only variant
                if not brand:
                    result.skipped.append(f"{name}: GPU variant without brand_short")
                    continue
                cents = to_optional_decimal(require(variant, "cost_per_hour", vwhere), f"{vwhere}.cost_per_hour")
                if cents is None or cents <= 0:
                    result.skipped.append(f"{name}: no price")
                    continue
                nodes = variant.get("nodes_per_dc") or {}
                if not isinstance(nodes, dict):
                    raise ProviderError(f"schema changed: {vwhere}.nodes_per_dc is not an object")
                gpu_memory = gigabytes(to_optional_decimal(variant.get("vram"), f"{vwhere}.vram"), GIB)
                vcpus = to_optional_decimal(variant.get("cpu_count"), f"{vwhere}.cpu_count")
                ram = gigabytes(to_optional_decimal(variant.get("dram"), f"{vwhere}.dram"), GIB)
                disk = gigabytes(to_optional_decimal(variant.get("disk"), f"{vwhere}.disk"), GIB)
                attributes: dict[str, Any] = {"disk_gb": str(disk)} if disk else {}
                if itype.get("name"):
                    attributes["instance_type_family"] = itype["name"]
                # The region-less, sold-out row doubles as the template for the per-datacenter rows, so the
                # fields they share are written once.
                unplaced = ScrapedOffer(
                    key=name,
                    gpu_name=str(brand),
                    gpu_count=count,
                    price_per_hour=cents_to_dollars(cents),
                    region="",
                    gpu_memory_gb=gpu_memory,
                    instance_type=name,
                    available=False,
                    vcpus=vcpus,
                    ram_gb=ram,
                    attributes=dict(attributes),
                )
                if not nodes:
                    result.offers.append(unplaced)
                    continue
                for dc, free in nodes.items():
                    free_nodes = to_optional_decimal(free, f"{vwhere}.nodes_per_dc.{dc}") or Decimal(0)
                    result.offers.append(
                        replace(
                            unplaced,
                            key=f"{name}:{dc}",
                            region=slug(dc),
                            available=free_nodes > 0,
                            attributes=attributes
                            | {"datacenter": dc, "free_nodes": int(free_nodes)}
                            | fabric(nodes_available=int(free_nodes)),  # the cluster shape's "nodes free now"
                        )
                    )
    return result


class CloudRift(Provider):
    name = "cloudrift"
    title = "CloudRift"
    kind = ProviderKind.cloud
    homepage = "https://www.cloudrift.ai"
    credentials = ()
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await post_json(ctx, URL, json=BODY))

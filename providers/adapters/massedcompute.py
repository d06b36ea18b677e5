"""Massed Compute: on-demand GPU VMs (also reached through Prime Intellect and Shadeform).

API: `GET https://vm.massedcompute.com/api/v1/gpu-inventory`, "a comprehensive list of all GPU types,
configurations, and available inventory" (Massed Compute VM API 1.0.0, vm-docs.massedcompute.com; the
OpenAPI document brevdev/cloud generates its client from). Auth: `Authorization: Bearer <token>`
(`MASSED_COMPUTE_API_KEY`; missing → the run is skipped). One request, no pagination.

Shape (Lambda-like): `{gpu_inventory: {<product>: {instance_type: {name, description, price_cents_per_hour,
specs: {vcpu_count, memory_gib, storage_gb}}, capacity_available, regions_with_capacity_available:
[{name, description}]}}}`.
* `price_cents_per_hour` is US cents for the whole VM → dollars; billing is per minute (kept in attributes);
* the description is "<n>x <GPU>" ("1x RTX A6000", "8x H100 SXM5 80GB"): the count comes from it (there is
  no count field), the rest is the raw GPU name, with any memory it states parsed into `gpu_memory_gb`;
* a product whose name ends in `_spot` is the interruptible variant of the product without the suffix:
  `pricing=spot`, keyed like that product plus ":spot" so the two are recognisably the same machine;
* one offer per (product × region in `regions_with_capacity_available`), `available=True`; a product with
  no capacity anywhere keeps one region-less offer with `available=False`, so its price history goes on
  being recorded while it is sold out (as for Lambda). `capacity_available` is kept in attributes.

Rate limit: none documented; one request per run.

Docs-built: the cassette follows the OpenAPI schema `GPUInventoryV1` (brevdev/cloud@3f0a5e9b:
v1/providers/massedcompute/gen/massedcompute/api/openapi.yaml) and its examples' product and region names
(`gpu_1x_a6000` "1x RTX A6000", `us-central-3` "Des Moines, IA"); the other values are illustrative.
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
from providers.http import get_json, require
from providers.parsing import as_list, cents_to_dollars, memory_in_name, slug, to_optional_decimal

URL = "https://vm.massedcompute.com/api/v1/gpu-inventory"
SPOT_SUFFIX = "_spot"
# "1x RTX A6000", "8x H100 SXM5 80GB"
DESCRIPTION = re.compile(r"^\s*(?P<count>\d+)\s*x\s+(?P<gpu>.+?)\s*$", re.IGNORECASE)


def parse_description(text: str) -> tuple[int, str] | None:
    """'8x H100 SXM5 80GB' → (8, 'H100 SXM5 80GB'); None for any other shape."""
    match = DESCRIPTION.match(text)
    return (int(match["count"]), re.sub(r"\s+", " ", match["gpu"])) if match else None


def _product(product: str, item: Any, where: str, result: ScrapeResult) -> None:
    instance = require(item, "instance_type", where)
    regions = as_list(require(item, "regions_with_capacity_available", where), "regions", where)
    name = str(require(instance, "name", f"{where}.instance_type"))
    description = str(require(instance, "description", f"{where}.instance_type"))
    # A null price drops that product with the reason, not the whole inventory with it.
    cents = to_optional_decimal(
        require(instance, "price_cents_per_hour", f"{where}.instance_type"),
        f"{where}.price_cents_per_hour",
        blank_is_none=True,
    )
    parsed = parse_description(description)
    if parsed is None:
        result.skipped.append(f"{name}: cannot read a GPU count and model from {description!r}")
        return
    count, gpu = parsed
    if count <= 0:
        result.skipped.append(f"{name}: no GPUs ({description!r})")
        return
    if cents is None or cents <= 0:
        result.skipped.append(f"{name}: price_cents_per_hour={cents}")
        return
    specs = instance.get("specs") if isinstance(instance.get("specs"), dict) else {}
    spot = name.endswith(SPOT_SUFFIX)
    base = name[: -len(SPOT_SUFFIX)] if spot else name
    suffix = ":spot" if spot else ""
    attributes: dict[str, Any] = {"raw_gpu": description, "billing": "per-minute"}
    if item.get("capacity_available") is not None:
        attributes["capacity_available"] = item["capacity_available"]
    if specs.get("storage_gb") is not None:
        attributes["storage_gb"] = specs["storage_gb"]
    unplaced = ScrapedOffer(
        key=f"{base}{suffix}",
        gpu_name=gpu,
        gpu_count=Decimal(count),
        price_per_hour=cents_to_dollars(cents),
        pricing=Pricing.spot if spot else Pricing.on_demand,
        region="",
        gpu_memory_gb=memory_in_name(gpu),
        instance_type=name,
        available=False,
        vcpus=to_optional_decimal(specs.get("vcpu_count"), f"{where}.specs.vcpu_count"),
        ram_gb=to_optional_decimal(specs.get("memory_gib"), f"{where}.specs.memory_gib"),
        attributes=attributes,
    )
    codes: dict[str, str] = {}
    for j, region in enumerate(regions):
        code = slug(require(region, "name", f"{where}.regions_with_capacity_available[{j}]"))
        if code and code not in codes:
            codes[code] = str(region.get("description") or "")
    if not codes:
        result.offers.append(unplaced)  # sold out everywhere: the price is still tracked
        return
    for code, label in codes.items():
        extra = {"region_description": label} if label else {}
        result.offers.append(
            replace(
                unplaced,
                key=f"{base}:{code}{suffix}",
                region=code,
                available=True,
                attributes=attributes | extra,
            )
        )


def parse(payload: Any) -> ScrapeResult:
    inventory = require(payload, "gpu_inventory", "response")
    if not isinstance(inventory, dict):
        raise ProviderError("schema changed: 'gpu_inventory' is not an object keyed by product")
    result = ScrapeResult()
    for product, item in inventory.items():
        _product(str(product), item, f"gpu_inventory[{product!r}]", result)
    return result


class MassedCompute(Provider):
    name = "massedcompute"
    title = "Massed Compute"
    kind = ProviderKind.cloud
    homepage = "https://massedcompute.com/home/pricing/"
    credentials = ("MASSED_COMPUTE_API_KEY",)
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        token = ctx.secret("MASSED_COMPUTE_API_KEY")
        return parse(await get_json(ctx, URL, headers={"Authorization": f"Bearer {token}"}))

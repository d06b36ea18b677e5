"""Lambda Cloud: `GET /api/v1/instance-types` lists every instance type with its price and the regions
that have capacity right now (providers.md A.1 §3, A.2 §3, B.3).

Quirks handled here:
* `price_cents_per_hour` is an integer number of US cents for the whole instance → dollars;
* the GPU model, memory and form factor live only in `description`, e.g. "8x H100 (80 GB SXM5)" or
  "8x Tesla V100 (16 GB)"; counts may have several digits. The raw name we pass on is Lambda's own text
  without the count ("H100 (80 GB SXM5)", which keeps the form factor), the per-GPU memory parsed from
  it goes to `gpu_memory_gb`;
* one offer per (instance type × region in `regions_with_capacity_available`), available=True. A type
  with no capacity anywhere still yields one offer (region "", available=False) so its price history
  keeps being recorded while it is sold out;
* CPU-only types (`specs.gpus == 0`) are skipped.
"""

from __future__ import annotations

import re
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
    default_interval_for,
)
from providers.http import get_json, redacting_secrets, require
from providers.parsing import cents_to_dollars, to_decimal, to_optional_decimal

URL = "https://cloud.lambdalabs.com/api/v1/instance-types"

# "8x H100 (80 GB SXM5)", "1x A10 (24 GB PCIe)", "8x Tesla V100 (16 GB)", "1x GH200 (96 GB)"
DESCRIPTION = re.compile(
    r"^\s*(?P<count>\d+)\s*x\s+(?P<model>.+?)\s*\(\s*(?P<memory>\d+(?:\.\d+)?)\s*GB\s*(?P<form>[^)]*?)\s*\)\s*$",
    re.IGNORECASE,
)


def parse_description(description: str) -> tuple[int, str, Decimal] | None:
    """'8x H100 (80 GB SXM5)' → (8, 'H100 (80 GB SXM5)', 80); None when the text has another shape."""
    match = DESCRIPTION.match(description)
    if not match:
        return None
    form = f" {match['form'].strip()}" if match["form"].strip() else ""
    name = f"{match['model'].strip()} ({match['memory']} GB{form})"
    return int(match["count"]), re.sub(r"\s+", " ", name), Decimal(match["memory"])


def parse(payload: Any) -> ScrapeResult:
    data = require(payload, "data", "response")
    if not isinstance(data, dict):
        raise ProviderError("schema changed: 'data' is not an object keyed by instance type")
    result = ScrapeResult()
    for type_key, item in data.items():
        where = f"data[{type_key!r}]"
        instance = require(item, "instance_type", where)
        regions = require(item, "regions_with_capacity_available", where)
        if not isinstance(regions, list):
            raise ProviderError(f"schema changed: regions_with_capacity_available is not a list at {where}")
        name = str(require(instance, "name", f"{where}.instance_type"))
        description = require(instance, "description", f"{where}.instance_type")
        cents = to_decimal(require(instance, "price_cents_per_hour", f"{where}.instance_type"), f"{where} price")
        specs = require(instance, "specs", f"{where}.instance_type")
        if not isinstance(specs, dict):
            raise ProviderError(f"schema changed: specs is not an object at {where}")
        spec_gpus = to_optional_decimal(specs.get("gpus"), f"{where}.specs.gpus")
        if spec_gpus is not None and spec_gpus <= 0:
            result.skipped.append(f"{name}: no GPUs (CPU-only instance type)")
            continue
        parsed = parse_description(str(description)) if isinstance(description, str) else None
        if parsed is None:
            result.skipped.append(f"{name}: cannot read GPU from description {description!r}")
            continue
        count, gpu_name, memory = parsed
        gpu_count = spec_gpus if spec_gpus is not None else Decimal(count)
        if cents <= 0:
            result.skipped.append(f"{name}: price_cents_per_hour={cents}")
            continue
        vcpus = to_optional_decimal(specs.get("vcpus"), f"{where}.specs.vcpus")
        ram = to_optional_decimal(specs.get("memory_gib"), f"{where}.specs.memory_gib")
        attributes: dict[str, Any] = {"raw_gpu": description}
        if specs.get("storage_gib") is not None:
            attributes["storage_gib"] = specs["storage_gib"]
        # The region-less, sold-out row doubles as the template for the per-region rows, so the fields
        # they share are written once.
        unplaced = ScrapedOffer(
            key=name,
            gpu_name=gpu_name,
            gpu_count=gpu_count,
            price_per_hour=cents_to_dollars(cents),
            region="",
            gpu_memory_gb=memory,
            instance_type=name,
            available=False,
            vcpus=vcpus,
            ram_gb=ram,
            attributes=dict(attributes),
        )
        if not regions:
            # Sold out everywhere: keep one region-less row so the price is still tracked.
            result.offers.append(unplaced)
            continue
        seen: set[str] = set()
        for j, region in enumerate(regions):
            region_name = str(require(region, "name", f"{where}.regions_with_capacity_available[{j}]"))
            region_code = region_name.strip().lower()
            if not region_code or region_code in seen:
                continue
            seen.add(region_code)
            extra = {"region_description": region["description"]} if region.get("description") else {}
            result.offers.append(
                replace(
                    unplaced,
                    key=f"{name}:{region_code}",
                    region=region_code,
                    available=True,
                    attributes=attributes | extra,
                )
            )
    return result


class LambdaLabs(Provider):
    name = "lambdalabs"
    title = "Lambda Cloud"
    kind = ProviderKind.cloud
    homepage = "https://lambda.ai"
    credentials = ("LAMBDA_API_KEY",)
    default_interval = default_interval_for(ProviderKind.cloud)
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("LAMBDA_API_KEY")
        with redacting_secrets(key):
            return parse(await get_json(ctx, URL, headers={"Authorization": f"Bearer {key}"}))

"""Lambda Cloud: `GET /api/v1/instance-types` lists every instance type with its price and the regions
that have capacity right now.

Host: `cloud.lambda.ai` (the API moved there from
`cloud.lambdalabs.com`). Its new `/api/v1/regions` lists regions only; the per-region capacity we need is
already in `instance-types`, so it is not called.

Quirks handled here:
* `price_cents_per_hour` is an integer number of US cents for the whole instance → dollars;
* the GPU model, memory and form factor are in `gpu_description` ("H100 (80 GB SXM5)") when the API sends
  it, and otherwise only in `description` ("8x H100 (80 GB SXM5)", "8x Tesla V100 (16 GB)"; counts may
  have several digits). Some listings shorten `description` to "8x H100", which names no memory or form
  factor, so `gpu_description` is read first. The raw name we pass on is Lambda's own text without the
  count ("H100 (80 GB SXM5)", which keeps the form factor), the per-GPU memory parsed from it goes to
  `gpu_memory_gb`; the count is `specs.gpus`, else the description's "8x";
* one offer per (instance type × region in `regions_with_capacity_available`), available=True. A type
  with no capacity anywhere still yields one offer (region "", available=False) so its price history
  keeps being recorded while it is sold out;
* CPU-only types (`specs.gpus == 0`) are skipped;
* cost terms (`providers.cost_terms`): `specs.storage_gib`, the instance's local disk that its price
  already pays for, → included_disk_gb (GiB → GB). Billing increments and filesystem prices are not in
  the API (tracker/costs/data/cost_terms.toml).
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
)
from providers.cost_terms import COST_TERMS, terms
from providers.http import get_json, redacting_secrets, require
from providers.parsing import cents_to_dollars, slug, to_decimal, to_optional_decimal

GB_PER_GIB = Decimal("1.073741824")  # GB in a GiB

URL = "https://cloud.lambda.ai/api/v1/instance-types"

# "8x H100 (80 GB SXM5)", "1x A10 (24 GB PCIe)", "8x Tesla V100 (16 GB)", "1x GH200 (96 GB)"
DESCRIPTION = re.compile(
    r"^\s*(?P<count>\d+)\s*x\s+(?P<model>.+?)\s*\(\s*(?P<memory>\d+(?:\.\d+)?)\s*GB\s*(?P<form>[^)]*?)\s*\)\s*$",
    re.IGNORECASE,
)


# "H100 (80 GB SXM5)", "Tesla V100 (16 GB)": `gpu_description`, the GPU without a count
GPU_DESCRIPTION = re.compile(
    r"^\s*(?P<model>[^()]+?)\s*\(\s*(?P<memory>\d+(?:\.\d+)?)\s*GB\s*(?P<form>[^)]*?)\s*\)\s*$", re.IGNORECASE
)
_COUNT = re.compile(r"^\s*(\d+)\s*x\s+", re.IGNORECASE)


def parse_gpu_description(text: str) -> tuple[str, Decimal] | None:
    """'H100 (80 GB SXM5)' → ('H100 (80 GB SXM5)', 80); None when the text gives no memory."""
    match = GPU_DESCRIPTION.match(text)
    if not match:
        return None
    form = f" {match['form'].strip()}" if match["form"].strip() else ""
    return re.sub(r"\s+", " ", f"{match['model'].strip()} ({match['memory']} GB{form})"), Decimal(match["memory"])


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
        gpu_description = instance.get("gpu_description")
        from_gpu = parse_gpu_description(gpu_description) if isinstance(gpu_description, str) else None
        parsed = parse_description(description) if isinstance(description, str) else None
        count_match = _COUNT.match(description) if isinstance(description, str) else None
        if from_gpu is not None:  # the fuller text wins: "8x H100" alone names no memory or form factor
            gpu_name, memory = from_gpu
            count = int(count_match[1]) if count_match else None
        elif parsed is not None:
            count, gpu_name, memory = parsed
        else:
            shown = f"{description!r}" + (f" / gpu_description {gpu_description!r}" if gpu_description else "")
            result.skipped.append(f"{name}: cannot read GPU from description {shown}")
            continue
        if spec_gpus is None and count is None:
            result.skipped.append(f"{name}: no GPU count in specs.gpus or description {description!r}")
            continue
        gpu_count = spec_gpus if spec_gpus is not None else Decimal(count or 0)
        if cents <= 0:
            result.skipped.append(f"{name}: price_cents_per_hour={cents}")
            continue
        vcpus = to_optional_decimal(specs.get("vcpus"), f"{where}.specs.vcpus")
        ram = to_optional_decimal(specs.get("memory_gib"), f"{where}.specs.memory_gib")
        attributes: dict[str, Any] = {"raw_gpu": description}
        if isinstance(gpu_description, str) and gpu_description.strip():
            attributes["gpu_description"] = gpu_description
        if specs.get("storage_gib") is not None:
            attributes["storage_gib"] = specs["storage_gib"]
            disk_gib = to_optional_decimal(specs["storage_gib"], f"{where}.specs.storage_gib")
            if disk_gib is not None and disk_gib >= 0:
                attributes[COST_TERMS] = terms(included_disk_gb=round(disk_gib * GB_PER_GIB, 3))
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
            region_code = slug(region_name)  # always a well-formed code: "US-East-1" → "us-east-1"
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
    parser_version = "2"  # 2: cloud.lambda.ai host; gpu_description read before description

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("LAMBDA_API_KEY")
        with redacting_secrets(key):
            return parse(await get_json(ctx, URL, headers={"Authorization": f"Bearer {key}"}))

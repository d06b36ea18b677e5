"""Thunder Compute: `GET https://api.thundercompute.com:8443/v1/pricing` and `/v1/specs` (OpenAPI at `/openapi.json`).

Auth: Thunder documents a Bearer token (`TNR_API_TOKEN`, the `tnr` CLI's variable); a public client reports
both reads answering without one. The token is therefore optional: sent when configured, never a reason to
skip. Two requests per run, no pagination. No rate limit is published (`requests_per_minute` None); a 429 is
retried with backoff by `providers.http`.

Shapes (as that client reads them): `{pricing: {"<sku>": <USD per hour>}}` and `{specs: {"<sku>":
{displayName, vramGB, gpuCount, mode, vcpuOptions, ramPerVCPUGiB, …}}}`, joined on the SKU key
`<gpu>_x<count>_<mode>` (`h100_x2_production`). The price is per instance-hour for all `count` GPUs (Thunder
bills per minute at that hourly rate). Keys that are not GPU SKUs (disk, extra vCPUs, snapshots, bare
aliases) are not offers and are ignored; a SKU without a positive price is dropped with a reason.

`mode` is the instance tier: `prototyping` (lower-cost, time-shared GPUs) or `production` (dedicated). Both
are on-demand prices; the tier is part of the key and kept in attributes. The first 4 vCPUs (8 GiB RAM each)
are included in the price, so the offer states the smallest `vcpuOptions` entry (4 when absent).
The API has no region or capacity: `region` is "" and `available` None.

GPU names: the SKU's GPU token maps to the card as Thunder's pricing page names it ("h100" → "H100 PCIe"),
with `vramGB`; an unknown token passes through as the spec's `displayName`.

Docs-built: the cassette follows the shapes above; SKUs and prices illustrative (Thunder's pricing page).
"""

from __future__ import annotations

import re
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
from providers.http import get_json, require
from providers.parsing import as_list, to_optional_decimal

API = "https://api.thundercompute.com:8443/v1"
PRICING_URL = f"{API}/pricing"
SPECS_URL = f"{API}/specs"
API_KEY = "TNR_API_TOKEN"
INCLUDED_VCPUS = 4
RAM_GIB_PER_VCPU = 8
_SKU = re.compile(r"^(?P<gpu>[a-z0-9]+)_x(?P<count>\d+)_(?P<mode>production|prototyping)$")
# GPU token → (model as Thunder's pricing page names it, memory per GPU GB)
GPUS: dict[str, tuple[str, Decimal]] = {
    "h100": ("H100 PCIe", Decimal(80)),
    "a100xl": ("A100", Decimal(80)),
    "a6000": ("RTX A6000", Decimal(48)),
    "l40": ("L40", Decimal(48)),
    "l40s": ("L40S", Decimal(48)),
    "t4": ("T4", Decimal(16)),
}


def _object(payload: Any, key: str, what: str) -> dict[str, Any]:
    value = require(payload, key, what)
    if not isinstance(value, dict):
        raise ProviderError(f"schema changed: {what} '{key}' is not an object")
    return value


def parse(pricing_payload: Any, specs_payload: Any) -> ScrapeResult:
    pricing = _object(pricing_payload, "pricing", "/v1/pricing")
    specs = _object(specs_payload, "specs", "/v1/specs")
    result = ScrapeResult()
    for sku, raw_price in pricing.items():
        match = _SKU.match(str(sku))
        if match is None:
            continue  # disk, extra vCPUs, snapshots, bare aliases: not GPU offers
        price = to_optional_decimal(raw_price, f"pricing.{sku}", blank_is_none=True)
        if price is None or price <= 0:
            result.skipped.append(f"{sku}: no price")
            continue
        spec = specs.get(sku)
        spec = spec if isinstance(spec, dict) else {}
        token, mode = match["gpu"], match["mode"]
        count = Decimal(match["count"])
        model, memory = GPUS.get(token, (str(spec.get("displayName") or token.upper()), None))
        memory = to_optional_decimal(spec.get("vramGB"), f"specs.{sku}.vramGB") or memory
        size = f" {int(memory)}GB" if memory and memory == int(memory) else ""
        options = [
            to_optional_decimal(v, f"specs.{sku}.vcpuOptions")
            for v in as_list(spec.get("vcpuOptions") or [], f"specs.{sku}.vcpuOptions")
        ]
        vcpus = min((v for v in options if v), default=Decimal(INCLUDED_VCPUS))
        ram_per = to_optional_decimal(spec.get("ramPerVCPUGiB"), f"specs.{sku}.ramPerVCPUGiB") or RAM_GIB_PER_VCPU
        attributes: dict[str, Any] = {"sku": sku, "mode": mode, "shared_gpu": mode == "prototyping"}
        if spec.get("displayName"):
            attributes["display_name"] = spec["displayName"]
        if not spec:
            attributes["specs_missing"] = True
        result.offers.append(
            ScrapedOffer(
                key=str(sku),
                gpu_name=f"{model}{size}",
                gpu_count=count,
                price_per_hour=price,
                gpu_memory_gb=memory,
                instance_type=str(sku),
                available=None,
                vcpus=vcpus,
                ram_gb=vcpus * ram_per,
                attributes=attributes,
            )
        )
    return result


class ThunderCompute(Provider):
    name = "thundercompute"
    title = "Thunder Compute"
    kind = ProviderKind.cloud
    homepage = "https://www.thundercompute.com/pricing"
    optional_credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        token = ctx.credentials.get(API_KEY)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        pricing = await get_json(ctx, PRICING_URL, headers=headers)
        specs = await get_json(ctx, SPECS_URL, headers=headers)
        return parse(pricing, specs)

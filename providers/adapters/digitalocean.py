"""DigitalOcean GPU Droplets: `GET /v2/sizes` lists every Droplet size.

Quirks handled here:
* the listing is paginated: we follow `links.pages.next` until it is absent (guarding against loops);
* only sizes with `gpu_info` are GPU Droplets; the ~140 CPU sizes are skipped silently;
* `gpu_info.vram.amount` is the TOTAL memory across the Droplet's GPUs (640 GiB for 8×H100), so the
  per-GPU memory is total ÷ count (gpuhunt stores the total, which is a bug we do not copy);
* `gpu_info.model` ("nvidia_h100", "amd_mi300x", "nvidia_rtx6000_ada") carries no form factor. DO's
  H100/H200 Droplets are HGX (SXM) boards, so the raw name we pass says so ("H100 SXM"); the original
  model string is kept in attributes["raw_gpu"];
* `price_hourly` is USD per Droplet-hour; one offer per (size × region in `regions`). A size with an
  empty `regions` list (or `available: false`) is sold out: one offer with region "" and available=False.
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
from providers.http import get_json, redacting_secrets, require, walk_pages
from providers.parsing import as_list, dropping, region_codes, tidy_decimal, to_decimal, to_optional_decimal
from providers.parsing import slug as code_of

API_ROOT = "https://api.digitalocean.com"
URL = f"{API_ROOT}/v2/sizes?per_page=200"
MAX_PAGES = 50

# `gpu_info.model` → the name the GPU catalog understands, with the form factor DO's product pages state.
MODEL_NAMES = {
    "nvidia_h100": "H100 SXM",
    "nvidia_h200": "H200 SXM",
    "nvidia_l40s": "L40S",
    "nvidia_rtx4000_ada": "RTX 4000 Ada",
    "nvidia_rtx6000_ada": "RTX 6000 Ada",
    "amd_mi300x": "MI300X",
    "amd_mi325x": "MI325X",
}
VENDOR_PREFIXES = ("nvidia", "amd", "intel")
MEMORY_UNITS = {"gib": Decimal(1), "gb": Decimal(1), "mib": Decimal(1) / 1024, "mb": Decimal(1) / 1024}


def gpu_name_of(model: str) -> str:
    """'nvidia_h100' → 'H100 SXM'; an unmapped model drops its vendor: 'nvidia_b300' → 'B300'."""
    model = model.strip().lower()
    if model in MODEL_NAMES:
        return MODEL_NAMES[model]
    parts = [p for p in model.split("_") if p]
    if len(parts) > 1 and parts[0] in VENDOR_PREFIXES:
        parts = parts[1:]
    return " ".join(p.upper() for p in parts)


def parse_page(payload: Any, result: ScrapeResult | None = None) -> tuple[ScrapeResult, str | None]:
    """Parse one `/v2/sizes` page into `result`; return it and the next page's URL (None at the end)."""
    result = result if result is not None else ScrapeResult()
    for i, size in enumerate(as_list(require(payload, "sizes", "response"), "'sizes'")):
        with dropping(result, f"sizes[{i}]"):
            where = f"sizes[{i}]"
            slug = str(require(size, "slug", where))
            gpu_info = size.get("gpu_info")
            if not gpu_info:
                continue  # a CPU Droplet size
            where = f"size {slug}"
            count = to_decimal(require(gpu_info, "count", f"{where}.gpu_info"), f"{where}.gpu_info.count")
            if count <= 0:
                result.skipped.append(f"{slug}: gpu_info.count={count}")
                continue
            model = str(require(gpu_info, "model", f"{where}.gpu_info"))
            per_gpu_memory = None
            vram = gpu_info.get("vram")
            if isinstance(vram, dict) and vram.get("amount") is not None:
                unit = str(vram.get("unit") or "gib").lower()
                if unit not in MEMORY_UNITS:
                    raise ProviderError(f"schema changed: unknown vram unit {unit!r} at {where}")
                total = to_decimal(vram["amount"], f"{where}.gpu_info.vram.amount") * MEMORY_UNITS[unit]
                per_gpu_memory = tidy_decimal(total / count) if total > 0 else None
            price = to_decimal(require(size, "price_hourly", where), f"{where}.price_hourly")
            if price <= 0:
                result.skipped.append(f"{slug}: price_hourly={price}")
                continue
            regions = as_list(require(size, "regions", where), "regions", where)
            memory_mib = to_optional_decimal(size.get("memory"), f"{where}.memory")
            attributes: dict[str, Any] = {"raw_gpu": model}
            for field in ("description", "price_monthly", "disk"):
                if size.get(field) is not None:
                    attributes[field] = size[field]
            # The region-less, sold-out row doubles as the template for the per-region rows, so the fields
            # they share are written once.
            unplaced = ScrapedOffer(
                key=slug,
                gpu_name=gpu_name_of(model),
                gpu_count=count,
                price_per_hour=price,
                region="",
                gpu_memory_gb=per_gpu_memory,
                instance_type=slug,
                available=False,
                vcpus=to_optional_decimal(size.get("vcpus"), f"{where}.vcpus"),
                ram_gb=tidy_decimal(memory_mib / 1024) if memory_mib else None,
                attributes=dict(attributes),
            )
            sellable = size.get("available", True) is not False
            codes = sorted({code for c in region_codes(regions) if (code := code_of(c))})  # always well-formed codes
            if not codes or not sellable:
                result.offers.append(unplaced)
                continue
            for code in codes:
                result.offers.append(
                    replace(unplaced, key=f"{slug}:{code}", region=code, available=True, attributes=dict(attributes))
                )
    links = payload.get("links") or {}
    if not isinstance(links, dict):
        raise ProviderError("schema changed: 'links' is not an object")
    pages = links.get("pages") or {}
    if not isinstance(pages, dict):
        raise ProviderError("schema changed: 'links.pages' is not an object")
    next_url = pages.get("next")
    if next_url is not None and not isinstance(next_url, str):
        raise ProviderError("schema changed: 'links.pages.next' is not a URL")
    return result, next_url or None


class DigitalOcean(Provider):
    name = "digitalocean"
    title = "DigitalOcean GPU Droplets"
    kind = ProviderKind.cloud
    homepage = "https://www.digitalocean.com/products/gpu-droplets"
    credentials = ("DIGITALOCEAN_TOKEN",)
    parser_version = "2"  # 2: region codes normalised with slug() (well formed whatever the API sends)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        token = ctx.secret("DIGITALOCEAN_TOKEN")
        headers = {"Authorization": f"Bearer {token}"}
        result = ScrapeResult()
        with redacting_secrets(token):
            # walk_pages never follows a link (and sends our token) off DigitalOcean's API host.
            await walk_pages(
                lambda url: get_json(ctx, url, headers=headers),
                lambda payload, _: parse_page(payload, result)[1],
                what="/v2/sizes",
                max_pages=MAX_PAGES,
                first=URL,
                origin=API_ROOT,
            )
        return result

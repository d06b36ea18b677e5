"""QuantaCloud on-demand GPU VMs: `GET https://core.quantacloud.net/api/v1/offers`.

Auth: none for the catalog (`/offers` and `/gpu-families` are public; deploys need `X-API-Key`, which we never
use). Rate limit: documented as **3,000 requests per 15 minutes per IP**, declared as
`requests_per_minute = 200` so the pacer in `providers.fetching` spaces our pages under it.

Pagination: `page` (0-indexed) and `size` (at most 100); the walk stops at a short page, and more than
`MAX_PAGES` pages fail the run rather than silently truncate the catalog.

Shape: `{offers: [{id, gpu{slug, name?, count, vramGB}, priceHourly, pricePerGpu, region, specs{vcpu, ram},
isAvailable}], totalElements}`. The endpoint lists IN-STOCK offers only, so an offer that disappears is
out of stock; `available` is `isAvailable`.

UNITS: `priceHourly` is **USD per hour for the whole box** (`gpu.count` GPUs); `pricePerGpu` is kept in
attributes only. Offer ids are ephemeral UUIDs, so the key is `<slug>:<count>:<region>`.

MIG partitions (`-mig-` in the slug, e.g. `rtx-pro-6000-blackwell-mig-48gb`) are never priced as whole
cards: the slice is a fraction of the card (`vramGB` of the full card's memory, per `FULL_CARD_GB`), kept as
a fractional `gpu_count` with the slice's memory, the way Vultr's vGPU slices are; a MIG slug whose card is
not in `FULL_CARD_GB` is dropped with a reason, never guessed.

One malformed offer is dropped with its reason; a body without an `offers` list fails the run.

Evidence: NONE raw. The bundled cassette follows the fields SkyPilot's QuantaCloud client reads
(`skypilot-org/skypilot@d6be8b3b:sky/adaptors/quantacloud.py`, verified by its authors against the public
API docs); values illustrative.
"""

from __future__ import annotations

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
from providers.items import LISTED_TWICE, add_unique
from providers.parsing import as_list, slug, to_decimal, to_optional_decimal

URL = "https://core.quantacloud.net/api/v1/offers"
PAGE_SIZE = 100
MAX_PAGES = 50
MIG_MARKER = "-mig-"
# Base slug of a card QuantaCloud partitions with MIG → the whole card's memory (GB).
FULL_CARD_GB: dict[str, Decimal] = {
    "rtx-pro-6000-blackwell": Decimal(96),
    "h100": Decimal(80),
    "h100-sxm": Decimal(80),
    "h200": Decimal(141),
    "a100": Decimal(80),
}
# Slug words spelled as the catalog knows them.
_WORDS = {"rtx": "RTX", "pro": "PRO", "sxm": "SXM", "pcie": "PCIe", "nvl": "NVL", "ada": "Ada"}


def gpu_name(base: str, memory: Decimal | None) -> str:
    """`rtx-pro-6000-blackwell`, 96 → "RTX PRO 6000 Blackwell 96GB"."""
    words = [_WORDS.get(w, w.upper() if any(c.isdigit() for c in w) else w.capitalize()) for w in base.split("-")]
    return " ".join(words) + (f" {memory.normalize():f}GB" if memory else "")


def parse_offer(raw: Any, where: str) -> ScrapedOffer:
    gpu = require(raw, "gpu", where)
    raw_slug = str(require(gpu, "slug", f"{where}.gpu")).strip().lower()
    count = to_decimal(require(gpu, "count", f"{where}.gpu"), f"{where}.gpu.count")
    vram = to_optional_decimal(gpu.get("vramGB"), f"{where}.gpu.vramGB")
    price = to_decimal(require(raw, "priceHourly", where), f"{where}.priceHourly")
    if not raw_slug or count <= 0 or price <= 0:
        raise ProviderError(f"{where}: slug {raw_slug!r}, {count} GPUs at {price}/h")
    region = slug(raw.get("region"))
    attributes: dict[str, Any] = {"gpu_slug": raw_slug}
    if raw.get("pricePerGpu") is not None:
        attributes["price_per_gpu"] = str(raw["pricePerGpu"])
    gpus, memory, base = count, vram, raw_slug
    if MIG_MARKER in raw_slug:
        base = raw_slug.split(MIG_MARKER, 1)[0]
        full = FULL_CARD_GB.get(base)
        if full is None or not vram or vram >= full:
            raise ProviderError(f"{where}: MIG slice {raw_slug!r} of an unknown card size: not priced as a whole card")
        gpus = (count * vram / full).quantize(Decimal("0.001"))
        attributes |= {"mig_slice": True, "slices": int(count), "full_card_gb": str(full)}
        name = gpu_name(base, full)
    else:
        name = gpu_name(base, vram)
    specs = raw.get("specs") if isinstance(raw.get("specs"), dict) else {}
    available = raw.get("isAvailable")
    return ScrapedOffer(
        key=f"{raw_slug}:{count.normalize():f}:{region}",
        gpu_name=name,
        gpu_count=gpus,
        price_per_hour=price,
        region=region,
        gpu_memory_gb=memory,
        instance_type=raw_slug,
        available=available if isinstance(available, bool) else None,
        vcpus=to_optional_decimal(specs.get("vcpu"), f"{where}.specs.vcpu"),
        ram_gb=to_optional_decimal(specs.get("ram"), f"{where}.specs.ram"),
        attributes=attributes,
    )


def parse_page(payload: Any, page: int, result: ScrapeResult, seen: set[str]) -> int:
    """Add one page's offers to `result`; returns how many rows the page held."""
    rows = as_list(require(payload, "offers", f"offers page {page}"), "offers", f"page {page}")
    for i, raw in enumerate(rows):
        where = f"page {page} offers[{i}]"
        try:
            offer = parse_offer(raw, where)
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        add_unique(result, [offer], seen)
    return len(rows)


class QuantaCloud(Provider):
    name = "quantacloud"
    title = "QuantaCloud"
    kind = ProviderKind.cloud
    homepage = "https://quantacloud.net"
    credentials = ()
    # Documented: 3,000 requests per 15 minutes per IP.
    requests_per_minute = 3000 / 15
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        seen: set[str] = set()
        for page in range(MAX_PAGES):
            payload = await get_json(ctx, URL, params={"page": page, "size": PAGE_SIZE})
            repeats = len(result.skipped)
            rows = parse_page(payload, page, result, seen)
            repeats = sum(1 for s in result.skipped[repeats:] if s.endswith(LISTED_TWICE))
            # A short page ends the listing; so does a page that repeats offers already listed (a server
            # that ignores `page`, or pads its pages, would otherwise be asked MAX_PAGES times).
            if rows < PAGE_SIZE or repeats:
                return result
        raise ProviderError(f"pagination did not end after {MAX_PAGES} pages of QuantaCloud offers")

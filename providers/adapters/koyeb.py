"""Koyeb serverless GPU instances: `GET https://app.koyeb.com/v1/catalog/instances`.

Auth: `Authorization: Bearer <KOYEB_API_TOKEN>` (missing → the run is `skipped`; unauthenticated access is
unverified, so we do not rely on it). Pagination: `limit`/`offset` (`PAGE_SIZE` per page), until a page is
short or `offset + limit` reaches the body's `count`; more than `MAX_PAGES` pages fail the run. No rate
limit documented (`requests_per_minute` None).

Shape (Koyeb's API client models): `instances[{id ("gpu-nvidia-h100", "2-gpu-nvidia-h200"), type ("gpu"),
gpu{count, brand, memory ("80GB"), name}, price_per_second, price_hourly, price_monthly (strings),
regions[], status, vcpu_shares, memory, disk}]`. Only `type == "gpu"` instances are read.

UNITS: `price_per_second` is a **string, USD per instance-second** (all `gpu.count` GPUs): the offer's
price is `price_per_second × 3600`; `price_hourly` (also a string) is used only when no per-second price is
given, and kept in attributes. Koyeb bills by the second, so the per-second figure is the price.

Offers: one per (instance × `regions[]` entry), key `<id>:<region>`; `available` is True for status
"AVAILABLE", False for "COMING_SOON"/"DEPRECATED"/"SOLD_OUT", else None. One malformed instance is dropped
with its reason; a body without an `instances` list fails the run.

Evidence: SHAPE. Region and instance ids as captured 2026-02-12 in
`koyeb/koyeb-skills@a0b9246b:plugins/koyeb/skills/_shared/references/koyeb-regions-instance-types.md` (no
prices there); the field list is Koyeb's client models; prices are the page's figures quoted in a research
note (RTX-A6000 $0.75/h, L40S $1.55, A100 $2.0), the rest illustrative.
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
from providers.items import add_unique
from providers.parsing import as_list, memory_in_name, slug, to_decimal, to_optional_decimal

URL = "https://app.koyeb.com/v1/catalog/instances"
API_KEY = "KOYEB_API_TOKEN"
PAGE_SIZE = 100
MAX_PAGES = 20
SECONDS_PER_HOUR = Decimal(3600)
_STATUS = {"available": True, "coming_soon": False, "deprecated": False, "sold_out": False, "unavailable": False}


def _gpu_name(gpu: dict[str, Any]) -> tuple[str, Decimal | None]:
    name = str(gpu.get("name") or "").strip()
    brand = str(gpu.get("brand") or "").strip()
    memory = memory_in_name(f"x {gpu.get('memory') or ''}")
    if brand and not name.lower().startswith(brand.lower()) and brand.lower() != "nvidia":
        name = f"{brand} {name}"  # Tenstorrent, AMD: the brand is part of the card's name
    return (f"{name} {memory.normalize():f}GB" if memory else name), memory


def parse_instance(raw: Any, where: str) -> list[ScrapedOffer]:
    ident = str(require(raw, "id", where))
    gpu = require(raw, "gpu", where)
    if not isinstance(gpu, dict):
        raise ProviderError(f"{where}: gpu is not an object")
    count = to_decimal(require(gpu, "count", f"{where}.gpu"), f"{where}.gpu.count")
    per_second = to_optional_decimal(raw.get("price_per_second"), f"{where}.price_per_second", blank_is_none=True)
    hourly = to_optional_decimal(raw.get("price_hourly"), f"{where}.price_hourly", blank_is_none=True)
    price = per_second * SECONDS_PER_HOUR if per_second is not None else hourly
    name, memory = _gpu_name(gpu)
    if not name or count <= 0 or price is None or price <= 0:
        raise ProviderError(f"{where} ({ident}): GPU {name!r} x{count} at {price}/h is no offer")
    regions = [r for r in (slug(x) for x in as_list(raw.get("regions") or [], "regions", where)) if r] or [""]
    status = str(raw.get("status") or "").strip().lower()
    attributes: dict[str, Any] = {"price_per_second": str(per_second) if per_second is not None else None}
    attributes |= {k: raw[k] for k in ("price_hourly", "price_monthly", "status") if raw.get(k) is not None}
    return [
        ScrapedOffer(
            key=f"{ident}:{region}" if region else ident,
            gpu_name=name,
            gpu_count=count,
            price_per_hour=price,
            region=region,
            gpu_memory_gb=memory,
            instance_type=ident,
            available=_STATUS.get(status),
            vcpus=to_optional_decimal(raw.get("vcpu_shares"), f"{where}.vcpu_shares"),
            ram_gb=memory_in_name(f"x {raw.get('memory') or ''}"),
            attributes=dict(attributes),
        )
        for region in dict.fromkeys(regions)
    ]


def parse_page(payload: Any, page: int, result: ScrapeResult, seen: set[str]) -> int:
    """Add one page's GPU instances to `result` (an offer already `seen` is dropped); returns the number of
    rows on the page."""
    rows = as_list(require(payload, "instances", f"page {page}"), "instances", f"page {page}")
    for i, raw in enumerate(rows):
        where = f"page {page} instances[{i}]"
        if isinstance(raw, dict) and raw.get("type") != "gpu":
            continue  # CPU instances
        try:
            offers = parse_instance(raw, where)
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        add_unique(result, offers, seen)
    return len(rows)


class Koyeb(Provider):
    name = "koyeb"
    title = "Koyeb"
    kind = ProviderKind.cloud
    homepage = "https://www.koyeb.com/pricing"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # none documented; 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        result = ScrapeResult()
        seen: set[str] = set()
        for page in range(MAX_PAGES):
            offset = page * PAGE_SIZE
            payload = await get_json(ctx, URL, params={"limit": PAGE_SIZE, "offset": offset}, headers=headers)
            rows = parse_page(payload, page, result, seen)
            total = payload.get("count")
            if rows < PAGE_SIZE or (isinstance(total, int) and offset + PAGE_SIZE >= total):
                return result
        raise ProviderError(f"pagination did not end after {MAX_PAGES} pages of Koyeb instances")

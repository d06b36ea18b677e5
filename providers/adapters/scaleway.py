"""Scaleway GPU Instances, priced in euros.

API (Instance v1, per zone):
* `GET https://api.scaleway.com/instance/v1/zones/{zone}/products/servers?per_page=100&page=<n>`: every
  commercial type of the zone, `{servers: {<type>: {hourly_price, monthly_price, ncpus, ram, gpu,
  gpu_info: {gpu_manufacturer, gpu_name, gpu_memory}, arch, baremetal, end_of_service, ...}}}`. Paginated by
  `page` with the total in the `X-Total-Count` header: pages are read until that many types were seen (or,
  without the header, until a page comes back short or empty);
* `GET .../products/servers/availability?per_page=100&page=<n>`: `{servers: {<type>: {availability}}}`,
  "available" / "scarce" / "shortage", paginated the same way.
Zones: those with GPU Instances (fr-par-1, fr-par-2, nl-ams-1, pl-waw-2); a zone that answers 404 is
reported in `skipped` and the others still count.

Auth: the product listings are public (no token needed, per a third-party client and SkyPilot's old
fetcher); `SCW_SECRET_KEY` is optional and, when set, sent as `X-Auth-Token`. No run is ever skipped.

Units: `hourly_price` is **EUR** per instance-hour, VAT excluded (`currency="EUR"`); `monthly_price` is a
monthly cap on the same on-demand use, not a commitment, so it is kept in attributes only. `ram` and
`gpu_info.gpu_memory` are bytes (→ GiB). `gpu` is the GPU count; types with 0 are CPU-only and skipped.
The raw GPU name is `gpu_name` + form factor + memory: "SXM" when the type name says so (H100-SXM-8-80G),
else "PCIe": Scaleway's other GPU types are PCIe cards (H100-1-80G is the H100 PCIe, RENDER-S a P100 PCIe).
`availability` "available"/"scarce" → `available=True`, "shortage" → False (the offer is kept, so a sold-out
type's price history continues); no entry → None. One offer per (type × zone), on demand (Scaleway has no
spot GPUs).

Rate limit: none documented for these endpoints; 2 requests per zone and page (8 per run today).

Docs-built: the cassette follows the Instance API reference (`products/servers` and its `availability`
companion; commercial type names from Scaleway's GPU Instances page); prices are illustrative.
"""

from __future__ import annotations

from typing import Any

from providers import http
from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import request, require, walk_pages
from providers.parsing import gigabytes, slug, to_optional_decimal

API = "https://api.scaleway.com/instance/v1/zones"
ZONES = ("fr-par-1", "fr-par-2", "nl-ams-1", "pl-waw-2")
PER_PAGE = 100
MAX_PAGES = 20
BYTES_PER_GIB = 2**30
IN_STOCK = {"available": True, "scarce": True, "shortage": False}


def servers_url(zone: str) -> str:
    return f"{API}/{zone}/products/servers"


def availability_url(zone: str) -> str:
    return f"{API}/{zone}/products/servers/availability"


def _headers(ctx: FetchContext) -> dict[str, str]:
    token = ctx.credentials.get("SCW_SECRET_KEY")
    return {"X-Auth-Token": token} if token else {}


async def _all_pages(ctx: FetchContext, url: str) -> dict[str, Any]:
    """Every page of one `{servers: {...}}` listing, merged."""
    merged: dict[str, Any] = {}
    total: list[int | None] = [None]

    async def fetch(cursor: str) -> Any:
        page = int(cursor or 1)
        response = await request(
            ctx, "GET", url, params={"per_page": PER_PAGE, "page": page}, headers=_headers(ctx) or None
        )
        count = response.headers.get("x-total-count", "")
        total[0] = int(count) if count.strip().isdigit() else None
        # looked up on the module at each call, as `get_json` does, so the drift check's capture sees the body
        return http.decode_json(response)

    def read(payload: Any, page: int) -> str | None:
        servers = require(payload, "servers", url)
        if not isinstance(servers, dict):
            raise ProviderError(f"schema changed: 'servers' is not an object keyed by type at {url}")
        merged.update(servers)
        done = len(merged) >= total[0] if total[0] is not None else len(servers) < PER_PAGE
        return None if done or not servers else str(page + 1)

    await walk_pages(fetch, read, what=url, max_pages=MAX_PAGES)
    return merged


def parse_zone(zone: str, servers: dict[str, Any], availability: dict[str, Any], result: ScrapeResult) -> None:
    """One zone's commercial types (and their stock) as offers."""
    region = slug(zone)
    for name, raw in servers.items():
        where = f"{zone}.servers[{name!r}]"
        count = to_optional_decimal(raw.get("gpu") if isinstance(raw, dict) else None, f"{where}.gpu")
        if not count:
            continue  # CPU-only type
        # A null price drops that type with the reason, not the whole run (every zone) with it.
        price = to_optional_decimal(require(raw, "hourly_price", where), f"{where}.hourly_price", blank_is_none=True)
        if price is None or price <= 0:
            result.skipped.append(f"{zone}/{name}: hourly_price {price}")
            continue
        info = raw.get("gpu_info") if isinstance(raw.get("gpu_info"), dict) else {}
        model = str(info.get("gpu_name") or "").strip()
        if not model:
            result.skipped.append(f"{zone}/{name}: {count} GPU(s) without gpu_info.gpu_name")
            continue
        memory = gigabytes(to_optional_decimal(info.get("gpu_memory"), f"{where}.gpu_memory"), BYTES_PER_GIB)
        form = "SXM" if "SXM" in name.upper() else "PCIe"
        raw_name = f"{model} {form}" + (f" {memory.normalize():f}GB" if memory else "")
        stock = availability.get(name)
        state = stock.get("availability") if isinstance(stock, dict) else None
        attributes: dict[str, Any] = {"raw_gpu": model, "commercial_type": name, "billing": "per-minute"}
        if info.get("gpu_manufacturer"):
            attributes["gpu_manufacturer"] = info["gpu_manufacturer"]
        if raw.get("monthly_price") is not None:
            attributes["monthly_price"] = str(raw["monthly_price"])  # a cap on on-demand use, not a term
        if state is not None:
            attributes["stock"] = state
        if raw.get("end_of_service"):
            attributes["end_of_service"] = True
        result.offers.append(
            ScrapedOffer(
                key=f"{name}:{region}",
                gpu_name=raw_name,
                gpu_count=count,
                price_per_hour=price,
                region=region,
                gpu_memory_gb=memory,
                instance_type=name,
                available=IN_STOCK.get(str(state)) if state is not None else None,
                vcpus=to_optional_decimal(raw.get("ncpus"), f"{where}.ncpus"),
                ram_gb=gigabytes(to_optional_decimal(raw.get("ram"), f"{where}.ram"), BYTES_PER_GIB),
                attributes=attributes,
                currency="EUR",
            )
        )


class Scaleway(Provider):
    name = "scaleway"
    title = "Scaleway"
    kind = ProviderKind.cloud
    homepage = "https://www.scaleway.com/en/pricing/gpu/"
    credentials = ()
    optional_credentials = ("SCW_SECRET_KEY",)
    requests_per_minute = None  # none documented for the product listings

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        for zone in ZONES:
            try:
                servers = await _all_pages(ctx, servers_url(zone))
            except ProviderError as exc:
                if "HTTP 404" not in str(exc):
                    raise
                result.skipped.append(f"{zone}: zone not served ({exc})")
                continue
            stock = await _all_pages(ctx, availability_url(zone))
            parse_zone(zone, servers, stock, result)
        return result

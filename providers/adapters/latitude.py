"""Latitude.sh bare-metal GPU plans: `GET https://api.latitude.sh/plans?filter[gpu]=true`.

Auth: `Authorization: Bearer <LATITUDE_API_KEY>` (missing → the run is `skipped`). JSON:API, paginated with
`page[size]`/`page[number]` (1-based): the walk stops at `meta.total_pages`, or at a short or empty page
when the body gives no total; past `MAX_PAGES` the run fails. No rate limit documented.

Shape: `data[{id, attributes{slug, name, specs{gpu{type ("NVIDIA H100"), count, vram_per_gpu,
interconnect}, cpu, memory{total}, drives, nics}, regions[{name, locations{available[], in_stock[]},
stock_level, deploys_instantly[], pricing{USD{hour, month}}}]}}]`.

UNITS: `pricing.USD.hour` is **USD per hour for the whole box** (`gpu.count` GPUs). A region priced by the
month only is turned into an hour at month / 730. Where the monthly price is below 730 hours of the hourly
one, it is also a `reserved` offer with term "1mo" (monthly billing commits for the month), priced at
month / 730 per hour, the month's amount kept in attributes.

Offers: one per (plan × region × location in `locations.available`), region = the location code
("sao", "dal"). Availability: True when the location is in `locations.in_stock`, False otherwise; the
region's `stock_level` ("unavailable", "low", "medium", "high") and whether the location deploys instantly
are kept in attributes, and a region whose `stock_level` is "unavailable" is never available.

GPU name: the card from `type` without the vendor, the form factor from `interconnect` (NVLink/SXM → SXM,
PCIe → PCIe) and `vram_per_gpu` ("NVIDIA H100", NVLink, 80 → "H100 SXM 80GB"). A plan without a GPU
count or price is dropped with its reason; a body without `data` fails the run. Latitude is also resold
through Shadeform (`upstream` there): this adapter is its direct listing.

Evidence: SHAPE. Field names and the H100 4x plan (Brazil, SAO, stock "medium", $10/h, $5,000/mo) are those
of `wayneornn/public-pricing@305b3f1a:test/latitudeProvider.test.js`, whose fixture follows the live
schema; the other plans and prices are illustrative.
"""

from __future__ import annotations

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
from providers.items import add_unique
from providers.parsing import as_list, slug, to_optional_decimal

URL = "https://api.latitude.sh/plans"
API_KEY = "LATITUDE_API_KEY"
PAGE_SIZE = 100
MAX_PAGES = 20
HOURS_PER_MONTH = Decimal(730)


def gpu_name(gpu: dict[str, Any]) -> str:
    card = str(gpu.get("type") or "").strip()
    card = card[len("NVIDIA ") :] if card.upper().startswith("NVIDIA ") else card
    link = str(gpu.get("interconnect") or "").lower()
    form = "SXM" if ("nvlink" in link or "sxm" in link) else "PCIe" if "pci" in link else ""
    vram = gpu.get("vram_per_gpu")
    return " ".join(p for p in (card, form, f"{vram}GB" if vram else "") if p)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_plan(raw: Any, where: str) -> list[ScrapedOffer]:
    attrs = require(raw, "attributes", where)
    plan = str(require(attrs, "slug", f"{where}.attributes"))
    gpu = _object(_object(attrs.get("specs")).get("gpu"))
    count = to_optional_decimal(gpu.get("count"), f"{where}.specs.gpu.count")
    if not count or count <= 0 or not gpu.get("type"):
        raise ProviderError(f"{plan}: no GPU in the plan's specs")
    name = gpu_name(gpu)
    memory = to_optional_decimal(gpu.get("vram_per_gpu"), f"{where}.specs.gpu.vram_per_gpu")
    ram = to_optional_decimal(_object(_object(attrs.get("specs")).get("memory")).get("total"), f"{where}.memory")
    offers: list[ScrapedOffer] = []
    for j, region in enumerate(as_list(require(attrs, "regions", where), "regions", where)):
        here = f"{where}.regions[{j}]"
        usd = _object(_object(require(region, "pricing", here)).get("USD"))
        hour = to_optional_decimal(usd.get("hour"), f"{here}.pricing.USD.hour", blank_is_none=True)
        month = to_optional_decimal(usd.get("month"), f"{here}.pricing.USD.month", blank_is_none=True)
        if not hour and month:
            hour = month / HOURS_PER_MONTH
        if not hour or hour <= 0:
            raise ProviderError(f"{plan} in {region.get('name')!r}: no USD price")
        locations = _object(region.get("locations"))
        in_stock = {slug(x) for x in as_list(locations.get("in_stock") or [], "in_stock", here)}
        instant = {slug(x) for x in as_list(region.get("deploys_instantly") or [], "deploys_instantly", here)}
        level = str(region.get("stock_level") or "").lower() or None
        for code in dict.fromkeys(slug(x) for x in as_list(locations.get("available") or [], "available", here)):
            if not code:
                continue
            attributes: dict[str, Any] = {
                "plan": plan,
                "region_name": region.get("name"),
                "stock_level": level,
                "deploys_instantly": code in instant,
                "form_factor": "bare_metal",
            }
            on_demand = ScrapedOffer(
                key=f"{plan}:{code}",
                gpu_name=name,
                gpu_count=count,
                price_per_hour=hour,
                region=code,
                gpu_memory_gb=memory,
                instance_type=plan,
                available=code in in_stock and level != "unavailable",
                ram_gb=ram,
                attributes=attributes,
            )
            offers.append(on_demand)
            if month and month / HOURS_PER_MONTH < hour:
                monthly = {"monthly_price": str(month), "hours_per_month": int(HOURS_PER_MONTH)}
                offers.append(
                    replace(
                        on_demand,
                        key=f"{plan}:{code}:1mo",
                        price_per_hour=month / HOURS_PER_MONTH,
                        pricing=Pricing.reserved,
                        reserved_term="1mo",
                        attributes=attributes | monthly,
                    )
                )
    return offers


def parse_page(payload: Any, page: int, result: ScrapeResult, seen: set[str]) -> int:
    rows = as_list(require(payload, "data", f"plans page {page}"), "data", f"page {page}")
    for i, raw in enumerate(rows):
        try:
            offers = parse_plan(raw, f"page {page} data[{i}]")
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        add_unique(result, offers, seen)
    return len(rows)


class Latitude(Provider):
    name = "latitude"
    title = "Latitude.sh"
    kind = ProviderKind.cloud
    homepage = "https://www.latitude.sh/pricing"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # none documented; 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}", "accept": "application/vnd.api+json"}
        result = ScrapeResult()
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            params: dict[str, str | int] = {"filter[gpu]": "true", "page[size]": PAGE_SIZE, "page[number]": page}
            payload = await get_json(ctx, URL, params=params, headers=headers)
            rows = parse_page(payload, page, result, seen)
            total = _object(payload.get("meta")).get("total_pages")
            if (isinstance(total, int) and page >= total) or (not isinstance(total, int) and rows < PAGE_SIZE):
                return result
            if rows == 0:
                return result
        raise ProviderError(f"pagination did not end after {MAX_PAGES} pages of Latitude.sh plans")

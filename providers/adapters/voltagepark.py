"""Voltage Park On-Demand instant VMs: `GET https://cloud-api.voltagepark.com/api/v1/virtual-machines/instant/locations`
.

Auth: `Authorization: Bearer <VP_API_TOKEN>` (a token from the dashboard's Developers page; missing →
`skipped`). The listing is paginated, `{items, pagination: {total, page, per_page}}` (Voltage Park's published
OpenAPI, `PaginatedInstantDeployLocation`): we ask `page=1, 2, …` with `per_page=PER_PAGE` until we hold
`total` locations or a page comes back empty. No rate limit is documented (`requests_per_minute` None); a
429 is retried with backoff by `providers.http`.

Each location (`id`, `name`) lists the presets one can deploy there (the 1/2/4/8× H100 configurations the
deploy call takes as `config_id`). Per preset we read `{id, name, gpu_type, gpu_count, vcpus, ram_gb,
rate_hourly, available_count}`: `rate_hourly` is a decimal string of USD per hour for the whole VM (the shape
of `VirtualMachinePricing.rate_hourly`, e.g. "2.500000"); `available_count` says how many can be deployed now
(`available` is its > 0; absent → None). THE PRESET FIELD NAMES ARE UNVERIFIED
(the public documentation does not name the
price field): `gpu-tracker doctor voltagepark` on a live answer reports any that differ.

One on-demand offer per (location × preset). The location name is the region code (slug). A preset without
a positive rate, or without GPUs, is dropped with a reason. GPU names pass through ("H100 SXM5 80GB").

Docs-built: endpoint, auth, pagination and the rate field's format from the published OpenAPI; preset
fields and values are illustrative.
"""

from __future__ import annotations

from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require, walk_pages
from providers.parsing import as_list, dropping, memory_in_name, slug, to_optional_decimal

URL = "https://cloud-api.voltagepark.com/api/v1/virtual-machines/instant/locations"
API_KEY = "VP_API_TOKEN"
PER_PAGE = 100
MAX_PAGES = 50


def parse_page(payload: Any, result: ScrapeResult, seen: set[str]) -> int:
    """Offers from one page into `result`; returns how many locations the page held."""
    locations = as_list(require(payload, "items", "response"), "items")
    for i, loc in enumerate(locations):
        with dropping(result, f"locations[{i}]"):
            where = f"items[{i}]"
            location_id = str(require(loc, "id", where))
            region = slug(require(loc, "name", where)) or slug(location_id)
            for j, preset in enumerate(as_list(require(loc, "presets", where), f"{where}.presets")):
                with dropping(result, f"locations[{i}].presets[{j}]"):
                    pwhere = f"{where}.presets[{j}]"
                    preset_id = str(require(preset, "id", pwhere))
                    label = str(preset.get("name") or preset_id)
                    key = f"{location_id}:{preset_id}"
                    count = to_optional_decimal(require(preset, "gpu_count", pwhere), f"{pwhere}.gpu_count")
                    rate = to_optional_decimal(
                        require(preset, "rate_hourly", pwhere), f"{pwhere}.rate_hourly", blank_is_none=True
                    )
                    gpu = str(preset.get("gpu_type") or "").strip()
                    if not count or count <= 0 or not gpu:
                        result.skipped.append(f"{region}:{label}: no GPUs")
                        continue
                    if rate is None or rate <= 0:
                        result.skipped.append(f"{region}:{label}: no price")
                        continue
                    if key in seen:
                        result.skipped.append(f"{region}:{label}: listed twice")
                        continue
                    seen.add(key)
                    free = to_optional_decimal(preset.get("available_count"), f"{pwhere}.available_count")
                    result.offers.append(
                        ScrapedOffer(
                            key=key,
                            gpu_name=gpu,
                            gpu_count=count,
                            price_per_hour=rate,
                            region=region,
                            gpu_memory_gb=memory_in_name(gpu),
                            instance_type=label,
                            available=None if free is None else free > 0,
                            vcpus=to_optional_decimal(preset.get("vcpus"), f"{pwhere}.vcpus"),
                            ram_gb=to_optional_decimal(preset.get("ram_gb"), f"{pwhere}.ram_gb"),
                            attributes={"location_id": location_id, "config_id": preset_id, "location": loc["name"]},
                        )
                    )
    return len(locations)


def next_page(payload: Any, page: int, held: int) -> str:
    """The next page number, or "" once `held` locations reach the listing's `total` (or a page is empty)."""
    pagination = payload.get("pagination") if isinstance(payload, dict) else None
    total = to_optional_decimal(pagination.get("total"), "pagination.total") if isinstance(pagination, dict) else None
    if total is None or held >= total:
        return ""
    return str(page + 1)


class VoltagePark(Provider):
    name = "voltagepark"
    title = "Voltage Park"
    kind = ProviderKind.cloud
    homepage = "https://www.voltagepark.com/pricing"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        result = ScrapeResult()
        seen: set[str] = set()
        held = 0

        def read(payload: Any, page: int) -> str:
            nonlocal held
            count = parse_page(payload, result, seen)
            held += count
            return next_page(payload, page, held) if count else ""

        await walk_pages(
            lambda page: get_json(ctx, URL, params={"page": page or "1", "per_page": PER_PAGE}, headers=headers),
            read,
            what=URL,
            max_pages=MAX_PAGES,
        )
        return result

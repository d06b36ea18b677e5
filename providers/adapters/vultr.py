"""Vultr: cloud GPU plans and bare-metal GPU servers.

Two anonymous listings, each paginated by cursor (`meta.links.next`, passed back as `cursor=`):
* `GET /v2/plans?type=all&per_page=500`: cloud plans. GPU plans have `type == "vcg"`, a `gpu_type`
  ("NVIDIA_A100") and `gpu_vram_gb`, the plan's TOTAL VRAM, which may be a slice of one card
  (Vultr sells 1/20 … 1/2 of an A100). We keep the slice: `gpu_count = gpu_vram_gb / full card
  memory` as a Decimal (10 GB of an 80 GB A100 → 0.125, rounded to the tracker's 3 decimals), with
  `gpu_memory_gb` the memory actually offered per GPU and the full card (with its memory and form
  factor) in the raw GPU name, so the catalog resolves the card without relying on the slice size.
  Some GPU plans come as `type: "vdm"` with a `gpu_brand` ("NVIDIA") and no `gpu_type`
  (`vcg-a40-24c-120g-48vram`, priced and located like any other): they are GPU plans too, not CPU ones.
  Their card is read from the plan id (`<family>-<model>-<n>c-<n>g-<vram>vram`) with the brand, and their
  VRAM from `gpu_vram_gb`, else from the id; `attributes["gpu_from"] = "plan_id"` says so.
* `GET /v2/plans-metal?per_page=500`: bare metal. The API carries no GPU fields, so GPU model and count
  come from a documented plan-id table (BARE_METAL_GPUS), with a fallback that reads `-<count>-<model>-gpu`
  from the plan id (model name only: the catalog decides whether it is unambiguous).
  `hourly_cost_preemptible` (when positive) is a separate spot offer, as below.

`hourly_cost` is USD per plan-hour (per instance). Plans with no location are skipped; one offer per
(plan × location × way to rent it). `locations` says where a plan is valid, not whether capacity is free,
so `available` is None. CPU-only plans are skipped silently.

How a plan may be rented, for cloud and bare-metal plans alike:
* on demand at `hourly_cost`, unless `deploy_ondemand` is false (a preemptible-only plan) or the price is
  zero (free tier);
* preemptible (a spot offer, key suffix ":spot") at `hourly_cost_preemptible`, when that is positive and
  `deploy_preemptible` is not false. Listings older than the deploy flags have neither, hence "not false";
* `location_cost` (`{location: {...}}`) overrides any of `hourly_cost`, `hourly_cost_preemptible`,
  `deploy_ondemand`, `deploy_preemptible` for one location, so a location where a way of renting is not
  offered gets no offer of that kind and a location priced differently gets its own price;
* a plan that leaves nothing to offer anywhere is reported in `result.skipped` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require, walk_pages
from providers.parsing import as_list, dropping, gigabytes, slug, to_optional_decimal

PLANS_URL = "https://api.vultr.com/v2/plans"
METAL_URL = "https://api.vultr.com/v2/plans-metal"
PLANS_PARAMS = {"type": "all", "per_page": "500"}
METAL_PARAMS = {"per_page": "500"}
MAX_PAGES = 50

# Cloud GPU `gpu_type` → (raw name of the FULL card, with memory and form factor, full card memory GB).
# Vultr's cloud A100s are 80 GB PCIe cards shared through vGPU slices; its bare metal A100/H100 are HGX (SXM).
# A gpu_type not listed here passes through as its model name ("NVIDIA_A2" → "A2") counted as one GPU
# holding all the plan's VRAM: the catalog then reports it as unknown rather than us guessing a slice size.
CLOUD_GPUS: dict[str, tuple[str, Decimal]] = {
    "NVIDIA_A100": ("A100 PCIe 80GB", Decimal(80)),
    "NVIDIA_A40": ("A40 48GB", Decimal(48)),
    "NVIDIA_A16": ("A16 16GB", Decimal(16)),
    "NVIDIA_L40S": ("L40S 48GB", Decimal(48)),
}

# Bare-metal plan id → (raw GPU name, GPUs per server, memory per GPU GB).
BARE_METAL_GPUS: dict[str, tuple[str, int, Decimal]] = {
    "vbm-48c-1024gb-4-a100-gpu": ("A100 SXM 80GB", 4, Decimal(80)),
    "vbm-112c-2048gb-8-a100-gpu": ("A100 SXM 80GB", 8, Decimal(80)),
    "vbm-112c-2048gb-8-h100-gpu": ("H100 SXM 80GB", 8, Decimal(80)),
    "vbm-64c-2048gb-8-l40-gpu": ("L40S 48GB", 8, Decimal(48)),
    "vbm-72c-480gb-gh200-gpu": ("GH200 96GB", 1, Decimal(96)),
    "vbm-256c-2048gb-8-mi300x-gpu": ("MI300X 192GB", 8, Decimal(192)),
}
_METAL_GPU_ID = re.compile(r"-(?:(\d+)-)?([a-z0-9]+)-gpu$")
# "vcg-a40-24c-120g-48vram" → model a40, 48 GB of VRAM (the plan's total)
_CLOUD_GPU_ID = re.compile(r"^[a-z0-9]+-(?P<model>[a-z][a-z0-9]*)-\d+c-\d+g-(?P<vram>\d+(?:\.\d+)?)vram$")
PRICE_FIELDS = ("hourly_cost", "hourly_cost_preemptible", "deploy_ondemand", "deploy_preemptible")

COUNT_PLACES = Decimal("0.001")  # offers.gpu_count is stored with 3 decimals
MIB_PER_GIB = 1024


def _locations(raw: dict[str, Any], where: str) -> list[str]:
    # Region codes pass through slug(): always lower-case words joined by "-" ("SJC" → "sjc").
    return [code for loc in as_list(require(raw, "locations", where), f"{where}.locations") if (code := slug(loc))]


def _cloud_gpu(gpu_type: str, vram: Decimal) -> tuple[str, Decimal, Decimal, dict[str, Any]]:
    """(raw name, gpu_count, memory per GPU as offered, extra attributes) for a `vcg` plan."""
    known = CLOUD_GPUS.get(gpu_type.upper())
    if known is None:
        # An unknown card: the name without the vendor prefix; count it as one GPU carrying all the VRAM.
        name = gpu_type.split("_", 1)[-1].replace("_", " ")
        return name, Decimal(1), vram, {}
    name, full = known
    count = vram / full
    if count != count.to_integral_value():
        count = count.quantize(COUNT_PLACES)
    per_gpu = vram if count < 1 else vram / count
    extra: dict[str, Any] = {"fractional": True, "full_gpu_memory_gb": int(full)} if count < 1 else {}
    return name, count, per_gpu, extra


def _metal_gpu(plan_id: str) -> tuple[str, Decimal, Decimal | None, dict[str, Any]] | None:
    if plan_id in BARE_METAL_GPUS:
        name, count, memory = BARE_METAL_GPUS[plan_id]
        return name, Decimal(count), memory, {}
    match = _METAL_GPU_ID.search(plan_id)
    if match is None:
        return None
    return match.group(2).upper(), Decimal(match.group(1) or 1), None, {"gpu_from": "plan_id"}


def _gpu_type_of(raw: dict[str, Any], plan_id: str) -> tuple[str | None, dict[str, Any]]:
    """A cloud plan's `gpu_type`, or one built from `gpu_brand` and the plan id when the plan has none."""
    if raw.get("gpu_type"):
        return str(raw["gpu_type"]), {}
    match = _CLOUD_GPU_ID.match(plan_id)
    brand = str(raw.get("gpu_brand") or "").strip()
    if match is None or not brand:
        return None, {}
    return f"{brand}_{match['model']}".upper(), {"gpu_from": "plan_id"}


def _vram_of(raw: dict[str, Any], plan_id: str, where: str) -> Decimal | None:
    vram = to_optional_decimal(raw.get("gpu_vram_gb"), f"{where}.gpu_vram_gb")
    if vram is None and (match := _CLOUD_GPU_ID.match(plan_id)):
        vram = Decimal(match["vram"])
    return vram


def _terms(raw: dict[str, Any], location: str, where: str) -> tuple[Decimal | None, Decimal | None]:
    """(on-demand price, preemptible price) of a plan at one location; None where it is not offered."""
    overrides = raw.get("location_cost")
    by_code = {slug(k): v for k, v in overrides.items()} if isinstance(overrides, dict) else {}
    local = by_code.get(location)
    terms = {k: raw.get(k) for k in PRICE_FIELDS} | (
        {k: v for k, v in local.items() if k in PRICE_FIELDS} if isinstance(local, dict) else {}
    )
    on_demand = to_optional_decimal(terms["hourly_cost"], f"{where}.hourly_cost")
    spot = to_optional_decimal(terms["hourly_cost_preemptible"], f"{where}.hourly_cost_preemptible")
    if terms["deploy_ondemand"] is False or not on_demand or on_demand <= 0:
        on_demand = None
    if terms["deploy_preemptible"] is False or not spot or spot <= 0:
        spot = None
    return on_demand, spot


def _why_nothing(raw: dict[str, Any], plan_id: str, where: str) -> str:
    price = to_optional_decimal(raw.get("hourly_cost"), f"{where}.hourly_cost")
    if raw.get("deploy_ondemand") is False and raw.get("deploy_preemptible") is False:
        return f"{plan_id}: not deployable (deploy_ondemand and deploy_preemptible are false)"
    if raw.get("deploy_preemptible") is True and raw.get("deploy_ondemand") is False:
        return f"{plan_id}: preemptible only, without a preemptible price"
    return f"{plan_id}: zero price" if not price or price <= 0 else f"{plan_id}: no deployable price at any location"


def _emit(
    result: ScrapeResult, raw: dict[str, Any], plan_id: str, where: str, template: ScrapedOffer, locations: list[str]
) -> None:
    """One offer per location and way of renting the plan (see the module docstring)."""
    emitted = False
    for location in locations:
        on_demand, spot = _terms(raw, location, where)
        for pricing, price, suffix in ((Pricing.on_demand, on_demand, ""), (Pricing.spot, spot, ":spot")):
            if price is None:
                continue
            emitted = True
            result.offers.append(
                replace(
                    template,
                    key=f"{plan_id}:{location}{suffix}",
                    price_per_hour=price,
                    pricing=pricing,
                    region=location,
                    attributes=dict(template.attributes),
                )
            )
    if not emitted:
        result.skipped.append(_why_nothing(raw, plan_id, where))


def parse_plans(payload: Any, result: ScrapeResult | None = None) -> ScrapeResult:
    """One page of `/v2/plans`."""
    result = result if result is not None else ScrapeResult()
    for i, raw in enumerate(as_list(require(payload, "plans", "response"), "plans")):
        with dropping(result, f"plans[{i}]"):
            where = f"plans[{i}]"
            plan_id = str(require(raw, "id", where))
            if raw.get("type") != "vcg" and not raw.get("gpu_type") and not raw.get("gpu_brand"):
                continue  # CPU plan
            require(raw, "hourly_cost", where)
            vram = _vram_of(raw, plan_id, where)
            gpu_type, gpu_from = _gpu_type_of(raw, plan_id)
            if not gpu_type or not vram or vram <= 0:
                result.skipped.append(f"{plan_id}: GPU plan without gpu_type/gpu_vram_gb")
                continue
            locations = _locations(raw, where)
            if not locations:
                result.skipped.append(f"{plan_id}: no locations")
                continue
            name, count, per_gpu, extra = _cloud_gpu(gpu_type, vram)
            ram_mb = to_optional_decimal(raw.get("ram"), f"{where}.ram")
            attributes: dict[str, Any] = {
                "raw_gpu": gpu_type,
                "gpu_vram_gb_total": int(vram) if vram == int(vram) else str(vram),
            }
            attributes |= extra | gpu_from
            if raw.get("type") not in (None, "vcg"):
                attributes["plan_type"] = raw["type"]  # e.g. "vdm": a GPU plan outside the vcg family
            if raw.get("gpu_brand"):
                attributes["gpu_brand"] = raw["gpu_brand"]
            if raw.get("monthly_cost") is not None:
                attributes["monthly_cost"] = str(raw["monthly_cost"])
            template = ScrapedOffer(
                key=plan_id,
                gpu_name=name,
                gpu_count=count,
                price_per_hour=Decimal(0),
                gpu_memory_gb=per_gpu,
                instance_type=plan_id,
                available=None,
                vcpus=to_optional_decimal(raw.get("vcpu_count"), f"{where}.vcpu_count"),
                ram_gb=gigabytes(ram_mb, MIB_PER_GIB),
                attributes=attributes,
            )
            _emit(result, raw, plan_id, where, template, locations)
    return result


def parse_metal(payload: Any, result: ScrapeResult | None = None) -> ScrapeResult:
    """One page of `/v2/plans-metal`."""
    result = result if result is not None else ScrapeResult()
    for i, raw in enumerate(as_list(require(payload, "plans_metal", "response"), "plans_metal")):
        where = f"plans_metal[{i}]"
        plan_id = str(require(raw, "id", where))
        gpu = _metal_gpu(plan_id)
        if gpu is None:
            continue  # CPU-only bare metal
        name, count, memory, extra = gpu
        require(raw, "hourly_cost", where)
        locations = _locations(raw, where)
        if not locations:
            result.skipped.append(f"{plan_id}: no locations")
            continue
        ram_mb = to_optional_decimal(raw.get("ram"), f"{where}.ram")
        attributes: dict[str, Any] = {"bare_metal": True} | extra
        if raw.get("cpu_model"):
            attributes["cpu_model"] = raw["cpu_model"]
        template = ScrapedOffer(
            key=plan_id,
            gpu_name=name,
            gpu_count=count,
            price_per_hour=Decimal(0),
            gpu_memory_gb=memory,
            instance_type=plan_id,
            available=None,
            vcpus=to_optional_decimal(raw.get("cpu_threads"), f"{where}.cpu_threads"),
            ram_gb=gigabytes(ram_mb, MIB_PER_GIB),
            attributes=attributes,
        )
        _emit(result, raw, plan_id, where, template, locations)
    return result


def next_cursor(payload: Any) -> str:
    meta = payload.get("meta") if isinstance(payload, dict) else None
    links = meta.get("links") if isinstance(meta, dict) else None
    if not isinstance(links, dict):
        return ""
    return str(links.get("next") or "")


async def _fetch_listing(
    ctx: FetchContext,
    url: str,
    params: dict[str, str],
    parse: Callable[[Any, ScrapeResult], ScrapeResult],
    result: ScrapeResult,
) -> None:
    """Every page of one listing, the cursor passed back as `cursor=`, parsed into `result`."""

    def read(payload: Any, _: int) -> str:
        parse(payload, result)
        return next_cursor(payload)

    await walk_pages(
        lambda cursor: get_json(ctx, url, params=params | ({"cursor": cursor} if cursor else {})),
        read,
        what=url,
        max_pages=MAX_PAGES,
    )


class Vultr(Provider):
    name = "vultr"
    title = "Vultr"
    kind = ProviderKind.cloud
    homepage = "https://www.vultr.com/pricing/#cloud-gpu"
    credentials = ()
    parser_version = "2"  # 2: vdm GPU plans (gpu_brand, card from the plan id); deploy_* flags; location_cost

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        await _fetch_listing(ctx, PLANS_URL, PLANS_PARAMS, parse_plans, result)
        await _fetch_listing(ctx, METAL_URL, METAL_PARAMS, parse_metal, result)
        return result

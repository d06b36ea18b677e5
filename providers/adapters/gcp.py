"""Google Cloud: GPU list prices from the Cloud Billing Catalog.

`GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?key=…&pageSize=5000` (Compute
Engine's SKUs), following `nextPageToken` → `pageToken` to the end. Auth is an API key in the `key`
query parameter (never shown in errors: the HTTP helpers drop query strings from messages).

Only GPU SKUs are used (`category.resourceGroup == "GPU"`), e.g. "Nvidia Tesla A100 GPU running in
Americas", "Nvidia H100 80GB GPU running in …", "H200 141GB GPU running in …" (no vendor word), "Nvidia L4
GPU attached to Spot Preemptible VMs …". A SKU without `category` (trimmed exports keep only `skuId`,
`description`, `pricingInfo`) is judged by its description alone: a GPU SKU names a GPU, and its pricing
type is read from the same words the category would carry (see `usage_of`).

Price semantics — read before comparing with other providers:
* a GPU SKU prices ONE GPU for one hour, and only the GPU: the host VM (vCPU, RAM, local SSD) that a
  GPU must be attached to is billed separately and is NOT included. Every offer says so in
  attributes `{"price_scope": "gpu_only"}`; gpu_count is 1;
* the price is `pricingInfo[0].pricingExpression.tieredRates[-1].unitPrice` (`units` is a string of
  whole dollars, `nanos` an int of 1e-9 dollars), in USD per `usageUnit` "h";
* `category.usageType` "Preemptible" → spot, "OnDemand" → on-demand; commitments (Commit1Yr/3Yr) and
  Reserved, Sole Tenancy, Premium, DWS and Virtual Workstation SKUs are skipped with a reason;
* "Licensing Fee for … (GPU cost)" SKUs are the per-GPU surcharge of an OS image (Ubuntu Pro, Windows…),
  not the price of a GPU: skipped with a reason, whatever their category says;
* DWS DECISION: "… attached to DWS Defined Duration VMs …" is the Dynamic Workload Scheduler flex-start
  rate: capacity is queued and time-boxed (a run length chosen per request), so it is not on-demand, and
  it is not a reservation with a fixed term either. The contract has no pricing type for it, so these
  SKUs are skipped with a reason (never emitted as on-demand, whose category they may carry). "Reserved …
  in Calendar Mode" (DWS calendar reservations, also variable-length) is skipped the same way;
* one offer per (GPU SKU × `serviceRegions` entry), key `<skuId>:<region>`. A SKU without
  `serviceRegions` gets one offer whose region is its description's location as a slug ("running in Salt
  Lake City" → "salt-lake-city", "Americas" → "americas"), marked `attributes["region_from"]`.

GPU names: the SKU names the model only, so the form factor comes from the machine family GCP attaches
it to (A100 40GB → a2-highgpu, A100 80GB → a2-ultragpu, H100 → a3-highgpu/a3-megagpu, H200 → a3-ultragpu,
B200 → a4: all HGX/SXM; V100 is SXM2 16GB; P100 is the PCIe 16GB card). H100 "Mega" (also written "Mega
80GB", and "80GB Plus": A3 Plus was A3 Mega's earlier name) is the same card on a faster network: its own
SKU and key, canonical name "H100 SXM 80GB", attributes.variant = "mega".
Unmapped GPU SKUs (e.g. K80) pass through with the model name from the description.
"""

from __future__ import annotations

import re
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
from providers.http import get_json, require, walk_pages
from providers.parsing import as_list, dropping, slug

URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
PAGE_SIZE = 5000
MAX_PAGES = 50
SKIP_WORDS = (
    "reserved",
    "commitment",
    "sole tenancy",
    "premium",
    "dws",
    "calendar mode",
    "flex start",
    "virtual workstation",
    "custom",
)
# Why a SKU that names a GPU is still not a GPU price we can use (first match wins; the text is lower case).
SKIP_REASONS: tuple[tuple[str, str], ...] = (
    ("licensing fee", "OS licence surcharge per GPU, not a GPU price"),
    ("dws defined duration", "DWS flex-start (defined-duration) rate: not on-demand and no fixed term"),
    ("calendar mode", "DWS calendar-mode reservation: no fixed term"),
    ("commitment", "committed-use rate"),
    ("reserved", "reservation rate"),
    ("sole tenancy", "sole-tenancy premium"),
    ("virtual workstation", "virtual workstation licence"),
)
_DESCRIPTION = re.compile(
    r"^(?:spot\s+)?(?:preemptible\s+)?(?:nvidia\s+)?(?:tesla\s+)?(?P<model>.+?)\s+gpu\b", re.IGNORECASE
)
_NAMES_A_GPU = re.compile(r"\bgpus?\b|\(1 gpu slice\)", re.IGNORECASE)
# "… running in Salt Lake City", "Reserved … GPU in Milan", "… in Netherlands for 1 Year"
_LOCATION = re.compile(r"\b(?:running\s+)?in\s+(?P<where>[A-Za-z][A-Za-z .-]*?)(?:\s+(?:in|for)\s+.*)?$")


class Gpu:
    __slots__ = ("accelerator", "family", "memory", "name", "variant")

    def __init__(self, name: str, memory: int, accelerator: str, family: str, variant: str | None = None) -> None:
        self.name, self.memory, self.accelerator, self.family, self.variant = (
            name,
            Decimal(memory),
            accelerator,
            family,
            variant,
        )


# Compact model text (lower case, no spaces) from the SKU description → the card.
GPUS: dict[str, Gpu] = {
    "a100": Gpu("A100 SXM 40GB", 40, "nvidia-tesla-a100", "a2-highgpu"),
    "a10040gb": Gpu("A100 SXM 40GB", 40, "nvidia-tesla-a100", "a2-highgpu"),
    "a10080gb": Gpu("A100 SXM 80GB", 80, "nvidia-a100-80gb", "a2-ultragpu"),
    "h100": Gpu("H100 SXM 80GB", 80, "nvidia-h100-80gb", "a3-highgpu"),
    "h10080gb": Gpu("H100 SXM 80GB", 80, "nvidia-h100-80gb", "a3-highgpu"),
    "h10080gbmega": Gpu("H100 SXM 80GB", 80, "nvidia-h100-mega-80gb", "a3-megagpu", "mega"),
    "h100mega80gb": Gpu("H100 SXM 80GB", 80, "nvidia-h100-mega-80gb", "a3-megagpu", "mega"),
    "h10080gbplus": Gpu("H100 SXM 80GB", 80, "nvidia-h100-mega-80gb", "a3-megagpu", "mega"),
    "h200": Gpu("H200 SXM 141GB", 141, "nvidia-h200-141gb", "a3-ultragpu"),
    "h200141gb": Gpu("H200 SXM 141GB", 141, "nvidia-h200-141gb", "a3-ultragpu"),
    "b200": Gpu("B200 SXM 180GB", 180, "nvidia-b200", "a4-highgpu"),
    "l4": Gpu("L4 24GB", 24, "nvidia-l4", "g2"),
    "t4": Gpu("T4 16GB", 16, "nvidia-tesla-t4", "n1"),
    "v100": Gpu("V100 SXM2 16GB", 16, "nvidia-tesla-v100", "n1"),
    "p100": Gpu("P100 PCIe 16GB", 16, "nvidia-tesla-p100", "n1"),
    "p4": Gpu("P4 8GB", 8, "nvidia-tesla-p4", "n1"),
    "rtx600096gb": Gpu("RTX PRO 6000 96GB", 96, "nvidia-rtx-pro-6000", "g4"),
    "rtxpro6000": Gpu("RTX PRO 6000 96GB", 96, "nvidia-rtx-pro-6000", "g4"),
}


def model_of(description: str) -> str | None:
    """'Spot Preemptible Nvidia L4 GPU running in …' → 'L4'; 'Nvidia Tesla A100 80GB GPU …' → 'A100 80GB'."""
    text = re.sub(r"\s*\(1 gpu slice\)", " GPU", description, flags=re.IGNORECASE)
    text = re.sub(r"\bGPU\s+GPU\b", "GPU", text, flags=re.IGNORECASE)
    match = _DESCRIPTION.match(text.strip())
    return match.group("model").strip() if match else None


def usage_of(description: str) -> str:
    """`category.usageType` as the description implies it, for SKUs exported without their category."""
    lowered = description.lower()
    if lowered.startswith("commitment"):
        return "Commit3Yr" if re.search(r"\b3 years?\b", lowered) else "Commit1Yr"
    if "preemptible" in lowered:
        return "Preemptible"
    return "OnDemand"


def location_of(description: str) -> str | None:
    """'Nvidia L4 GPU running in Hong Kong' → 'Hong Kong'; None when the description names no place."""
    match = _LOCATION.search(description)
    return match.group("where").strip() if match else None


def unit_price(sku: dict[str, Any], where: str) -> tuple[Decimal, str, str]:
    """(USD per usage unit, usage unit, currency) from the last tier of the first pricing info."""
    infos = require(sku, "pricingInfo", where)
    if not isinstance(infos, list) or not infos:
        raise ProviderError(f"schema changed: {where}.pricingInfo is empty or not a list")
    expression = require(infos[0], "pricingExpression", f"{where}.pricingInfo[0]")
    tiers = require(expression, "tieredRates", f"{where}.pricingExpression")
    if not isinstance(tiers, list) or not tiers:
        raise ProviderError(f"schema changed: {where}.tieredRates is empty or not a list")
    price = require(tiers[-1], "unitPrice", f"{where}.tieredRates[-1]")
    units, nanos = price.get("units", "0"), price.get("nanos", 0)
    try:
        value = Decimal(str(units or "0")) + Decimal(int(nanos or 0)) / Decimal(10**9)
    except (ArithmeticError, ValueError, TypeError):
        raise ProviderError(f"schema changed: unit price {units!r}/{nanos!r} at {where} is not a number") from None
    return value, str(expression.get("usageUnit", "")), str(price.get("currencyCode", "USD"))


def parse_page(payload: Any, result: ScrapeResult | None = None) -> ScrapeResult:
    result = result if result is not None else ScrapeResult()
    for i, sku in enumerate(as_list(require(payload, "skus", "response"), "skus")):
        with dropping(result, f"skus[{i}]"):
            where = f"skus[{i}]"
            description = str(require(sku, "description", where))
            category = sku.get("category")
            if category is not None and not isinstance(category, dict):
                raise ProviderError(f"schema changed: {where}.category is not an object")
            if category is not None:
                if category.get("resourceGroup") != "GPU":
                    continue  # CPU, RAM, disk, network…
                usage = str(category.get("usageType", ""))
            elif _NAMES_A_GPU.search(description):
                usage = usage_of(description)  # an export without categories: the description is all we have
            else:
                continue  # not a GPU SKU
            sku_id = str(require(sku, "skuId", where))
            lowered = description.lower()
            reason = next((why for word, why in SKIP_REASONS if word in lowered), None)
            if reason is not None:
                result.skipped.append(f"{sku_id}: {description} ({reason})")
                continue
            if usage not in {"OnDemand", "Preemptible"} or any(word in lowered for word in SKIP_WORDS):
                result.skipped.append(f"{sku_id}: {description} ({usage or 'no usage type'})")
                continue
            model = model_of(description)
            if model is None:
                result.skipped.append(f"{sku_id}: cannot read a GPU model from {description!r}")
                continue
            price, unit, currency = unit_price(sku, where)
            if unit != "h" or currency != "USD" or price <= 0:
                result.skipped.append(f"{sku_id}: price {price} {currency} per {unit!r}")
                continue
            gpu = GPUS.get(re.sub(r"\s+", "", model.lower()))
            attributes: dict[str, Any] = {"price_scope": "gpu_only", "sku": sku_id, "description": description}
            if gpu is not None:
                attributes |= {"accelerator_type": gpu.accelerator, "machine_family": gpu.family}
                if gpu.variant:
                    attributes["variant"] = gpu.variant
            if "serviceRegions" in sku:
                listed = as_list(sku["serviceRegions"], f"{where}.serviceRegions")
                regions = [code for r in listed if (code := slug(r))]  # slug(): always a well-formed code
            else:
                # No region list: the place the description names stands in for it (one offer, so the key holds).
                place = location_of(description)
                regions = [slug(place) if place else ""]
                attributes["region_from"] = "description"
                if place:
                    attributes["location"] = place
            pricing = Pricing.spot if usage == "Preemptible" else Pricing.on_demand
            for region in regions:
                result.offers.append(
                    ScrapedOffer(
                        key=f"{sku_id}:{region}" if region else sku_id,
                        gpu_name=gpu.name if gpu else model,
                        gpu_count=Decimal(1),
                        price_per_hour=price,
                        pricing=pricing,
                        region=region,
                        gpu_memory_gb=gpu.memory if gpu else None,
                        instance_type=gpu.accelerator if gpu else None,
                        available=None,
                        attributes=dict(attributes),
                    )
                )
    return result


class Gcp(Provider):
    name = "gcp"
    title = "Google Cloud (GPU-only list prices)"
    kind = ProviderKind.cloud
    homepage = "https://cloud.google.com/compute/gpus-pricing"
    credentials = ("GCP_API_KEY",)
    parser_version = "2"  # 2: licensing and DWS SKUs skipped with reasons; SKUs without category/regions

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        params = {"key": ctx.secret("GCP_API_KEY"), "pageSize": str(PAGE_SIZE)}
        result = ScrapeResult()

        def read(payload: Any, _: int) -> str:
            parse_page(payload, result)
            return str(payload.get("nextPageToken") or "")

        await walk_pages(
            lambda token: get_json(ctx, URL, params=params | ({"pageToken": token} if token else {})),
            read,
            what="Compute Engine SKUs",
            max_pages=MAX_PAGES,
        )
        return result

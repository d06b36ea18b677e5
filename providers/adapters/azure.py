"""Azure Retail Prices API: `GET https://prices.azure.com/api/retail/prices`.

No authentication. One `$filter` query per region in `REGIONS`, each followed through `NextPageLink` to
its end: walking all regions in one `$skip` sequence silently loses rows when Azure republishes prices
mid-walk (gpuhunt #255), so every region is its own short walk. The filter keeps pay-as-you-go Linux VM
meters of the N families:

    serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '<region>'
    and contains(armSkuName, 'Standard_N') eq true and contains(productName, 'Windows') eq false
    and contains(productName, 'Dedicated') eq false and contains(meterName, 'Low Priority') eq false

The same exclusions are applied again client-side. 429s and 5xx are retried by `providers.http`.

`REGIONS` is a fixed list of the public regions that carry NC/ND/NV GPU sizes (the authoritative list,
`resource_skus.list()`, needs an ARM login): US (eastus, eastus2, southcentralus, westus2, westus3,
northcentralus, centralus, westus), Canada (canadacentral), Europe (westeurope, northeurope,
swedencentral, uksouth, francecentral, germanywestcentral, switzerlandnorth, norwayeast), Asia-Pacific
(japaneast, koreacentral, southeastasia, australiaeast, centralindia) and uaenorth. A size in another
region is simply not tracked until the region is added here.

The price feed has no GPU fields: model, count, memory, vCPUs and RAM come from `SIZES`, keyed by
`armSkuName`. A GPU-family size missing from the table is reported in `result.skipped` (add it to the
table), never guessed. Prices (`retailPrice`, unit "1 Hour") are per VM. Spot meters (`meterName` or
`skuName` containing "Spot") become separate `spot` offers; there are no reserved offers (the feed's
Reservation prices are term totals, filtered out by `priceType eq 'Consumption'`).

Fractional sizes (NVadsA10 v5: 1/6, 1/3, 1/2 of an A10) keep a fractional `gpu_count` rounded to the 3
decimals the database stores, and `gpu_memory_gb` is the slice's memory; the raw name carries the full
card ("A10 24GB") so it resolves without the slice memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
from providers.parsing import as_list, dropping, to_decimal

ORIGIN = "https://prices.azure.com"
URL = f"{ORIGIN}/api/retail/prices"
API_VERSION = "2023-01-01-preview"
MAX_PAGES_PER_REGION = 100

REGIONS: tuple[str, ...] = (
    "eastus",
    "eastus2",
    "southcentralus",
    "westus2",
    "westus3",
    "northcentralus",
    "centralus",
    "westus",
    "canadacentral",
    "westeurope",
    "northeurope",
    "swedencentral",
    "uksouth",
    "francecentral",
    "germanywestcentral",
    "switzerlandnorth",
    "norwayeast",
    "japaneast",
    "koreacentral",
    "southeastasia",
    "australiaeast",
    "centralindia",
    "uaenorth",
)


def region_filter(region: str) -> str:
    return (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region}' "
        "and contains(armSkuName, 'Standard_N') eq true "
        "and contains(productName, 'Windows') eq false "
        "and contains(productName, 'Dedicated') eq false "
        "and contains(meterName, 'Low Priority') eq false"
    )


def region_params(region: str) -> dict[str, str]:
    return {"api-version": API_VERSION, "$filter": region_filter(region)}


@dataclass(frozen=True, slots=True)
class Size:
    gpu: str  # raw GPU name with form factor and full-card memory, e.g. "A100 PCIe 80GB"
    count: Decimal  # GPUs per VM; fractional for slices
    gpu_memory_gb: Decimal  # per GPU as offered (the slice's share for fractional sizes)
    vcpus: int
    ram_gb: Decimal


def _size(gpu: str, count: str, memory: str, vcpus: int, ram: int) -> Size:
    return Size(gpu, Decimal(count), Decimal(memory), vcpus, Decimal(ram))


# armSkuName → hardware, from Azure's VM size documentation (per-GPU memory, vCPUs, RAM in GiB).
SIZES: dict[str, Size] = {
    # NC A100 v4: A100 PCIe 80GB
    "Standard_NC24ads_A100_v4": _size("A100 PCIe 80GB", "1", "80", 24, 220),
    "Standard_NC48ads_A100_v4": _size("A100 PCIe 80GB", "2", "80", 48, 440),
    "Standard_NC96ads_A100_v4": _size("A100 PCIe 80GB", "4", "80", 96, 880),
    # NC H100 v5 and its confidential twin NCC H100 v5: H100 NVL 94GB
    "Standard_NC40ads_H100_v5": _size("H100 NVL 94GB", "1", "94", 40, 320),
    "Standard_NC80adis_H100_v5": _size("H100 NVL 94GB", "2", "94", 80, 640),
    "Standard_NCC40ads_H100_v5": _size("H100 NVL 94GB", "1", "94", 40, 320),
    # NCasT4_v3: T4 16GB
    "Standard_NC4as_T4_v3": _size("T4 16GB", "1", "16", 4, 28),
    "Standard_NC8as_T4_v3": _size("T4 16GB", "1", "16", 8, 56),
    "Standard_NC16as_T4_v3": _size("T4 16GB", "1", "16", 16, 110),
    "Standard_NC64as_T4_v3": _size("T4 16GB", "4", "16", 64, 440),
    # NCv3: V100 PCIe 16GB
    "Standard_NC6s_v3": _size("V100 PCIe 16GB", "1", "16", 6, 112),
    "Standard_NC12s_v3": _size("V100 PCIe 16GB", "2", "16", 12, 224),
    "Standard_NC24s_v3": _size("V100 PCIe 16GB", "4", "16", 24, 448),
    "Standard_NC24rs_v3": _size("V100 PCIe 16GB", "4", "16", 24, 448),
    # NDv2: 8× V100 SXM2 32GB
    "Standard_ND40rs_v2": _size("V100 SXM2 32GB", "8", "32", 40, 672),
    # ND A100 v4 (40GB) and NDm A100 v4 (80GB): 8× A100 SXM
    "Standard_ND96asr_v4": _size("A100 SXM 40GB", "8", "40", 96, 900),
    "Standard_ND96amsr_A100_v4": _size("A100 SXM 80GB", "8", "80", 96, 1900),
    # ND H100 v5, ND H200 v5, ND MI300X v5: 8 GPUs each
    "Standard_ND96isr_H100_v5": _size("H100 SXM 80GB", "8", "80", 96, 1900),
    "Standard_ND96isr_H200_v5": _size("H200 SXM 141GB", "8", "141", 96, 1850),
    "Standard_ND96isr_MI300X_v5": _size("MI300X 192GB", "8", "192", 96, 1850),
    # ND GB200 v6: 4 Blackwell GPUs per VM
    "Standard_ND128isr_NDR_GB200_v6": _size("GB200 186GB", "4", "186", 128, 900),
    # NVadsA10 v5: A10 24GB, partitioned below 36 vCPUs (count rounded to the stored 3 decimals)
    "Standard_NV6ads_A10_v5": _size("A10 24GB", "0.167", "4", 6, 55),
    "Standard_NV12ads_A10_v5": _size("A10 24GB", "0.333", "8", 12, 110),
    "Standard_NV18ads_A10_v5": _size("A10 24GB", "0.5", "12", 18, 220),
    "Standard_NV36ads_A10_v5": _size("A10 24GB", "1", "24", 36, 440),
    "Standard_NV36adms_A10_v5": _size("A10 24GB", "1", "24", 36, 880),
    "Standard_NV72ads_A10_v5": _size("A10 24GB", "2", "24", 72, 880),
    # NVv3: Tesla M60 8GB (visualisation)
    "Standard_NV12s_v3": _size("Tesla M60 8GB", "1", "8", 12, 112),
    "Standard_NV24s_v3": _size("Tesla M60 8GB", "2", "8", 24, 224),
    "Standard_NV48s_v3": _size("Tesla M60 8GB", "4", "8", 48, 448),
}

GPU_FAMILY = re.compile(r"^Standard_N[CDVG]\d")  # NC/ND/NV/NG sizes: GPUs; NP (FPGA) is not


def page_items(payload: Any, where: str) -> tuple[list[Any], str | None]:
    """(Items, NextPageLink or None) of one page."""
    items = as_list(require(payload, "Items", where), "'Items'", where)
    next_link = payload.get("NextPageLink")
    if next_link is not None and not isinstance(next_link, str):
        raise ProviderError(f"schema changed: 'NextPageLink' is not a string at {where}")
    return items, next_link or None


def parse_items(items: list[Any]) -> ScrapeResult:
    """Offers from Retail Prices items (any number of regions and pages)."""
    result = ScrapeResult()
    chosen: dict[str, tuple[str, ScrapedOffer]] = {}
    unknown_sizes: set[str] = set()
    for i, item in enumerate(items):
        with dropping(result, f"Items[{i}]"):
            where = f"Items[{i}]"
            sku = str(require(item, "armSkuName", where) or "")
            meter = str(require(item, "meterName", where) or "")
            product = str(require(item, "productName", where) or "")
            sku_name = str(item.get("skuName") or "")
            if not GPU_FAMILY.match(sku):
                continue
            if item.get("type", "Consumption") != "Consumption":
                continue
            if "Windows" in product or "Dedicated" in product or "Cloud Services" in product:
                continue
            if "Low Priority" in meter or "Low Priority" in sku_name:
                continue
            size = SIZES.get(sku)
            if size is None:
                if sku not in unknown_sizes:
                    unknown_sizes.add(sku)
                    result.skipped.append(f"{sku}: GPU size not in azure.SIZES ({meter})")
                continue
            region = str(require(item, "armRegionName", where) or "").lower()
            unit = require(item, "unitOfMeasure", where)
            currency = item.get("currencyCode", "USD")
            price = to_decimal(require(item, "retailPrice", where), f"{where}.retailPrice")
            if unit != "1 Hour" or currency != "USD":
                result.skipped.append(f"{sku} in {region}: priced per {unit!r} in {currency}")
                continue
            if price <= 0:
                result.skipped.append(f"{sku} in {region}: retailPrice {price}")
                continue
            spot = "Spot" in meter or "Spot" in sku_name
            pricing = Pricing.spot if spot else Pricing.on_demand
            key = f"{sku}:{region}:{pricing.value}"
            offer = ScrapedOffer(
                key=key,
                gpu_name=size.gpu,
                gpu_count=size.count,
                price_per_hour=price,
                pricing=pricing,
                region=region,
                gpu_memory_gb=size.gpu_memory_gb,
                instance_type=sku,
                available=None,
                vcpus=Decimal(size.vcpus),
                ram_gb=size.ram_gb,
                attributes={"meter": meter, "product": product} | ({"fractional": True} if size.count < 1 else {}),
            )
            # A meter republished with a new effective date can appear twice: keep the newest.
            effective = str(item.get("effectiveStartDate") or "")
            if key not in chosen or effective > chosen[key][0]:
                chosen[key] = (effective, offer)
    result.offers = [offer for _, offer in chosen.values()]
    return result


async def _region_items(ctx: FetchContext, region: str) -> list[Any]:
    """Every Retail Prices item of one region: its `$filter` query, then each NextPageLink to the end."""
    items: list[Any] = []

    def read(payload: Any, page: int) -> str | None:
        page_rows, next_link = page_items(payload, f"{region} page {page}")
        items.extend(page_rows)
        return next_link

    await walk_pages(
        lambda link: get_json(ctx, link) if link else get_json(ctx, URL, params=region_params(region)),
        read,
        what=f"{region} prices",
        max_pages=MAX_PAGES_PER_REGION,
        origin=ORIGIN,  # never follow a NextPageLink off Azure's price API
    )
    return items


class Azure(Provider):
    name = "azure"
    title = "Microsoft Azure"
    kind = ProviderKind.cloud
    homepage = "https://azure.microsoft.com/pricing/details/virtual-machines/linux/"
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        items: list[Any] = []
        for region in REGIONS:
            items += await _region_items(ctx, region)
        return parse_items(items)

"""IONOS Cloud GPU VMs (NVIDIA H200), from its public price calculator, in EUR, GBP and USD
.

Source: IONOS has no public price API (its cloud API needs an account), but the price calculator at
`https://cloud-price-calculator.ionos.com/` ships the whole price list, as JSON objects, in its script
bundle `/assets/index-<hash>.js`. The hash changes with every release, so each run reads the page, finds
the bundle's path in it, then reads the bundle. No credentials.

Shape (one object per product, in the bundle's text): `{"id": "GPUH200S", "name": "1h H200-S with AMD EPYC
Turin and NVIDIA H200", "pg": ..., "pu": "per hour", "priceLists": [{"name": "default", "prices": {"EUR": 3,
"GBP": 2.554, "USD": 3.261}}]}` for the sizes S, M, L, XL = 1, 2, 4, 8 GPUs (`SIZES`).

Units and rules:
* each price is **per VM-hour** (all its GPUs) in that currency (`pu` must be "per hour"); the
  "default" price list is read;
* one offer per product and currency (key `<id>:<currency>`): IONOS quotes each market in its own currency
  (as OVH's subsidiaries do), so the three are three prices, never converted into each other here;
* the GPU is the H200 with 141 GB; neither the bundle nor the page says SXM or NVL, so ingest assumes the
  slower variant and notes it on the offer;
* an object that is not JSON, has an unknown size suffix or a non-positive price is dropped with the
  reason; a page without the bundle path, or a bundle with no GPU product at all, fails the run
  (the calculator changed);
* region "" (the calculator prices every IONOS data center alike); `available` None (a price list).

Rate limit: none documented; two requests per run (page, bundle).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderError, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import request, require
from providers.items import parse_items
from providers.parsing import as_list, to_decimal

PAGE_URL = "https://cloud-price-calculator.ionos.com/"
ASSET = re.compile(r"/assets/index-[A-Za-z0-9_-]+\.js")
PRODUCT = re.compile(r'\{"id":"(GPUH200[A-Z]*)"')
SIZES = {"S": 1, "M": 2, "L": 4, "XL": 8}
PRICE_LIST = "default"
PER_HOUR = "per hour"
CURRENCY = re.compile(r"^[A-Z]{3}$")


def bundle_path(page: str) -> str:
    match = ASSET.search(page)
    if match is None:
        raise ProviderError("IONOS price calculator: no /assets/index-<hash>.js bundle in the page (page changed?)")
    return match[0]


def products_in(bundle: str) -> list[tuple[str, Any]]:
    """Every GPU product object in the bundle, decoded: (its id, the object or the text that is not JSON)."""
    decoder = json.JSONDecoder()
    found: list[tuple[str, Any]] = []
    for match in PRODUCT.finditer(bundle):
        try:
            value, _ = decoder.raw_decode(bundle, match.start())
        except ValueError:
            value = bundle[match.start() : match.start() + 80]
        found.append((match[1], value))
    return found


def _product(raw: dict[str, Any], where: str) -> list[ScrapedOffer] | str:
    product_id = str(require(raw, "id", where))
    size = product_id.removeprefix("GPUH200")
    if size not in SIZES:
        return f"{product_id}: unknown size {size!r}"
    if raw.get("pu") != PER_HOUR:
        return f"{product_id}: priced {raw.get('pu')!r}, not per hour"
    lists = [p for p in as_list(require(raw, "priceLists", where), "priceLists", where) if isinstance(p, dict)]
    chosen = next((p for p in lists if p.get("name") == PRICE_LIST), None)
    if chosen is None:
        return f"{product_id}: no {PRICE_LIST!r} price list"
    prices = require(chosen, "prices", f"{where}.priceLists[{PRICE_LIST}]")
    if not isinstance(prices, dict) or not prices:
        return f"{product_id}: no prices"
    count = Decimal(SIZES[size])
    offers: list[ScrapedOffer] = []
    for currency, amount in prices.items():
        code = str(currency).upper()
        price = to_decimal(amount, f"{where}.prices.{currency}")
        if not CURRENCY.match(code) or price <= 0:
            raise ProviderError(f"unusable price {currency!r}: {amount!r} at {where}")
        offers.append(
            ScrapedOffer(
                key=f"{product_id}:{code}",
                gpu_name="H200 141GB",
                gpu_count=count,
                price_per_hour=price,
                gpu_memory_gb=Decimal(141),
                instance_type=product_id,
                available=None,
                attributes={"product_name": raw.get("name"), "price_list": PRICE_LIST},
                currency=code,
            )
        )
    return offers


def parse(bundle: str) -> ScrapeResult:
    found = products_in(bundle)
    if not found:
        raise ProviderError("IONOS price calculator: no GPUH200 product in the bundle (catalog changed?)")
    items: list[tuple[str, Any]] = []
    result = ScrapeResult()
    for product_id, value in found:
        if isinstance(value, dict):
            items.append((product_id, value))
        else:
            result.skipped.append(f"{product_id}: not a JSON object in the bundle ({value!r})")
    return parse_items(items, _product, result)


class Ionos(Provider):
    name = "ionos"
    title = "IONOS Cloud (GPU VMs)"
    kind = ProviderKind.cloud
    homepage = "https://cloud.ionos.com/compute/cloud-gpu-vm"
    credentials = ()
    requests_per_minute = None  # none documented; two requests per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        page = await request(ctx, "GET", PAGE_URL, headers={"Accept": "text/html"})
        path = bundle_path(page.text)
        bundle = await request(ctx, "GET", PAGE_URL.rstrip("/") + path, headers={"Accept": "application/javascript"})
        return parse(bundle.text)

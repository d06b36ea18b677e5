"""Novita AI GPU instances: `GET https://api.novita.ai/gpu-instance/openapi/v1/products`.

Auth: `Authorization: Bearer <NOVITA_API_KEY>` (missing → the run is `skipped`). We ask for every product,
not only `available=true` (the filter SkyPilot's fetcher sends), so a product that runs out stays in the
history as unavailable (`availableDeploy`). One request per run; the answer is one `data` array, not paged.
No rate limit is documented (`requests_per_minute` None); a 429 is retried with backoff by `providers.http`.

UNITS: `price` and `spotPrice` are integers in **1/100000 USD per GPU-hour** (SkyPilot divides by 100000;
an H100 at 258000 is $2.58). Each product is one GPU (`cpuPerGpu` vCPUs and `memoryPerGpu` GB of RAM with
it), so an offer is 1 GPU at `price / 100000` dollars. `memoryPerGpu` is system memory, not VRAM: the card's
memory comes from its name ("RTX 4090 24GB").

Prices come as numbers or integer strings ("200"). Offers: one per (product × `regions[]` entry), or one
with no region when the list is empty (the product is then placed by Novita); a spot offer (key suffix
":spot") when `billingMethods` includes "spot" (or is absent) and `spotPrice` is positive and below the
on-demand price. `available` is False when `availableDeploy` is false or `inventoryState` is "none", True
when deployable, else None. Products with no price are dropped with a reason. `monthlyPrice` (a list whose
shape no public reader documents) is kept in attributes only when non-empty, not turned into reserved offers.

PPIO (`providers.adapters.ppio`) runs on the same backend and reuses `parse`; `canBuy: false` (PPIO) also
makes a product unavailable and `activityProduct: true` marks a campaign price `promotional`.

Docs-built: the bundled cassette follows the field names SkyPilot reads
(`skypilot-org/skypilot@0d0b00ba:sky/catalog/data_fetchers/fetch_novita.py`) and a public client's
(`billingMethods`, `inventoryState`, `spotPrice` as a string); values illustrative.
"""

from __future__ import annotations

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
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, slug, to_optional_decimal

URL = "https://api.novita.ai/gpu-instance/openapi/v1/products"
API_KEY = "NOVITA_API_KEY"
UNITS_PER_DOLLAR = Decimal(100000)  # Novita quotes in 1/100000 USD


def to_dollars(units: Decimal) -> Decimal:
    """Novita's 1/100000-USD integers as dollars: 258000 → 2.58."""
    return units / UNITS_PER_DOLLAR


def _availability(raw: dict[str, Any]) -> bool | None:
    """False when the product cannot be deployed or bought now (`availableDeploy`, `inventoryState`, and
    PPIO's `canBuy`), True when deployable, else None."""
    if raw.get("availableDeploy") is False or str(raw.get("inventoryState") or "").lower() == "none":
        return False
    if raw.get("canBuy") is False:
        return False
    return True if raw.get("availableDeploy") is True else None


def parse(payload: Any) -> ScrapeResult:
    """The `data` products as offers: a product missing a field is dropped with its reason, a body without
    a `data` list fails the run."""
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(as_list(require(payload, "data", "response"), "data")):
        # One malformed product is dropped with its reason (providers.parsing.dropping); the envelope fails.
        with dropping(result, f"data[{i}]"):
            parse_product(raw, f"data[{i}]", result, seen)
    return result


def parse_product(raw: Any, where: str, result: ScrapeResult, seen: set[str]) -> None:
    """One product's offers (one per region, plus spot), added to `result`."""
    product = str(require(raw, "id", where))
    name = str(require(raw, "name", where)).strip()
    units = to_optional_decimal(require(raw, "price", where), f"{where}.price", blank_is_none=True)
    if units is None or units <= 0:
        result.skipped.append(f"{product}: no price")
        return
    regions = [code for r in as_list(raw.get("regions") or [], f"{where}.regions") if (code := slug(r))] or [""]
    billing = raw.get("billingMethods")
    sells_spot = not isinstance(billing, list) or "spot" in billing
    spot_units = to_optional_decimal(raw.get("spotPrice"), f"{where}.spotPrice", blank_is_none=True)
    if not sells_spot:
        spot_units = None
    available = _availability(raw)
    attributes: dict[str, Any] = {"product_id": product, "price_units": str(units)}
    if raw.get("inventoryState") is not None:
        attributes["inventory_state"] = raw["inventoryState"]
    if isinstance(billing, list):
        attributes["billing_methods"] = billing
    if raw.get("monthlyPrice"):
        attributes["monthly_price"] = raw["monthlyPrice"]
    if raw.get("activityProduct") is True:
        attributes["promotional"] = True  # PPIO: a campaign price, not the list price
    for field, attr in (("minRootFS", "min_root_fs_gb"), ("maxRootFS", "max_root_fs_gb")):
        if raw.get(field) is not None:
            attributes[attr] = raw[field]
    for region in regions:
        key = f"{product}:{region}" if region else product
        if key in seen:
            result.skipped.append(f"{key}: listed twice")
            continue
        seen.add(key)
        on_demand = ScrapedOffer(
            key=key,
            gpu_name=name,
            gpu_count=Decimal(1),
            price_per_hour=to_dollars(units),
            region=region,
            gpu_memory_gb=memory_in_name(name),
            instance_type=product,
            available=available,
            vcpus=to_optional_decimal(raw.get("cpuPerGpu"), f"{where}.cpuPerGpu"),
            ram_gb=to_optional_decimal(raw.get("memoryPerGpu"), f"{where}.memoryPerGpu"),
            attributes=dict(attributes),
        )
        result.offers.append(on_demand)
        if spot_units is not None and 0 < spot_units < units:
            result.offers.append(
                ScrapedOffer(
                    key=f"{key}:spot",
                    gpu_name=name,
                    gpu_count=Decimal(1),
                    price_per_hour=to_dollars(spot_units),
                    pricing=Pricing.spot,
                    region=region,
                    gpu_memory_gb=on_demand.gpu_memory_gb,
                    instance_type=product,
                    available=on_demand.available,
                    vcpus=on_demand.vcpus,
                    ram_gb=on_demand.ram_gb,
                    attributes=attributes | {"price_units": str(spot_units)},
                )
            )


class Novita(Provider):
    name = "novita"
    title = "Novita AI"
    kind = ProviderKind.cloud
    homepage = "https://novita.ai/gpus-console"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        return parse(await get_json(ctx, URL, headers=headers))

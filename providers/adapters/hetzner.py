"""Hetzner dedicated GPU servers (GEX44, GEX131), priced in EUR.

API: `GET https://robot-ws.your-server.de/order/server/available_configurations?currency=EUR`, public (the
endpoint Hetzner's own order page uses to show stock); one JSON list of every orderable configuration.

Shape: `[{product_name: "GEX131", configuration_id: "1666-1667-1670", configuration: [{type: "server" | "cpu" |
"ram" | "ssd", name_en, size, unit, cores, threads}], availabilities: {HEL1: {quantity, price: {hourly,
monthly, setup}}}}]`. Prices are **decimal strings in EUR**, per server (all its GPUs), per location.

Units and rules:
* one offer per configuration and location (key `<configuration_id>:<location>`), in EUR;
* price: `hourly` (EUR per server-hour; Hetzner bills by the hour up to the monthly price). When only
  `monthly` is given, the hourly price is `monthly / 730` (the house month, 8,760 h / 12) and
  `attributes.price_basis` says so. The monthly price is kept in attributes either way;
* the **setup fee** (`setup`, one-off, EUR) is a cost term, never part of the hourly price:
  `attributes.cost_terms.setup_fee` (`providers.cost_terms.ONE_OFF_KEYS`);
* no component names the GPU: the model comes from the product name (`GPU_PRODUCTS`: GEX44 = 1x RTX 4000
  SFF Ada 20GB, GEX131 = 1x RTX PRO 6000 Blackwell Max-Q 96GB, per Hetzner's product pages). Every other
  product (EX44, AX102, ...) is a CPU server and is left out; a GEX we do not know is dropped with the reason;
* `available`: `quantity > 0` (kept in attributes); region: the location lower-cased ("HEL1" → "hel1");
* vCPUs are the CPU's `threads`; RAM is the `ram` component's size in GB.

Rate limit: none documented; one request per run.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderError, ProviderKind, ScrapedOffer, ScrapeResult
from providers.cost_terms import COST_TERMS, terms
from providers.http import get_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, slug, to_optional_decimal

URL = "https://robot-ws.your-server.de/order/server/available_configurations"
PARAMS = {"currency": "EUR"}
HOURS_PER_MONTH = Decimal(730)
# product → (raw GPU name, GPUs per server, GB per GPU)
GPU_PRODUCTS: dict[str, tuple[str, int, Decimal]] = {
    "GEX44": ("RTX 4000 SFF Ada", 1, Decimal(20)),
    "GEX131": ("RTX PRO 6000 Blackwell Max-Q", 1, Decimal(96)),
}


def _component(parts: list[Any], kind: str) -> dict[str, Any]:
    return next((p for p in parts if isinstance(p, dict) and p.get("type") == kind), {})


def _configuration(raw: dict[str, Any], where: str) -> list[ScrapedOffer] | str | None:
    product = str(require(raw, "product_name", where)).strip()
    if product not in GPU_PRODUCTS:
        return f"{product}: a GEX product we do not know" if product.upper().startswith("GEX") else None
    config_id = str(require(raw, "configuration_id", where))
    gpu, count, memory = GPU_PRODUCTS[product]
    parts = as_list(raw.get("configuration") or [], "configuration", where)
    cpu, ram = _component(parts, "cpu"), _component(parts, "ram")
    availabilities = require(raw, "availabilities", where)
    if not isinstance(availabilities, dict):
        raise ProviderError(f"schema changed: availabilities is not an object at {where}")
    offers: list[ScrapedOffer] = []
    for location, stock in availabilities.items():
        here = f"{where}.availabilities.{location}"
        price = require(stock, "price", here)
        monthly = to_optional_decimal(price.get("monthly"), f"{here}.price.monthly", blank_is_none=True)
        hourly = to_optional_decimal(price.get("hourly"), f"{here}.price.hourly", blank_is_none=True)
        attributes: dict[str, Any] = {"product": product, "cpu": cpu.get("name_en"), "tax_included": None}
        if hourly is None and monthly:
            hourly, attributes["price_basis"] = monthly / HOURS_PER_MONTH, "monthly/730"
        if hourly is None or hourly <= 0:
            raise ProviderError(f"no hourly or monthly price at {here}")
        if monthly:
            attributes["monthly_price"] = str(monthly)
        setup = to_optional_decimal(price.get("setup"), f"{here}.price.setup", blank_is_none=True)
        if setup:
            attributes[COST_TERMS] = terms(setup_fee=setup)
        quantity = to_optional_decimal(stock.get("quantity"), f"{here}.quantity")
        if quantity is not None:
            attributes["quantity"] = int(quantity)
        offers.append(
            ScrapedOffer(
                key=f"{config_id}:{slug(location)}",
                gpu_name=gpu,
                gpu_count=Decimal(count),
                price_per_hour=hourly,
                region=slug(location),
                gpu_memory_gb=memory,
                instance_type=product,
                available=None if quantity is None else quantity > 0,
                vcpus=to_optional_decimal(cpu.get("threads"), f"{where}.cpu.threads"),
                ram_gb=to_optional_decimal(ram.get("size"), f"{where}.ram.size"),
                attributes=attributes,
                currency="EUR",
            )
        )
    return offers


def parse(payload: Any) -> ScrapeResult:
    return parse_items(indexed(as_list(payload, "configurations"), "configurations"), _configuration, ScrapeResult())


class Hetzner(Provider):
    name = "hetzner"
    title = "Hetzner (dedicated GPU servers)"
    kind = ProviderKind.cloud
    homepage = "https://www.hetzner.com/dedicated-rootserver/matrix-gpu/"
    credentials = ()
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL, params=PARAMS))

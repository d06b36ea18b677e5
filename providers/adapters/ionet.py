"""io.net IO Cloud (a DePIN marketplace): its public hardware catalog.

API, both public and unauthenticated:
* `GET https://api.io.solutions/v1/io-cloud/vmaas/hardware`: every VM configuration with its specs and price;
* `GET https://api.io.solutions/v1/io-cloud/caas/hardware`: the same configurations with
  `available_replicas` (how many can be deployed now) and `brand_name`.

Shape: `{data: {hardware: [{id: "8H100.80S.176V__FI", deploy_id, name: "H100", num_cards, vram_per_card (GB),
interconnect: "sxm5", nvlink, vcpu, memory (GB), storage (GB), location: "FI", sold_out, supplier, price}]}}`.

Units and rules:
* `price` is **USD per hour for the whole configuration** (all `num_cards` GPUs);
* rows with no GPU (`num_cards` 0, `name` ""; CPU configurations) are left out; a GPU row with `price` 0 is
  dropped with the reason (io.net lists unpriced configurations);
* the raw name is `name` plus the interconnect when it names a form factor ("H100" + "sxm5" → "H100 SXM5");
* region: `location` (a country code) lower-cased;
* `available`: False when `sold_out`, else the caas row's `available_replicas > 0` (kept in attributes as
  `available_replicas`), else True. When the caas call fails the prices still count: its failure is noted
  in `skipped` and stock falls back to `sold_out`.

Rate limit: none documented; two requests per run. Kind: marketplace (supplier inventory, minutes-fresh).
"""

from __future__ import annotations

import re
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
from providers.fabric import fabric, gpu_link_of
from providers.http import get_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, slug, to_decimal, to_optional_decimal

VMAAS_URL = "https://api.io.solutions/v1/io-cloud/vmaas/hardware"
CAAS_URL = "https://api.io.solutions/v1/io-cloud/caas/hardware"
# A form factor, not a bridge: "nvlink" says nothing of the board (PCIe cards take NVLink bridges too).
FORM_FACTOR = re.compile(r"^(sxm\d*|pcie|nvl)$", re.IGNORECASE)


def hardware_of(payload: Any, what: str) -> list[Any]:
    return as_list(require(require(payload, "data", what), "hardware", f"{what}.data"), f"{what}.data.hardware")


def replicas_of(payload: Any) -> dict[str, Decimal]:
    """caas `id` → `available_replicas`; rows without a usable count are left out (stock then unknown)."""
    found: dict[str, Decimal] = {}
    for raw in hardware_of(payload, "caas"):
        if isinstance(raw, dict) and raw.get("id") is not None:
            count = raw.get("available_replicas")
            if isinstance(count, int | float) and not isinstance(count, bool) and count >= 0:
                found[str(raw["id"])] = Decimal(str(count))
    return found


def raw_gpu_name(name: str, interconnect: Any) -> str:
    """'H100', 'sxm5' → 'H100 SXM5'; 'L40S', None → 'L40S'."""
    link = str(interconnect or "").strip()
    if FORM_FACTOR.match(link) and link.lower() not in name.lower():
        return f"{name} {link.upper()}"
    return name


def _config(raw: dict[str, Any], where: str, replicas: dict[str, Decimal]) -> ScrapedOffer | str | None:
    config_id = str(require(raw, "id", where))
    name = str(raw.get("name") or "").strip()
    cards = to_optional_decimal(raw.get("num_cards"), f"{where}.num_cards") or Decimal(0)
    if not name or cards <= 0:
        return None  # a CPU configuration
    price = to_decimal(require(raw, "price", where), f"{where}.price")
    if price <= 0:
        return f"{config_id}: price {raw.get('price')!r}"
    location = slug(raw.get("location"))
    sold_out = raw.get("sold_out") is True
    attributes: dict[str, Any] = {"raw_gpu": name}
    for field_name in ("deploy_id", "interconnect", "nvlink", "supplier", "storage"):
        if raw.get(field_name) is not None:
            attributes[field_name] = raw[field_name]
    link = gpu_link_of(raw.get("interconnect"), gpus=cards)
    attributes |= fabric(
        gpu_link="nvlink" if raw.get("nvlink") is True and link in (None, "pcie") else link, gpus_per_node=cards
    )
    available: bool | None = not sold_out
    if config_id in replicas:
        attributes["available_replicas"] = int(replicas[config_id])
        available = not sold_out and replicas[config_id] > 0
    return ScrapedOffer(
        key=config_id,
        gpu_name=raw_gpu_name(name, raw.get("interconnect")),
        gpu_count=cards,
        price_per_hour=price,
        region=location,
        gpu_memory_gb=to_optional_decimal(raw.get("vram_per_card"), f"{where}.vram_per_card") or None,
        instance_type=str(raw.get("deploy_id") or config_id),
        available=available,
        vcpus=to_optional_decimal(raw.get("vcpu"), f"{where}.vcpu"),
        ram_gb=to_optional_decimal(raw.get("memory"), f"{where}.memory"),
        attributes=attributes,
    )


def parse(vmaas: Any, replicas: dict[str, Decimal] | None = None) -> ScrapeResult:
    stock = replicas or {}
    return parse_items(
        indexed(hardware_of(vmaas, "vmaas"), "hardware"), lambda raw, where: _config(raw, where, stock), ScrapeResult()
    )


class IoNet(Provider):
    name = "ionet"
    title = "io.net"
    kind = ProviderKind.marketplace
    homepage = "https://io.net/pricing"
    credentials = ()
    requests_per_minute = None  # none documented; two requests per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        vmaas = await get_json(ctx, VMAAS_URL)
        note: str | None = None
        try:
            replicas: dict[str, Decimal] | None = replicas_of(await get_json(ctx, CAAS_URL))
        except ProviderError as exc:
            replicas, note = None, f"caas: stock from sold_out only ({exc})"
        result = parse(vmaas, replicas)
        if note:
            result.skipped.append(note)
        return result

"""Compute with Hivenet: GPU presets on its distributed cloud.

API: `GET https://api.hivecompute.ai/presets/pricing`, public and unauthenticated; one JSON list.

Shape: `[{id, name: "1x-RTX-5090", cpu, memory (GB), gpu: [{model}] (one entry per GPU), disk (GB),
hourly_price, hourly_price_discounted, bandwidth (Mbit/s), location}]`.

Units and rules:
* `hourly_price` is **EUR per node-hour** (the whole preset, all its GPUs), kept in EUR: ingest converts
  at the day's rate and keeps the native amount;
* presets at €0 are demo/test nodes, not a price: dropped with the reason; CPU presets (`gpu` empty) are
  left out;
* the GPU count is the length of `gpu`, whose entries must all name one model;
* `hourly_price_discounted` (0 when there is no discount) is kept in attributes, not used as the price:
  Hivenet does not say who gets it;
* region: `location` ("france-2"); `available` is None (a preset is a price, not stock).

Rate limit: none documented; one request per run. Kind: cloud (fixed presets).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, slug, to_decimal, to_optional_decimal

URL = "https://api.hivecompute.ai/presets/pricing"
CURRENCY = "EUR"


def _preset(raw: dict[str, Any], where: str) -> ScrapedOffer | str | None:
    preset_id = str(require(raw, "id", where))
    gpus = as_list(require(raw, "gpu", where), "gpu", where)
    if not gpus:
        return None  # a CPU preset
    models = {str(g.get("model") or "").strip() if isinstance(g, dict) else "" for g in gpus}
    if len(models) != 1 or "" in models:
        return f"{preset_id}: GPU models {sorted(models)!r}, not one named model"
    price = to_decimal(require(raw, "hourly_price", where), f"{where}.hourly_price")
    if price <= 0:
        return f"{preset_id}: €{raw.get('hourly_price')} per hour (a demo preset)"
    model = models.pop()
    attributes: dict[str, Any] = {"preset": raw.get("name"), "price_scope": "node"}
    discounted = to_optional_decimal(raw.get("hourly_price_discounted"), f"{where}.hourly_price_discounted")
    if discounted:
        attributes["hourly_price_discounted"] = str(discounted)
    for field_name, attr in (("disk", "disk_gb"), ("bandwidth", "bandwidth_mbps")):
        if raw.get(field_name) is not None:
            attributes[attr] = raw[field_name]
    return ScrapedOffer(
        key=preset_id,
        gpu_name=model,
        gpu_count=Decimal(len(gpus)),
        price_per_hour=price,
        region=slug(raw.get("location")),
        instance_type=str(raw.get("name") or preset_id),
        available=None,
        vcpus=to_optional_decimal(raw.get("cpu"), f"{where}.cpu"),
        ram_gb=to_optional_decimal(raw.get("memory"), f"{where}.memory"),
        attributes=attributes,
        currency=CURRENCY,
    )


def parse(payload: Any) -> ScrapeResult:
    return parse_items(indexed(as_list(payload, "presets"), "presets"), _preset, ScrapeResult())


class Hivenet(Provider):
    name = "hivenet"
    title = "Compute with Hivenet"
    kind = ProviderKind.cloud
    homepage = "https://compute.hivenet.com/pricing"
    credentials = ()
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL))

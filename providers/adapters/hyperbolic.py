"""Hyperbolic's GPU marketplace: `POST https://api.hyperbolic.xyz/v1/marketplace` with `{"filters": {}}`
.

Auth: optional. Several public clients call it with no key; Coinbase's AgentKit sends
`Authorization: Bearer <key>`, so a configured `HYPERBOLIC_API_KEY` is sent and none is required.

Shape: `{instances: [{id, status: "node_ready", hardware: {gpus: [{model: "NVIDIA-H100-80GB-HBM3", ram (MiB),
interface}], cpus: [...], ram: [...], storage: [...]}, gpus_total, gpus_reserved, reserved,
pricing: {price: {amount, period: "hourly", agent}}, location: {region}, cluster_name, supplier_id}]}`.

Units and rules:
* `pricing.price.amount` is **US cents per GPU-hour** (250 → $2.50/GPU-h); only `period` "hourly" is read;
* one offer per node for the GPUs free on it now, `gpus_total − gpus_reserved` (Lium's reading of a
  partly rented host): price = per-GPU price × that count. A node with none free, one marked `reserved`,
  or one whose `status` is not "node_ready" is dropped with the reason;
* the raw name is the first GPU's `model`, with its `interface` when that is a form factor the model
  does not state ("SXM5", "PCIe"); a node whose GPUs are not all one model is dropped. Per-GPU
  memory is its `ram` in MiB (÷ 1024);
* region: `location.region` slugged; `cluster_name` (a nickname such as "angelic-mushroom-dolphin") and
  `supplier_id` go to attributes. Every kept node is rentable now: `available=True`.

Rate limit: none documented; one request per run. Kind: marketplace.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import post_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, cents_to_dollars, gigabytes, slug, to_decimal, to_optional_decimal

URL = "https://api.hyperbolic.xyz/v1/marketplace"
BODY: dict[str, Any] = {"filters": {}}
API_KEY = "HYPERBOLIC_API_KEY"
READY = "node_ready"
MIB_PER_GB = 1024
FORM_FACTOR = re.compile(r"^(sxm\d*|pcie)$", re.IGNORECASE)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def raw_gpu_name(model: str, interface: Any) -> str:
    """The model with the GPU's `interface` when that names a form factor the model does not:
    'NVIDIA-H200-141GB-HBM3E' + 'SXM5' → 'NVIDIA-H200-141GB-HBM3E SXM5' (which settles SXM against NVL);
    'NVIDIA-A100-SXM4-80GB' + 'SXM4' → unchanged; an NVLink bridge is no form factor and is left out."""
    link = str(interface or "").strip()
    if FORM_FACTOR.match(link) and link.lower() not in model.lower():
        return f"{model} {link}"
    return model


def _node(raw: dict[str, Any], where: str) -> ScrapedOffer | str:
    node_id = str(require(raw, "id", where))
    status = raw.get("status")
    if status is not None and status != READY:
        return f"{node_id}: status {status!r}"
    if raw.get("reserved") is True:
        return f"{node_id}: reserved"
    hardware = _object(require(raw, "hardware", where))
    gpus = [g for g in as_list(hardware.get("gpus") or [], "hardware.gpus", where) if isinstance(g, dict)]
    models = {str(g.get("model") or "").strip() for g in gpus}
    if len(models) != 1 or "" in models:
        return f"{node_id}: GPU models {sorted(models)!r}, not one named model"
    total = to_decimal(require(raw, "gpus_total", where), f"{where}.gpus_total")
    reserved = to_optional_decimal(raw.get("gpus_reserved"), f"{where}.gpus_reserved") or Decimal(0)
    free = total - reserved
    if free <= 0:
        return f"{node_id}: no GPU free ({reserved} of {total} reserved)"
    price = _object(_object(require(raw, "pricing", where)).get("price"))
    period = price.get("period", "hourly")
    if period != "hourly":
        return f"{node_id}: priced per {period!r}"
    cents = to_decimal(require(price, "amount", f"{where}.pricing.price"), f"{where}.pricing.price.amount")
    if cents <= 0:
        return f"{node_id}: price {price.get('amount')!r} cents per GPU-hour"
    per_gpu = cents_to_dollars(cents)
    attributes: dict[str, Any] = {"node_gpu_count": int(total), "usd_per_gpu_hour": str(per_gpu)}
    for field_name in ("cluster_name", "supplier_id"):
        if raw.get(field_name):
            attributes[field_name] = str(raw[field_name])
    if free < total:
        attributes["partly_rented"] = True
    first = gpus[0]
    if first.get("interface"):
        attributes["interface"] = str(first["interface"])
    model = models.pop()
    return ScrapedOffer(
        key=node_id,
        gpu_name=raw_gpu_name(model, first.get("interface")),
        gpu_count=free,
        price_per_hour=per_gpu * free,
        region=slug(_object(raw.get("location")).get("region")),
        gpu_memory_gb=gigabytes(to_optional_decimal(first.get("ram"), f"{where}.hardware.gpus[0].ram"), MIB_PER_GB),
        instance_type=f"{int(total)}x {model}",
        available=True,
        attributes=attributes,
    )


def parse(payload: Any) -> ScrapeResult:
    instances = as_list(require(payload, "instances", "response"), "instances")
    return parse_items(indexed(instances, "instances"), _node, ScrapeResult())


class Hyperbolic(Provider):
    name = "hyperbolic"
    title = "Hyperbolic"
    kind = ProviderKind.marketplace
    homepage = "https://app.hyperbolic.xyz/compute"
    credentials = ()
    optional_credentials = (API_KEY,)
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.credentials.get(API_KEY)
        headers = {"Authorization": f"Bearer {key}"} if key else None
        return parse(await post_json(ctx, URL, json=BODY, headers=headers))

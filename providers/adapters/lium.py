"""Lium (Bittensor subnet 51): a marketplace of GPU nodes run by independent providers.

API: `GET https://lium.io/api/public/v1/nodes`, public and unauthenticated: the whole rentable inventory in one
JSON document (docs.lium.io/developers/public-nodes-feed: fields are only ever added under /public/v1,
breaking changes ship as /v2). No credentials, no pagination (the feed carries `count` and every node).

Shape: `{generated_at, count, nodes: [{id, gpu_model, gpu_count, available_gpu_count, min_rentable_gpu_count,
price_per_gpu_hour, price_per_node_hour, gpu_memory_gb, cpu_count, ram_gb, disk_gb, tier, country_code,
region, city, rent_url}]}`. Only `id` and `rent_url` are promised non-null.

One offer per node, for the GPUs that can be rented on it now:
* the count is `available_gpu_count` (at most `gpu_count`); a node with fewer free GPUs than its
  `min_rentable_gpu_count` cannot be rented and is dropped with the reason, as is one with none free;
* the price is `price_per_gpu_hour` (USD) × that count; without it, `price_per_node_hour / gpu_count`;
* a partly rented node gets the host's CPUs and RAM in proportion to its free GPUs (gpuhunt's reading);
* `tier` "spot" (the provider may take the node back) → `pricing=spot`; "secure" → on demand. SkyPilot
  leaves spot and partly rented nodes out because it launches on-demand whole nodes; a price tracker keeps
  both, labelled;
* region: `country_code` and `region` ("US", "MS" → "us-ms"); a node with no country is dropped;
* `gpu_model` is the device name ("H200", "A100-SXM4-80GB", "RTX PRO 6000 Blackwell Server Edition"),
  passed on as the raw name with `gpu_memory_gb` (which the catalog snaps: H200 reports 140 GB).
Every listed node is rentable now: `available=True`.

Rate limit: none documented; one request per run. Kind: marketplace (live inventory).

Real-shape-verified (not docs-built): the cassette's first four nodes are gpuhunt's recorded feed
(`dstackai/gpuhunt@168f678a:src/tests/providers/test_lium.py`, "recorded from https://lium.io/api/public/v1/
nodes on 2026-09-10"); the rest are illustrative rows of the same shape for the cases above.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR
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
from providers.parsing import as_list, dropping, slug, tidy_decimal, to_optional_decimal

URL = "https://lium.io/api/public/v1/nodes"
SPOT_TIER = "spot"


def location_of(country: Any, region: Any) -> str:
    """'US', 'CA' → 'us-ca'; 'DE', None → 'de'; no country → ''."""
    return slug(country, region) if country else ""


def _node(raw: Any, where: str) -> ScrapedOffer | str:
    node_id = str(require(raw, "id", where))
    model = str(raw.get("gpu_model") or "").strip()
    total = to_optional_decimal(raw.get("gpu_count"), f"{where}.gpu_count")
    free = to_optional_decimal(raw.get("available_gpu_count"), f"{where}.available_gpu_count")
    if not model or not total or total <= 0:
        return f"{node_id}: no GPU model or count"
    if free is None or free <= 0:
        return f"{node_id}: no GPU free"
    free = min(free, total)
    smallest = to_optional_decimal(raw.get("min_rentable_gpu_count"), f"{where}.min_rentable_gpu_count") or 1
    if free < smallest:
        return f"{node_id}: {free} GPU(s) free, the smallest rental is {smallest}"
    per_gpu = to_optional_decimal(raw.get("price_per_gpu_hour"), f"{where}.price_per_gpu_hour")
    if per_gpu is None:
        per_node = to_optional_decimal(raw.get("price_per_node_hour"), f"{where}.price_per_node_hour")
        per_gpu = per_node / total if per_node is not None else None
    if per_gpu is None or per_gpu <= 0:
        return f"{node_id}: price {raw.get('price_per_gpu_hour')!r} per GPU-hour"
    region = location_of(raw.get("country_code"), raw.get("region"))
    if not region:
        return f"{node_id}: no country_code"
    share = free / total
    cpus = to_optional_decimal(raw.get("cpu_count"), f"{where}.cpu_count")
    ram = to_optional_decimal(raw.get("ram_gb"), f"{where}.ram_gb")
    disk = to_optional_decimal(raw.get("disk_gb"), f"{where}.disk_gb")
    attributes: dict[str, Any] = {"raw_gpu": model, "tier": raw.get("tier"), "node_gpu_count": int(total)}
    if smallest > 1:
        attributes["min_rentable_gpu_count"] = int(smallest)
    if free < total:
        attributes["partly_rented"] = True
    if disk is not None:
        attributes["disk_gb"] = str(tidy_decimal(disk * share))
    for name in ("rent_url", "city"):
        if raw.get(name):
            attributes[name] = str(raw[name])
    return ScrapedOffer(
        key=node_id,
        gpu_name=model,
        gpu_count=free,
        price_per_hour=per_gpu * free,
        pricing=Pricing.spot if raw.get("tier") == SPOT_TIER else Pricing.on_demand,
        region=region,
        gpu_memory_gb=to_optional_decimal(raw.get("gpu_memory_gb"), f"{where}.gpu_memory_gb"),
        instance_type=f"{int(total)}x {model}",
        available=True,
        vcpus=(cpus * share).to_integral_value(rounding=ROUND_FLOOR) if cpus is not None else None,
        ram_gb=tidy_decimal(ram * share) if ram is not None else None,
        attributes=attributes,
    )


def parse(payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    for i, raw in enumerate(as_list(require(payload, "nodes", "response"), "nodes")):
        with dropping(result, f"nodes[{i}]"):
            if not isinstance(raw, dict):
                result.skipped.append(f"nodes[{i}]: not an object")
                continue
            offer = _node(raw, f"nodes[{i}]")
            if isinstance(offer, str):
                result.skipped.append(offer)
            else:
                result.offers.append(offer)
    return result


class Lium(Provider):
    name = "lium"
    title = "Lium"
    kind = ProviderKind.marketplace
    homepage = "https://lium.io"
    credentials = ()
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL, headers={"Accept": "application/json"}))

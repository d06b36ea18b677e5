"""Spheron (aggregator): `GET https://app.spheron.ai/api/gpu-offers?page=<n>&limit=100`.

Auth: `Authorization: Bearer <SPHERON_API_KEY>` (missing → `skipped`). Paginated: `page` from 1 with
`limit=PAGE_SIZE`; the answer carries `totalPages`, and we stop at it (or at an empty page), as SkyPilot's
fetcher does (`skypilot-org/skypilot@0e99adb0:sky/catalog/data_fetchers/fetch_spheron.py`). No rate limit is
documented (`requests_per_minute` None); pages are fetched one after another and a 429 is retried with
backoff by `providers.http`.

Shape: `data[]` groups offers by `gpuType` ("H100_SXM5", "A100_80G_PCIE", "L40S_PCIE_BAREMETAL"); each
`offers[]` entry is one upstream machine: `{offerId, provider, gpuCount, gpu_memory (GB per GPU), vcpus,
memory (GB), price, spot_price, instanceType ("DEDICATED" | "SPOT"), available, maintenance, clusters[]
(regions), region}`.
* `price` is USD per hour for the whole offer (all `gpuCount` GPUs), the way SkyPilot reads it (its
  published catalog bears this out: one seller's 1×, 2×, 4× and 8× H100 rows scale linearly);
* a `SPOT` offer is interruptible at `price`; a dedicated one is on demand at `price`, plus a spot offer
  (key suffix ":spot") at `spot_price` when that is positive and below `price`;
* one offer per region in `clusters` (falling back to `region`); an offer with neither, or no positive
  price, is dropped with a reason;
* `available` false or `maintenance` true → the offer is kept for its history, `available` False.

Aggregator: `provider` names the cloud whose machine it is; it goes to `upstream` (and the key) as
`providers.parsing.upstream_provider` spells it ("data-crunch" → "verda", "massed-compute" →
"massedcompute"), so the market can count a machine once however many resellers list it, and the same
card resold from two clouds stays two offers. The raw name is kept in attributes.upstream_raw.
Spheron's own fleet ("spheron-ai") is no resale: no upstream.
GPU names: `gpuType` with underscores as spaces, plus the memory when the type has none ("H100_SXM5" + 80
→ "H100 SXM5 80GB"), the "_BAREMETAL" marker moved to attributes; the original is kept in attributes. A
name that fits no card stays unknown (Spheron's "H100_NVL" rows report 80 GB, which is no H100 NVL).

Docs-built: the bundled cassette uses the field names SkyPilot reads, with offer ids, GPU types, upstream
names, regions and prices taken from SkyPilot's published Spheron catalog (a real capture turned into CSV).
"""

from __future__ import annotations

import re
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
from providers.parsing import as_list, dropping, memory_in_name, slug, to_optional_decimal, upstream_provider

URL = "https://app.spheron.ai/api/gpu-offers"
API_KEY = "SPHERON_API_KEY"
PAGE_SIZE = 100
MAX_PAGES = 100


# Spheron's own fleet, as its offers name their provider: not a resale.
OWN_FLEET = frozenset({"spheron", "spheronai"})
_BARE_METAL = re.compile(r"[ _-]?bare[ _-]?metal\b", re.IGNORECASE)


def raw_gpu_name(gpu_type: str, memory: Decimal | None) -> str:
    """'H100_SXM5' + 80 → 'H100 SXM5 80GB'; 'A100_80G_PCIE' + 80 → 'A100 80G PCIE'; the bare-metal marker
    ('H100_PCIE_BAREMETAL') is not part of the card's name (it is kept in attributes)."""
    name = _BARE_METAL.sub("", gpu_type).replace("-", " ").replace("_", " ").strip()
    if memory and memory_in_name(name) is None and memory == int(memory):
        name = f"{name} {int(memory)}GB"
    return name


def _regions(offer: dict[str, Any], where: str) -> list[str]:
    clusters = offer.get("clusters")
    listed = as_list(clusters, f"{where}.clusters") if clusters is not None else [offer.get("region")]
    return list(dict.fromkeys(code for r in listed if (code := slug(r))))


def parse_page(payload: Any, result: ScrapeResult, seen: set[str]) -> int:
    """Offers from one page into `result`; returns how many GPU groups the page held."""
    groups = as_list(require(payload, "data", "response"), "data")
    for i, group in enumerate(groups):
        with dropping(result, f"groups[{i}]"):
            gwhere = f"data[{i}]"
            gpu_type = str(require(group, "gpuType", gwhere))
            for j, offer in enumerate(as_list(require(group, "offers", gwhere), f"{gwhere}.offers")):
                with dropping(result, f"groups[{i}].offers[{j}]"):
                    where = f"{gwhere}.offers[{j}]"
                    offer_id = str(require(offer, "offerId", where))
                    upstream = upstream_provider(offer.get("provider"))
                    if upstream in OWN_FLEET:
                        upstream = None  # Spheron's own machines
                    count = to_optional_decimal(require(offer, "gpuCount", where), f"{where}.gpuCount")
                    price = to_optional_decimal(require(offer, "price", where), f"{where}.price", blank_is_none=True)
                    stem = f"{upstream or 'spheron'}:{offer_id}"
                    if not count or count <= 0:
                        continue  # CPU-only
                    if price is None or price <= 0:
                        result.skipped.append(f"{stem}: no price")
                        continue
                    regions = _regions(offer, where)
                    if not regions:
                        result.skipped.append(f"{stem}: no regions listed")
                        continue
                    kind = str(offer.get("instanceType") or "DEDICATED").strip().upper()
                    spot_price = to_optional_decimal(offer.get("spot_price"), f"{where}.spot_price", blank_is_none=True)
                    memory = to_optional_decimal(offer.get("gpu_memory"), f"{where}.gpu_memory") or None
                    usable = offer.get("available") is not False and offer.get("maintenance") is not True
                    attributes: dict[str, Any] = {"offer_id": offer_id, "raw_gpu": gpu_type, "instance_kind": kind}
                    if offer.get("provider"):
                        attributes["upstream_raw"] = offer["provider"]
                    if _BARE_METAL.search(gpu_type):
                        attributes["bare_metal"] = True
                    if offer.get("maintenance") is True:
                        attributes["maintenance"] = True
                    terms = [(Pricing.spot if kind == "SPOT" else Pricing.on_demand, price)]
                    if kind != "SPOT" and spot_price is not None and 0 < spot_price < price:
                        terms.append((Pricing.spot, spot_price))
                    for region in regions:
                        for pricing, amount in terms:
                            key = f"{stem}:{region}" + (":spot" if pricing is Pricing.spot else "")
                            if key in seen:
                                result.skipped.append(f"{key}: listed twice")
                                continue
                            seen.add(key)
                            result.offers.append(
                                ScrapedOffer(
                                    key=key,
                                    gpu_name=raw_gpu_name(gpu_type, memory),
                                    gpu_count=count,
                                    price_per_hour=amount,
                                    pricing=pricing,
                                    region=region,
                                    gpu_memory_gb=memory,
                                    instance_type=offer_id,
                                    available=usable,
                                    vcpus=to_optional_decimal(offer.get("vcpus"), f"{where}.vcpus"),
                                    ram_gb=to_optional_decimal(offer.get("memory"), f"{where}.memory"),
                                    attributes=dict(attributes),
                                    upstream=upstream,
                                )
                            )
    return len(groups)


def next_page(payload: Any, page: int) -> str:
    total = to_optional_decimal(payload.get("totalPages"), "totalPages") if isinstance(payload, dict) else None
    return str(page + 1) if total is not None and page < total else ""


class Spheron(Provider):
    name = "spheron"
    title = "Spheron (aggregator)"
    kind = ProviderKind.marketplace
    homepage = "https://www.spheron.network/pricing"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        result = ScrapeResult()
        seen: set[str] = set()

        def read(payload: Any, page: int) -> str:
            return next_page(payload, page) if parse_page(payload, result, seen) else ""

        await walk_pages(
            lambda page: get_json(ctx, URL, params={"page": page or "1", "limit": PAGE_SIZE}, headers=headers),
            read,
            what=URL,
            max_pages=MAX_PAGES,
        )
        return result

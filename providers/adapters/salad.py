"""SaladCloud GPU classes: `GET https://api.salad.com/api/public/organizations/{organization}/gpu-classes`
.

Auth: header `Salad-Api-Key: <SALAD_API_KEY>` (missing → the run is `skipped`). The path names an
organization, an auth scope only (the GPU classes and their prices are Salad's, the same for every
organization): set `SALAD_ORGANIZATION` to the one to use. Without it the adapter asks
`GET /api/public/organizations` (a path a public client calls with the same key) for the organizations the
key belongs to and uses the first; THAT LISTING'S SHAPE IS UNVERIFIED (`{items: [{name, ...}]}`, the list
shape of Salad's other endpoints), and a key in no organization is an error, not an empty result.
Each listing is one `{items: [...]}` answer with no pagination. No rate limit is documented
(`requests_per_minute` None); a 429 is retried with backoff by `providers.http`.

Each item is a GPU class: `{id, name ("RTX 4090 (24 GB)"), is_high_demand, prices: [{priority, price}]}`
with one USD-per-GPU-hour price (a decimal string) for each priority tier: `high`, `medium`, `low`, `batch`.
The price is the GPU alone: vCPUs and memory are billed on top by container size, so offers are priced for
the GPU only (`attributes.gpu_only`).

Pricing type: every Salad node is a shared consumer machine that may be interrupted at any tier; the tier
only orders who is interrupted first. All offers are therefore `spot`, one per (class × tier), key suffix
":<tier>", with the tier in attributes. The network is global: `region` is empty. `is_high_demand` is kept
in attributes; the API gives no capacity, so `available` is None. A tier without a positive price, and a
class with no price at all, are dropped with a reason.

Docs-built: the bundled cassette follows field names seen in public clients of this endpoint (the
`items[].prices[].{priority, price}` shape and "<model> (<vram> GB)" names); values illustrative.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import quote

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, to_optional_decimal

BASE = "https://api.salad.com/api/public/organizations"
ORGANIZATIONS_URL = BASE
API_KEY = "SALAD_API_KEY"
ORGANIZATION = "SALAD_ORGANIZATION"
TIERS = ("high", "medium", "low", "batch")


def url_for(organization: str) -> str:
    return f"{BASE}/{quote(organization, safe='')}/gpu-classes"


def organization_of(payload: Any) -> str:
    """The first organization the key belongs to, from `GET /api/public/organizations`."""
    items = as_list(require(payload, "items", "organizations"), "items", "organizations")
    names = [str(require(o, "name", f"organizations.items[{i}]")) for i, o in enumerate(items)]
    if not names:
        raise ProviderError("the Salad API key belongs to no organization: set TRACKER_SALAD_ORGANIZATION")
    return names[0]


def parse(payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(as_list(require(payload, "items", "response"), "items")):
        with dropping(result, f"items[{i}]"):
            where = f"items[{i}]"
            class_id = str(require(raw, "id", where))
            name = str(require(raw, "name", where)).strip()
            prices = as_list(require(raw, "prices", where), f"{where}.prices")
            for j, tier_price in enumerate(prices):
                pwhere = f"{where}.prices[{j}]"
                tier = str(require(tier_price, "priority", pwhere)).strip().lower()
                price = to_optional_decimal(require(tier_price, "price", pwhere), f"{pwhere}.price", blank_is_none=True)
                key = f"{class_id}:{tier}"
                if tier not in TIERS:
                    result.skipped.append(f"{name}: unknown priority {tier!r}")
                    continue
                if price is None or price <= 0:
                    result.skipped.append(f"{name}:{tier}: no price")
                    continue
                if key in seen:
                    result.skipped.append(f"{name}:{tier}: listed twice")
                    continue
                seen.add(key)
                attributes: dict[str, Any] = {"class_id": class_id, "priority": tier, "gpu_only": True}
                if isinstance(raw.get("is_high_demand"), bool):
                    attributes["high_demand"] = raw["is_high_demand"]
                if raw.get("gpu_class_type"):
                    attributes["gpu_class_type"] = raw["gpu_class_type"]
                result.offers.append(
                    ScrapedOffer(
                        key=key,
                        gpu_name=name,
                        gpu_count=Decimal(1),
                        price_per_hour=price,
                        pricing=Pricing.spot,
                        gpu_memory_gb=memory_in_name(name.replace("(", " ").replace(")", " ")),
                        instance_type=name,
                        available=None,
                        attributes=attributes,
                    )
                )
            if not prices:
                result.skipped.append(f"{name}: no prices listed")
    return result


class Salad(Provider):
    name = "salad"
    title = "SaladCloud"
    kind = ProviderKind.marketplace
    homepage = "https://salad.com/pricing"
    credentials = (API_KEY,)
    optional_credentials = (ORGANIZATION,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"Salad-Api-Key": ctx.secret(API_KEY)}
        organization = ctx.credentials.get(ORGANIZATION) or organization_of(
            await get_json(ctx, ORGANIZATIONS_URL, headers=headers)
        )
        return parse(await get_json(ctx, url_for(organization), headers=headers))

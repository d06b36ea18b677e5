"""Akamai Cloud (Linode) GPU plans: `GET https://api.linode.com/v4/linode/types`.

Auth: none (the plan list is public). Paginated: `{data, page, pages, results}`, pages of up to 500 with
`page_size=500`; we walk `page=1..pages` (at most `MAX_PAGES`).

Shape: `data[{id, label, class, gpus, vcpus, memory (MB), disk (MB), transfer (GB), price{hourly, monthly},
region_prices[{id, hourly, monthly}], successor}]`.

Units and rules:
* `price.hourly` is **USD per instance-hour** for all `gpus` GPUs; `price.monthly` is the monthly cap
  (Linode bills by the hour up to it), kept in attributes as `monthly_cap`;
* `region_prices[]` are the same plan priced differently in some regions (Jakarta, São Paulo): each is
  its own offer (key `<type>:<region>`) at its own price; the base price is the plan's everywhere else
  (region "", key `<type>`);
* only `class == "gpu"` plans with `gpus > 0` are GPU offers; `class "accelerated"` is NETINT video
  VPUs (`gpus: 0`) and is left out, as is every CPU plan;
* there is no GPU model field: the model is read from the plan id (`g1-gpu-rtx6000-2` → Quadro RTX 6000,
  `g2-gpu-rtx4000a4-m` → RTX 4000 Ada, `g3-gpu-rtxpro6000-blackwell-1` → RTX PRO 6000 Blackwell). A GPU
  plan whose id names no model we know is dropped with the reason, never guessed;
* `memory` and `disk` are MB (÷1024 for GB); `available` is None (the type list says nothing of stock).

Rate limit: Linode documents 200 requests/min for most GETs; one or two requests per run.
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
from providers.http import get_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, gigabytes, slug, tidy_decimal, to_decimal, to_optional_decimal

URL = "https://api.linode.com/v4/linode/types"
PAGE_SIZE = 500
MAX_PAGES = 20
MB_PER_GB = 1024

# Plan id → (raw GPU name, per-GPU GB). Linode's own product pages name the cards.
MODELS: tuple[tuple[re.Pattern[str], str, Decimal], ...] = (
    (re.compile(r"^g\d+-gpu-rtx6000-\d+$"), "Quadro RTX 6000", Decimal(24)),
    (re.compile(r"^g\d+-gpu-rtx4000a\d+-[a-z]+$"), "RTX 4000 Ada", Decimal(20)),
    (re.compile(r"^g\d+-gpu-rtxpro6000-blackwell-\d+$"), "RTX PRO 6000 Blackwell", Decimal(96)),
)


def model_of(type_id: str) -> tuple[str, Decimal] | None:
    """'g1-gpu-rtx6000-2' → ('Quadro RTX 6000', 24); an id naming no known card → None."""
    for pattern, name, memory in MODELS:
        if pattern.match(type_id):
            return name, memory
    return None


def _plan(raw: dict[str, Any], where: str) -> list[ScrapedOffer] | str | None:
    type_id = str(require(raw, "id", where))
    gpus = to_optional_decimal(raw.get("gpus"), f"{where}.gpus") or Decimal(0)
    if raw.get("class") != "gpu" or gpus <= 0:
        return None  # CPU plans and NETINT VPUs ("accelerated", gpus 0)
    model = model_of(type_id)
    if model is None:
        return f"{type_id}: no known GPU model in the plan id ({raw.get('label')!r})"
    name, memory = model
    price = require(raw, "price", where)
    hourly = to_optional_decimal(require(price, "hourly", f"{where}.price"), f"{where}.price.hourly")
    if hourly is None or hourly <= 0:
        return f"{type_id}: price {price.get('hourly')!r} per hour"
    attributes: dict[str, Any] = {"label": raw.get("label"), "class": "gpu"}
    monthly = to_optional_decimal(price.get("monthly"), f"{where}.price.monthly")
    if monthly:
        attributes["monthly_cap"] = str(monthly)
    if raw.get("transfer"):
        attributes["transfer_gb"] = str(to_decimal(raw["transfer"], f"{where}.transfer"))
    if raw.get("successor"):
        attributes["successor"] = str(raw["successor"])
    disk = gigabytes(to_optional_decimal(raw.get("disk"), f"{where}.disk"), MB_PER_GB)
    if disk:
        attributes["disk_gb"] = str(tidy_decimal(disk))
    common: dict[str, Any] = {
        "gpu_name": name,
        "gpu_count": gpus,
        "gpu_memory_gb": memory,
        "instance_type": type_id,
        "available": None,
        "vcpus": to_optional_decimal(raw.get("vcpus"), f"{where}.vcpus"),
        "ram_gb": gigabytes(to_optional_decimal(raw.get("memory"), f"{where}.memory"), MB_PER_GB),
    }
    offers = [ScrapedOffer(key=type_id, price_per_hour=hourly, attributes=attributes, **common)]
    for j, regional in enumerate(as_list(raw.get("region_prices") or [], "region_prices", where)):
        here = f"{where}.region_prices[{j}]"
        region = slug(require(regional, "id", here))
        amount = to_decimal(require(regional, "hourly", here), f"{here}.hourly")
        if not region or amount <= 0:
            raise ProviderError(f"unusable region price {regional!r} at {here}")
        extra = (
            {"monthly_cap": str(to_decimal(regional["monthly"], f"{here}.monthly"))} if regional.get("monthly") else {}
        )
        offers.append(
            ScrapedOffer(
                key=f"{type_id}:{region}",
                price_per_hour=amount,
                region=region,
                attributes=attributes | extra | {"regional_price": True},
                **common,
            )
        )
    return offers


def parse_page(payload: Any, result: ScrapeResult | None = None) -> ScrapeResult:
    result = result if result is not None else ScrapeResult()
    data = as_list(require(payload, "data", "response"), "data")
    return parse_items(indexed(data, "data"), _plan, result)


class Linode(Provider):
    name = "linode"
    title = "Akamai Cloud (Linode)"
    kind = ProviderKind.cloud
    homepage = "https://www.linode.com/pricing/#gpu"
    credentials = ()
    requests_per_minute = 200  # Linode's documented default for GET requests

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        pages = 1
        page = 1
        while page <= pages:
            payload = await get_json(ctx, URL, params={"page": page, "page_size": PAGE_SIZE})
            parse_page(payload, result)
            pages = int(to_optional_decimal(payload.get("pages"), "pages") or 1)
            if pages > MAX_PAGES:
                raise ProviderError(f"{pages} pages of plans: more than the {MAX_PAGES} a run reads")
            page += 1
        return result

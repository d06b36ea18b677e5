"""Clore.ai, a peer-to-peer GPU marketplace: `GET https://api.clore.ai/v1/marketplace`.

Auth: the API documents an `auth: <key>` header; the marketplace answers without one (two third-party
clients report so), so the key is optional (`CLORE_API_KEY`) and sent only when configured.

Shape: `{code, servers: [{id, specs: {gpu: "1x NVIDIA GeForce RTX 5090", gpu_count?, gpuram (GB), cpu,
ram (GB), net: {cc, down, up}}, gpu_array: [...], price: {on_demand: {"USD-Blockchain", "CLORE-Blockchain",
bitcoin}, spot: {...}, usd: {on_demand_usd, on_demand_clore, spot_usd?}}, rented, reliability,
partial_gpu_rental?: {total_gpus, available_gpus}}]}`.

Units and rules:
* prices are **USD per DAY for the whole server** → ÷ 24 for the hourly price;
* the on-demand price is `price.usd.on_demand_usd` (what the site shows), else the
  `price.on_demand["USD-Blockchain"]` listing; CLORE-token and bitcoin prices are kept in attributes, not
  converted (we hold no rate for them);
* a spot (bid) price is `price.usd.spot_usd`, else `price.spot["USD-Blockchain"]`: a separate offer
  (key `<id>:spot`); one above the on-demand price is no discount and is dropped with the reason;
* the GPU count is `specs.gpu_count`, else the "Nx" prefix of `specs.gpu`; the raw name is the rest
  ("NVIDIA GeForce RTX 5090"). "Mixed GPUs" servers name no one card and are dropped with the reason;
* `rented` servers are listed but not rentable: `available=False`; otherwise True. A rented server's
  prices are the ones its renter pays (third-party captures read Clore's rented prices apart from asking
  ones, `shared/reference/providers-next.md` §Clore): `price_kind` transacted, not orderable;
* region: `specs.net.cc` (country code) lower-cased; `reliability` kept in attributes.
A `code` other than 0 is a failed answer (Clore answers HTTP 200 with an error code).

Rate limit: Clore documents one request per second for most endpoints; one request per run.
Kind: marketplace.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    PriceKind,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require
from providers.items import indexed, parse_items
from providers.parsing import as_list, slug, to_optional_decimal

URL = "https://api.clore.ai/v1/marketplace"
API_KEY = "CLORE_API_KEY"
HOURS_PER_DAY = Decimal(24)
USD_LISTING = "USD-Blockchain"
COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x\s+(.+)$", re.IGNORECASE)
MIXED = re.compile(r"\bmixed\b", re.IGNORECASE)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def per_day(price: dict[str, Any], usd_field: str, listing: str, where: str) -> Decimal | None:
    """A USD/day price: the `usd` block's figure, else the USD listing of `price[listing]`."""
    usd = to_optional_decimal(_object(price.get("usd")).get(usd_field), f"{where}.usd.{usd_field}")
    if usd is None:
        usd = to_optional_decimal(_object(price.get(listing)).get(USD_LISTING), f"{where}.{listing}.{USD_LISTING}")
    return usd


def split_gpu(text: str) -> tuple[int | None, str]:
    """'2x NVIDIA GeForce RTX 5090' → (2, 'NVIDIA GeForce RTX 5090'); 'Tesla T4' → (None, 'Tesla T4')."""
    match = COUNT_PREFIX.match(text)
    return (int(match[1]), match[2].strip()) if match else (None, text.strip())


def _server(raw: dict[str, Any], where: str, notes: list[str]) -> list[ScrapedOffer] | str:
    """The server's offers; a spot price that cannot stand is noted in `notes` while its on-demand offer stays."""
    server_id = str(require(raw, "id", where))
    specs = _object(require(raw, "specs", where))
    prefix, name = split_gpu(str(specs.get("gpu") or ""))
    count = to_optional_decimal(specs.get("gpu_count"), f"{where}.specs.gpu_count") or (
        Decimal(prefix) if prefix else None
    )
    if not name or not count or count <= 0:
        return f"{server_id}: no GPU model or count"
    if MIXED.search(name):
        return f"{server_id}: {specs.get('gpu')!r} names no one card"
    price = _object(require(raw, "price", where))
    on_demand = per_day(price, "on_demand_usd", "on_demand", f"{where}.price")
    if on_demand is None or on_demand <= 0:
        return f"{server_id}: no USD on-demand price"
    attributes: dict[str, Any] = {"raw_gpu": specs.get("gpu"), "usd_per_day": str(on_demand)}
    clore = _object(price.get("on_demand")).get("CLORE-Blockchain")
    if clore is not None:
        attributes["clore_per_day"] = str(clore)
    if raw.get("reliability") is not None:
        attributes["reliability"] = raw["reliability"]
    partial = _object(raw.get("partial_gpu_rental"))
    if partial:
        attributes["partial_gpu_rental"] = {k: partial.get(k) for k in ("total_gpus", "available_gpus")}
    rented = raw.get("rented") is True
    common: dict[str, Any] = {
        "gpu_name": name,
        "gpu_count": count,
        "region": slug(_object(specs.get("net")).get("cc")),
        "gpu_memory_gb": to_optional_decimal(specs.get("gpuram"), f"{where}.specs.gpuram") or None,
        "instance_type": str(specs.get("gpu")),
        "available": not rented,
        "price_kind": PriceKind.transacted if rented else PriceKind.asking,
        "orderable": not rented,
        "vcpus": None,
        "ram_gb": to_optional_decimal(specs.get("ram"), f"{where}.specs.ram"),
    }
    offers = [ScrapedOffer(key=server_id, price_per_hour=on_demand / HOURS_PER_DAY, attributes=attributes, **common)]
    spot = per_day(price, "spot_usd", "spot", f"{where}.price")
    if spot is not None and spot > 0:
        if spot > on_demand:
            notes.append(f"{server_id}:spot: ${spot}/day bid is above the ${on_demand}/day on-demand price")
            return offers
        spot_attributes = attributes | {"usd_per_day": str(spot)}
        offers.append(
            ScrapedOffer(
                key=f"{server_id}:spot",
                price_per_hour=spot / HOURS_PER_DAY,
                pricing=Pricing.spot,
                attributes=spot_attributes,
                **common,
            )
        )
    return offers


def parse(payload: Any) -> ScrapeResult:
    code = require(payload, "code", "response")
    if code != 0:
        raise ProviderError(f"marketplace answered code {code!r}")
    servers = as_list(require(payload, "servers", "response"), "servers")
    notes: list[str] = []
    result = parse_items(indexed(servers, "servers"), lambda raw, where: _server(raw, where, notes), ScrapeResult())
    result.skipped += notes
    return result


class Clore(Provider):
    name = "clore"
    title = "Clore.ai"
    kind = ProviderKind.marketplace
    homepage = "https://clore.ai/marketplace"
    credentials = ()
    optional_credentials = (API_KEY,)
    requests_per_minute = 60  # "1 request per second" in Clore's API documentation
    parser_version = "2"  # 2: a rented server's prices are transacted, not orderable

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.credentials.get(API_KEY)
        return parse(await get_json(ctx, URL, headers={"auth": key} if key else None))

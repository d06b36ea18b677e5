"""Oblivus GPU cloud: `GET https://api.oblivus.com/v2/cloud/metadata/` (flavors, prices, configurations) and
`GET https://api.oblivus.com/v2/cloud/stock/list/` (deployable virtual servers per location)
.

Auth: header `apiKey: <OBLIVUS_API_KEY>` (not Bearer; missing → the run is `skipped`). Two requests per
run; no rate limit documented.

Shape: metadata `data.gpu.<FLAVOR>{metaName ("H100 80GB PCIE"), hourlyCost, "1m", "3m", "12m", "36m",
network, configurations[{flavorID, type, vCPU, RAM, rootStorage, ephemeralStorage, GPUAmount}]}`; stock
`data.gpu.<FLAVOR>.<LOCATION>.virtualservers` (a count, as a string). Numbers come as strings.

UNITS: `hourlyCost` is **USD per GPU-hour**; an offer is one configuration (`GPUAmount` GPUs) at
`hourlyCost × GPUAmount` per hour. The commitment tiers `1m`, `3m`, `12m`, `36m` are the per-GPU hourly
rate for a 1-, 3-, 12- or 36-month commitment: each is a `reserved` offer with term "1mo", "3mo", "1y",
"3y" (`providers.parsing.reservation_term`), priced the same way; a tier that is absent, zero or not below
the on-demand rate is no discount and is left out.

Offers: one per (configuration × stock location), region = the location code lower-cased ("mon1"),
`available` = `virtualservers > 0` (the count kept in attributes). A flavor absent from the stock list has
one region-less offer per configuration with `available` None. One malformed flavor or configuration is
dropped with its reason; a metadata body without `data.gpu` fails the run, a stock body without it only
loses the availability (reported in `skipped`).

Evidence: SHAPE. Field names and the H100 PCIe / RTX A6000 figures (hourlyCost "2.178", 1m "2.1", 12m
"1.9", 36m "1.7", MON1 46 servers, OSL1 0) follow `wayneornn/public-pricing@305b3f1a:test/oblivus.test.js`,
whose fixtures "mirror real … responses (verified live)"; the other flavors and prices are illustrative.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

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
from providers.parsing import as_list, memory_in_name, reservation_term, slug, to_decimal, to_optional_decimal

METADATA_URL = "https://api.oblivus.com/v2/cloud/metadata/"
STOCK_URL = "https://api.oblivus.com/v2/cloud/stock/list/"
API_KEY = "OBLIVUS_API_KEY"
TIERS = ("1m", "3m", "12m", "36m")


def _gpu_map(payload: Any, what: str) -> dict[str, Any]:
    gpus = require(require(payload, "data", what), "gpu", f"{what}.data")
    if not isinstance(gpus, dict):
        raise ProviderError(f"schema changed: {what}.data.gpu is not an object")
    return gpus


def _stock(payload: Any, result: ScrapeResult) -> dict[str, dict[str, Decimal]]:
    """flavor → location → deployable virtual servers."""
    try:
        gpus = _gpu_map(payload, "stock")
    except ProviderError as exc:
        result.skipped.append(f"stock list unusable, availability unknown: {exc}")
        return {}
    stock: dict[str, dict[str, Decimal]] = {}
    for flavor, locations in gpus.items():
        if not isinstance(locations, dict):
            continue
        for location, entry in locations.items():
            count = entry.get("virtualservers") if isinstance(entry, dict) else None
            try:
                stock.setdefault(flavor, {})[location] = to_decimal(count, f"stock.{flavor}.{location}")
            except ProviderError as exc:
                result.skipped.append(str(exc))
    return stock


def parse_flavor(flavor: str, raw: Any, stock: dict[str, Decimal] | None) -> tuple[list[ScrapedOffer], list[str]]:
    where = f"metadata.{flavor}"
    name = str(require(raw, "metaName", where)).strip()
    hourly = to_decimal(require(raw, "hourlyCost", where), f"{where}.hourlyCost")
    if not name or hourly <= 0:
        raise ProviderError(f"{flavor}: no name or price")
    tiers: dict[str, Decimal] = {}
    for tier in TIERS:
        rate = to_optional_decimal(raw.get(tier), f"{where}.{tier}", blank_is_none=True)
        if rate is not None and 0 < rate < hourly:
            tiers[reservation_term(tier, f"{where}.{tier}")] = rate
    offers: list[ScrapedOffer] = []
    skipped: list[str] = []
    locations: list[tuple[str, Decimal | None]] = list(stock.items()) if stock else [("", None)]
    for j, config in enumerate(as_list(require(raw, "configurations", where), "configurations", where)):
        try:
            config_id = str(require(config, "flavorID", f"{where}.configurations[{j}]"))
            gpus = to_decimal(require(config, "GPUAmount", config_id), f"{config_id}.GPUAmount")
            if gpus <= 0:
                raise ProviderError(f"{config_id}: {gpus} GPUs")
        except ProviderError as exc:
            skipped.append(str(exc))
            continue
        for location, servers in locations:
            region = slug(location)
            base = ScrapedOffer(
                key=f"{config_id}:{region}" if region else config_id,
                gpu_name=name,
                gpu_count=gpus,
                price_per_hour=hourly * gpus,
                region=region,
                gpu_memory_gb=memory_in_name(name),
                instance_type=config_id,
                available=None if servers is None else servers > 0,
                vcpus=to_optional_decimal(config.get("vCPU"), f"{config_id}.vCPU", blank_is_none=True),
                ram_gb=to_optional_decimal(config.get("RAM"), f"{config_id}.RAM", blank_is_none=True),
                attributes={"flavor": flavor, "network": raw.get("network"), "price_per_gpu_hour": str(hourly)}
                | ({"virtual_servers": int(servers)} if servers is not None else {}),
            )
            offers.append(base)
            for term, rate in tiers.items():
                offers.append(
                    replace(
                        base,
                        key=f"{base.key}:{term}",
                        price_per_hour=rate * gpus,
                        pricing=Pricing.reserved,
                        reserved_term=term,
                        attributes=base.attributes | {"price_per_gpu_hour": str(rate)},
                    )
                )
    return offers, skipped


def parse(metadata: Any, stock_payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    stock = _stock(stock_payload, result)
    for flavor, raw in _gpu_map(metadata, "metadata").items():
        try:
            offers, skipped = parse_flavor(flavor, raw, stock.get(flavor))
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        result.offers += offers
        result.skipped += skipped
    return result


class Oblivus(Provider):
    name = "oblivus"
    title = "Oblivus"
    kind = ProviderKind.cloud
    homepage = "https://oblivus.com/pricing/"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # none documented; two requests per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"apiKey": ctx.secret(API_KEY)}
        metadata = await get_json(ctx, METADATA_URL, headers=headers)
        stock = await get_json(ctx, STOCK_URL, headers=headers)
        return parse(metadata, stock)

"""Alibaba Cloud ECS GPU instances: `DescribePrice` per (region × instance type) for the on-demand price and
`DescribeSpotPriceHistory` for the spot price, both signed RPC calls.

`GET https://ecs.<region>.aliyuncs.com/?Action=DescribePrice&Version=2014-05-26&Format=JSON&RegionId=…
&ResourceType=instance&InstanceType=…&PriceUnit=Hour` and `…?Action=DescribeSpotPriceHistory&RegionId=…
&InstanceType=…&NetworkType=vpc&OSType=linux` (its default window: the last three hours), for every region
of `REGIONS` and type of `INSTANCE_TYPES`: at most `len(REGIONS) × len(INSTANCE_TYPES) × 2` requests,
`CONCURRENCY` at a time. The ECS API names no GPU model and lists no price catalogue, hence the table.

Auth: the documented RPC signature (V2, `rpc_signature`): every parameter but `Signature`, percent-encoded
per RFC 3986 (space "%20", "*" "%2A", "~" kept), sorted by name and joined as `k=v&…`; the string to sign
is `GET&%2F&` + that query percent-encoded once more; the signature is base64(HMAC-SHA1(AccessKeySecret +
"&", string)). `ALIBABA_CLOUD_ACCESS_KEY_ID` and `ALIBABA_CLOUD_ACCESS_KEY_SECRET` are required (missing →
`skipped`). The unit test reproduces Alibaba's documented example signature.

UNITS and currency:
* `DescribePrice` → `PriceInfo.Price{OriginalPrice, DiscountPrice, TradePrice, Currency,
  DetailInfos.DetailInfo[{Resource, TradePrice}]}`: the instance's own `TradePrice` (the `instanceType`
  detail, so the default system disk priced alongside is left out; the total when no detail is given) per
  **instance-hour** (`PriceUnit=Hour`) in `Currency`: **CNY** for a China-site (aliyun.com) account, USD
  for an international one. The currency is read, never assumed;
* `DescribeSpotPriceHistory` → `{Currency, SpotPrices.SpotPriceType[{ZoneId, Timestamp, SpotPrice,
  OriginPrice}]}`: the latest point per zone is a spot offer (`<zone>:<type>:spot`, region the zone); the
  history's points, low and high over the window are kept in attributes.

An instance type a region does not sell (error codes `InvalidInstanceType.*`, `*.NotSupported`,
`*.NoStock`, an empty history) is reported in `skipped`; any other API error (signature, key, throttling)
fails the run. One answer with a malformed price is dropped with its reason.

On-demand offers: key `<region>:<type>`, region the region id ("cn-hangzhou"); `available` None (a price is
no stock statement).

Evidence: DOC. Requests, signature and fields follow Alibaba's API reference (DescribePrice,
DescribeSpotPriceHistory, "Request syntax and signature method V2 for RPC APIs"); the cassette's prices,
zones and history are illustrative, not a live capture.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
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
from providers.http import gather_bounded, get_json, require
from providers.parsing import as_list, slug, to_decimal

URL = "https://ecs.{region}.aliyuncs.com/"
VERSION = "2014-05-26"
KEY_ID, KEY_SECRET = "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
REGIONS: tuple[str, ...] = ("cn-hangzhou", "cn-shanghai", "cn-beijing")
CONCURRENCY = 4
# Error codes that mean "this type is not sold here", not "this run is broken".
_NOT_SOLD = re.compile(r'"Code"\s*:\s*"([^"]*(?:InvalidInstanceType|NotSupported|NoStock|NotOnSale)[^"]*)"')


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str  # raw GPU name with memory and form factor
    count: Decimal
    memory_gb: Decimal


def _family(name: str, memory: int, sizes: dict[str, int]) -> dict[str, Gpu]:
    return {itype: Gpu(name, Decimal(n), Decimal(memory)) for itype, n in sizes.items()}


# ECS GPU instance type → its GPUs (Alibaba's instance family pages).
INSTANCE_TYPES: dict[str, Gpu] = {
    **_family("T4 16GB", 16, {"ecs.gn6i-c4g1.xlarge": 1}),
    **_family("V100 SXM2 16GB", 16, {"ecs.gn6v-c8g1.2xlarge": 1}),
    **_family("A10 24GB", 24, {"ecs.gn7i-c8g1.2xlarge": 1, "ecs.gn7i-c32g1.32xlarge": 4}),
    **_family("A100 SXM4 80GB", 80, {"ecs.gn7e-c16g1.4xlarge": 1}),
    **_family("L20 48GB", 48, {"ecs.gn8is.2xlarge": 1}),
}


def percent_encode(value: str) -> str:
    """RFC 3986, as the RPC signature wants it: unreserved characters kept, everything else %XX."""
    return quote(value, safe="-_.~")


def rpc_signature(params: Mapping[str, str], secret: str, method: str = "GET") -> str:
    canonical = "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in sorted(params.items()))
    to_sign = f"{method}&{percent_encode('/')}&{percent_encode(canonical)}"
    digest = hmac.new(f"{secret}&".encode(), to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def signed_params(action: str, params: Mapping[str, str], key_id: str, secret: str) -> dict[str, str]:
    """`params` with the common parameters, a fresh nonce and timestamp, and their signature."""
    common = {
        "Action": action,
        "Version": VERSION,
        "Format": "JSON",
        "AccessKeyId": key_id,
        "SignatureMethod": "HMAC-SHA1",
        "SignatureVersion": "1.0",
        "SignatureNonce": uuid.uuid4().hex,
        "Timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    every = common | dict(params)
    return every | {"Signature": rpc_signature(every, secret)}


def parse_price(payload: Any, region: str, itype: str) -> ScrapedOffer:
    where = f"{region}:{itype} DescribePrice"
    price = require(require(payload, "PriceInfo", where), "Price", f"{where}.PriceInfo")
    currency = str(price.get("Currency") or "").strip().upper() if isinstance(price, dict) else ""
    if len(currency) != 3:
        raise ProviderError(f"{region}:{itype}: price without a currency")
    details = price.get("DetailInfos")
    detail = details.get("DetailInfo") if isinstance(details, dict) else None
    own = (
        [d for d in detail if isinstance(d, dict) and d.get("Resource") == "instanceType"]
        if isinstance(detail, list)
        else []
    )
    amount = to_decimal(own[0].get("TradePrice") if own else require(price, "TradePrice", where), f"{where}.TradePrice")
    if amount <= 0:
        raise ProviderError(f"{region}:{itype}: price {amount}")
    gpu = INSTANCE_TYPES[itype]
    return ScrapedOffer(
        key=f"{region}:{itype}",
        gpu_name=gpu.name,
        gpu_count=gpu.count,
        price_per_hour=amount,
        region=region,
        gpu_memory_gb=gpu.memory_gb,
        instance_type=itype,
        available=None,
        attributes={"original_price": str(price.get("OriginalPrice")), "price_scope": "instance" if own else "total"},
        currency=currency,
    )


def parse_spot_history(payload: Any, region: str, itype: str) -> list[ScrapedOffer]:
    where = f"{region}:{itype} DescribeSpotPriceHistory"
    currency = str(require(payload, "Currency", where) or "").strip().upper()
    points = as_list(require(require(payload, "SpotPrices", where), "SpotPriceType", where), "SpotPriceType", where)
    if len(currency) != 3:
        raise ProviderError(f"{region}:{itype}: spot history without a currency")
    by_zone: dict[str, list[tuple[str, Decimal]]] = {}
    for i, point in enumerate(points):
        zone = slug(require(point, "ZoneId", f"{where}[{i}]"))
        stamp = str(require(point, "Timestamp", f"{where}[{i}]"))
        by_zone.setdefault(zone, []).append((stamp, to_decimal(require(point, "SpotPrice", where), f"{where}[{i}]")))
    gpu = INSTANCE_TYPES[itype]
    offers = []
    for zone, history in by_zone.items():
        history.sort()
        stamp, latest = history[-1]
        if latest <= 0:
            continue
        prices = [p for _, p in history]
        offers.append(
            ScrapedOffer(
                key=f"{zone}:{itype}:spot",
                gpu_name=gpu.name,
                gpu_count=gpu.count,
                price_per_hour=latest,
                pricing=Pricing.spot,
                region=zone,
                gpu_memory_gb=gpu.memory_gb,
                instance_type=itype,
                available=None,
                attributes={
                    "spot_price_at": stamp,
                    "history_points": len(prices),
                    "history_low": str(min(prices)),
                    "history_high": str(max(prices)),
                    "history_from": history[0][0],
                },
                currency=currency,
            )
        )
    return offers


class AlibabaCloud(Provider):
    name = "alibaba"
    title = "Alibaba Cloud"
    kind = ProviderKind.cloud
    homepage = "https://www.aliyun.com/product/ecs/gpu"
    credentials = (KEY_ID, KEY_SECRET)
    parser_version = "1"
    requests_per_minute = None  # none documented per action; CONCURRENCY bounds the fan-out

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key_id, secret = ctx.secret(KEY_ID), ctx.secret(KEY_SECRET)
        pairs = [(region, itype) for region in REGIONS for itype in INSTANCE_TYPES]

        def ask(action: str, region: str, extra: dict[str, str]) -> Callable[[], Awaitable[Any]]:
            async def go() -> Any:
                params = signed_params(action, {"RegionId": region} | extra, key_id, secret)
                try:
                    return await get_json(ctx, URL.format(region=region), params=params)
                except ProviderError as exc:
                    if (code := _NOT_SOLD.search(str(exc))) is None:
                        raise
                    return code[1]  # the reason, for `skipped`

            return go

        jobs = []
        for region, itype in pairs:
            jobs.append(
                ask("DescribePrice", region, {"ResourceType": "instance", "InstanceType": itype, "PriceUnit": "Hour"})
            )
            jobs.append(
                ask(
                    "DescribeSpotPriceHistory", region, {"InstanceType": itype, "NetworkType": "vpc", "OSType": "linux"}
                )
            )
        answers = await gather_bounded(jobs, CONCURRENCY)
        result = ScrapeResult()
        for n, (region, itype) in enumerate(pairs):
            price, spot = answers[2 * n], answers[2 * n + 1]
            for what, answer, parse in (("on demand", price, _one_price), ("spot", spot, parse_spot_history)):
                if isinstance(answer, str):
                    result.skipped.append(f"{region}:{itype} {what}: not sold ({answer})")
                    continue
                try:
                    offers = parse(answer, region, itype)
                except ProviderError as exc:
                    result.skipped.append(str(exc))
                    continue
                if not offers:
                    result.skipped.append(f"{region}:{itype} {what}: no price in the answer")
                result.offers += offers
        return result


def _one_price(payload: Any, region: str, itype: str) -> list[ScrapedOffer]:
    return [parse_price(payload, region, itype)]

"""Tencent Cloud CVM GPU instances: `DescribeZoneInstanceConfigInfos` (CVM API 2017-03-12), one signed call
per region.

`POST https://cvm.tencentcloudapi.com/` with `X-TC-Action: DescribeZoneInstanceConfigInfos`,
`X-TC-Version: 2017-03-12`, `X-TC-Region: <region>` and a JSON body filtering on the GPU instance families
of `FAMILIES`. It answers every (zone × instance type × charge type) of the region with its price and
sell status, so one call per region in `REGIONS` covers the GPU range.

Auth: TC3-HMAC-SHA256 (`tc3_authorization`, the documented algorithm: a canonical request over the
method, "/", the empty query, the `content-type` and `host` headers and the SHA-256 of the exact body
bytes sent; a key derived as HMAC("TC3" + SecretKey, date) → service → "tc3_request"; the signature its
HMAC over "TC3-HMAC-SHA256\\n<timestamp>\\n<date>/cvm/tc3_request\\n<hash of the canonical request>").
`TENCENTCLOUD_SECRET_ID` and `TENCENTCLOUD_SECRET_KEY` are required (missing → `skipped`). The unit test
reproduces the signature of Tencent's documented example.

Shape: `{Response: {InstanceTypeQuotaSet: [{Zone, InstanceType ("GN7.2XLARGE32"), InstanceFamily,
InstanceChargeType (POSTPAID_BY_HOUR | SPOTPAID | PREPAID), Cpu, Memory, Gpu, GpuCount, Price{UnitPrice,
UnitPriceDiscount, ChargeUnit}, Status ("SELL" | "SOLD_OUT")}], RequestId}}`; an error comes as HTTP 200
with `Response.Error{Code, Message}` and fails the run (credentials, signature, throttling).

UNITS: `Price.UnitPriceDiscount` (the rate charged; `UnitPrice`, the list rate, when absent) is per
**instance-hour** (`ChargeUnit` "HOUR"; any other unit is dropped with a reason) in the account's
settlement currency, which the answer does not state: **CNY** for a China-site account (the default),
USD for an international one (`TENCENTCLOUD_CURRENCY=USD`, an optional setting).

Offers: POSTPAID_BY_HOUR rows are on-demand, SPOTPAID rows spot (key suffix ":spot"); PREPAID (monthly
subscriptions, priced per month) rows are left out. Key `<zone>:<instance type>`, region = the zone
("ap-guangzhou-3"). `available` is `Status == "SELL"`. The API names no GPU model: `FAMILIES` maps each
GPU family to its card; `GpuCount` (fractional on vGPU types, e.g. 0.25 of an A10) is the count, with the
slice's share of the card's memory. A GPU family missing from `FAMILIES` is dropped with a reason, never
guessed. Tencent offers no spot price history API (spot prices here are the current ones).

Rate limit: 20 requests/s per action is Tencent's default; one call per region stays far below it.

Evidence: DOC. The request, the signature and the field names follow Tencent's API documentation
(https://www.tencentcloud.com/document/api/213/33248, the signature v3 page); the cassette's zones, types,
prices and stock are illustrative, not a live capture.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
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
from providers.http import post_json, require
from providers.parsing import as_list, slug, to_decimal, to_optional_decimal

HOST = "cvm.tencentcloudapi.com"
URL = f"https://{HOST}/"
SERVICE = "cvm"
ACTION, VERSION = "DescribeZoneInstanceConfigInfos", "2017-03-12"
CONTENT_TYPE = "application/json; charset=utf-8"
SECRET_ID, SECRET_KEY, CURRENCY = "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_CURRENCY"
DEFAULT_CURRENCY = "CNY"
REGIONS: tuple[str, ...] = ("ap-guangzhou", "ap-shanghai", "ap-beijing", "ap-nanjing")


@dataclass(frozen=True, slots=True)
class Card:
    name: str  # raw GPU name with memory and form factor
    memory_gb: Decimal


# GPU instance family → its card (Tencent's instance-type pages).
FAMILIES: dict[str, Card] = {
    "GN7": Card("T4 16GB", Decimal(16)),
    "GN10Xp": Card("V100 SXM2 32GB", Decimal(32)),
    "GNV4": Card("A10 24GB", Decimal(24)),
    "PNV4": Card("A10 24GB", Decimal(24)),
    "GT4": Card("A100 SXM4 40GB", Decimal(40)),
}
_CHARGE = {"POSTPAID_BY_HOUR": Pricing.on_demand, "SPOTPAID": Pricing.spot}


def request_body() -> bytes:
    """The body sent, and signed, byte for byte."""
    filters = [{"Name": "instance-family", "Values": list(FAMILIES)}]
    return json.dumps({"Filters": filters}, separators=(",", ":")).encode()


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def tc3_authorization(
    secret_id: str,
    secret_key: str,
    *,
    timestamp: int,
    payload: bytes,
    service: str = SERVICE,
    host: str = HOST,
    content_type: str = CONTENT_TYPE,
) -> str:
    """The `Authorization` header of a TC3-HMAC-SHA256-signed POST of `payload` (Tencent's API v3)."""
    canonical = "\n".join(
        [
            "POST",
            "/",
            "",
            f"content-type:{content_type}\nhost:{host}\n",
            "content-type;host",
            hashlib.sha256(payload).hexdigest(),
        ]
    )
    date = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
    scope = f"{date}/{service}/tc3_request"
    to_sign = f"TC3-HMAC-SHA256\n{timestamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = _hmac(_hmac(_hmac(f"TC3{secret_key}".encode(), date), service), "tc3_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"TC3-HMAC-SHA256 Credential={secret_id}/{scope}, SignedHeaders=content-type;host, Signature={signature}"


def parse_row(raw: Any, where: str, currency: str) -> ScrapedOffer | None:
    """One quota row as an offer; None for a charge type we do not track."""
    pricing = _CHARGE.get(str(require(raw, "InstanceChargeType", where)))
    if pricing is None:
        return None
    itype = str(require(raw, "InstanceType", where))
    family = str(raw.get("InstanceFamily") or itype.split(".", 1)[0])
    card = FAMILIES.get(family)
    if card is None:
        raise ProviderError(f"{itype}: GPU family {family!r} has no known card")
    zone = slug(require(raw, "Zone", where))
    price = require(raw, "Price", where)
    unit = str(price.get("ChargeUnit") or "HOUR").upper() if isinstance(price, dict) else ""
    if unit != "HOUR":
        raise ProviderError(f"{zone}:{itype}: priced per {unit or '?'}")
    amount = to_optional_decimal(price.get("UnitPriceDiscount"), f"{where}.Price.UnitPriceDiscount")
    amount = amount if amount else to_optional_decimal(price.get("UnitPrice"), f"{where}.Price.UnitPrice")
    count = to_optional_decimal(raw.get("GpuCount"), f"{where}.GpuCount") or to_decimal(
        require(raw, "Gpu", where), f"{where}.Gpu"
    )
    if not amount or amount <= 0 or count <= 0:
        raise ProviderError(f"{zone}:{itype} {pricing.value}: price {amount}, {count} GPUs")
    return ScrapedOffer(
        key=f"{zone}:{itype}" + (":spot" if pricing is Pricing.spot else ""),
        gpu_name=card.name,
        gpu_count=count,
        price_per_hour=amount,
        pricing=pricing,
        region=zone,
        gpu_memory_gb=card.memory_gb * count if count < 1 else card.memory_gb,
        instance_type=itype,
        available=str(raw.get("Status") or "").upper() == "SELL",
        vcpus=to_optional_decimal(raw.get("Cpu"), f"{where}.Cpu"),
        ram_gb=to_optional_decimal(raw.get("Memory"), f"{where}.Memory"),
        attributes={"instance_family": family, "list_price": str(price.get("UnitPrice")), "status": raw.get("Status")},
        currency=currency,
    )


def parse_region(payload: Any, region: str, currency: str, result: ScrapeResult, seen: set[str]) -> None:
    response = require(payload, "Response", region)
    error = response.get("Error") if isinstance(response, dict) else None
    if error:
        code = error.get("Code") if isinstance(error, dict) else error
        message = error.get("Message") if isinstance(error, dict) else ""
        raise ProviderError(f"Tencent Cloud {region}: {code}: {message}")
    rows = as_list(require(response, "InstanceTypeQuotaSet", f"{region}.Response"), "InstanceTypeQuotaSet", region)
    for i, raw in enumerate(rows):
        try:
            offer = parse_row(raw, f"{region}.InstanceTypeQuotaSet[{i}]", currency)
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        if offer is None:
            continue
        if offer.key in seen:
            result.skipped.append(f"{offer.key}: listed twice")
            continue
        seen.add(offer.key)
        result.offers.append(offer)


class TencentCloud(Provider):
    name = "tencent"
    title = "Tencent Cloud"
    kind = ProviderKind.cloud
    homepage = "https://cloud.tencent.com/product/gpu"
    credentials = (SECRET_ID, SECRET_KEY)
    optional_credentials = (CURRENCY,)
    parser_version = "1"
    requests_per_minute = None  # 20/s per action by default; one call per region

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        secret_id, secret_key = ctx.secret(SECRET_ID), ctx.secret(SECRET_KEY)
        currency = (ctx.credentials.get(CURRENCY) or DEFAULT_CURRENCY).strip().upper()
        if len(currency) != 3 or not currency.isalpha():
            raise ProviderError(f"{CURRENCY} must be an ISO 4217 code, got {currency!r}")
        body = request_body()
        result = ScrapeResult()
        seen: set[str] = set()
        for region in REGIONS:
            timestamp = int(time.time())
            headers = {
                "authorization": tc3_authorization(secret_id, secret_key, timestamp=timestamp, payload=body),
                "content-type": CONTENT_TYPE,
                "x-tc-action": ACTION,
                "x-tc-version": VERSION,
                "x-tc-region": region,
                "x-tc-timestamp": str(timestamp),
            }
            payload = await post_json(ctx, URL, content=body, headers=headers)
            parse_region(payload, region, currency, result, seen)
        return result

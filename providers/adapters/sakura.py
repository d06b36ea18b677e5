"""SAKURA internet 高火力 VRT (GPU virtual servers, Japan), priced in JPY.

API: the public price list of each zone, `GET https://secure.sakura.ad.jp/cloud/zone/{zone}/api/cloud/1.1/public/price.json`
for `is1a` and `is1b` (Ishikari), anonymous but answered only with the header `X-Requested-With: XMLHttpRequest`.

Shape: `{Count, ResponsedAt, ServiceClasses: {"<n>": {DisplayName: "高火力 VRT/24Core-240GB-H100x1",
ServiceClassName: "plan/24core-240gb-1gpu-nvidia_h100_80gbvram-g2", ServiceClassID, ServiceCharge, IsPublic,
Price: {Hourly, Daily, Monthly, Zone}}}}` (a map keyed by position, holding every service: plans, disks, ...).

Units and rules:
* `Price.Hourly` is **JPY per instance-hour** (all its GPUs), kept in JPY (ingest converts at the day's
  ECB rate, which publishes JPY); `Daily` and `Monthly` (SAKURA's caps) go to attributes;
* a GPU plan is a class whose `ServiceClassName` reads `plan/<c>core-<r>gb-<n>gpu[-<model>_<m>gbvram]`:
  vCPUs, RAM (GB), the GPU count and, where written, the per-GPU memory. Every other class (CPU plans,
  disks, licences) is left out;
* the GPU model is the tail of `DisplayName` ("…-H100x1" → "H100", count 1, which must agree with the
  class name); the V100 plans write no memory: SAKURA's VRT V100 is the 32 GB card (`KNOWN_MEMORY_GB`).
  Neither name states SXM or PCIe: ingest then assumes the slower variant and says so on the offer;
* region: the zone (`Price.Zone`, else the zone asked); key `<zone>:<ServiceClassName>`;
* `available` is None (a price list, not stock).

Rate limit: none documented; two requests per run, one per zone.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import FetchContext, Provider, ProviderError, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json, require
from providers.items import parse_items
from providers.parsing import slug, to_decimal, to_optional_decimal

ZONES = ("is1a", "is1b")
CURRENCY = "JPY"
HEADERS = {"X-Requested-With": "XMLHttpRequest", "Accept": "application/json"}
GPU_CLASS = re.compile(r"^plan/(\d+)core-(\d+)gb-(\d+)gpu(?:-[a-z]+_([a-z0-9]+)_(\d+)gbvram)?(?:-[a-z0-9]+)?$")
DISPLAY_TAIL = re.compile(r"-([A-Za-z][A-Za-z0-9 ]*?)x(\d+)$")
KNOWN_MEMORY_GB = {"V100": Decimal(32)}  # SAKURA's 高火力 VRT V100 plans: Tesla V100 32GB (not in the class name)


def url_for(zone: str) -> str:
    return f"https://secure.sakura.ad.jp/cloud/zone/{zone}/api/cloud/1.1/public/price.json"


def _service_class(raw: dict[str, Any], where: str, zone: str) -> ScrapedOffer | str | None:
    class_name = str(require(raw, "ServiceClassName", where))
    plan = GPU_CLASS.match(class_name)
    if plan is None:
        return None  # not a GPU plan
    display = str(raw.get("DisplayName") or "")
    tail = DISPLAY_TAIL.search(display)
    if tail is None:
        return f"{zone}:{class_name}: no GPU model in DisplayName {display!r}"
    model, count = tail[1].strip(), Decimal(tail[2])
    if count != Decimal(plan[3]) or count <= 0:
        return f"{zone}:{class_name}: {count} GPU(s) in DisplayName, {plan[3]} in the class name"
    price = require(raw, "Price", where)
    hourly = to_decimal(require(price, "Hourly", f"{where}.Price"), f"{where}.Price.Hourly")
    if hourly <= 0:
        return f"{zone}:{class_name}: ¥{price.get('Hourly')} per hour"
    region = slug(price.get("Zone") or zone)
    memory = Decimal(plan[5]) if plan[5] else KNOWN_MEMORY_GB.get(model.upper())
    attributes: dict[str, Any] = {"display_name": display, "tax_included": None}
    for field_name, attr in (("Daily", "daily_price"), ("Monthly", "monthly_price")):
        if (value := to_optional_decimal(price.get(field_name), f"{where}.Price.{field_name}")) is not None:
            attributes[attr] = str(value)
    if raw.get("ServiceClassID") is not None:
        attributes["service_class_id"] = raw["ServiceClassID"]
    return ScrapedOffer(
        key=f"{region}:{class_name}",
        gpu_name=f"{model} {memory}GB" if memory else model,
        gpu_count=count,
        price_per_hour=hourly,
        region=region,
        gpu_memory_gb=memory,
        instance_type=class_name,
        available=None,
        vcpus=Decimal(plan[1]),
        ram_gb=Decimal(plan[2]),
        attributes=attributes,
        currency=CURRENCY,
    )


def parse(payload: Any, zone: str, result: ScrapeResult | None = None) -> ScrapeResult:
    classes = require(payload, "ServiceClasses", f"{zone} price.json")
    if not isinstance(classes, dict):
        raise ProviderError(f"schema changed: ServiceClasses of {zone} is not an object")
    items = [(f"{zone}.ServiceClasses.{k}", v) for k, v in classes.items()]
    return parse_items(items, lambda raw, where: _service_class(raw, where, zone), result or ScrapeResult())


class Sakura(Provider):
    name = "sakura"
    title = "SAKURA internet (高火力 VRT)"
    kind = ProviderKind.cloud
    homepage = "https://cloud.sakura.ad.jp/products/koukaryoku-vrt/"
    credentials = ()
    requests_per_minute = None  # none documented; one request per zone

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        for zone in ZONES:
            parse(await get_json(ctx, url_for(zone), headers=HEADERS), zone, result)
        return result

"""Gcore Everywhere AI / GPU Cloud: bare-metal and virtual GPU flavors with prices and capacity
.

Auth: `Authorization: APIKey <GCORE_API_KEY>` (missing → the run is `skipped`). `GCORE_PROJECT_ID` is
optional: without it the account's default project (else its first live one) from `GET /cloud/v1/projects`
is used.

Requests:
* `GET https://api.gcore.com/cloud/v1/regions` → `results[{id, display_name, state, has_ai_gpu, country}]`;
  regions that are ACTIVE and have AI GPUs are read, deduplicated by id, at most `MAX_REGIONS`;
* per region and kind (`baremetal`, `virtual`): `GET /cloud/v3/gpu/{kind}/{project}/{region}/flavors
  ?include_prices=true&include_capacity=true&hide_disabled=true` → `results[{name, architecture, disabled,
  capacity, reserved_capacity?, hardware_properties{gpu_manufacturer, gpu_model, gpu_count, nic_ib, nic_eth},
  hardware_description{gpu, cpu, ram, network}, price{price_per_hour, price_per_month, currency_code,
  price_status}}]`. A region that does not sell a kind answers 404: that pair is reported in `skipped`.

UNITS: `price.price_per_hour` is the **whole flavor (server or VM) per hour in `price.currency_code`**
(EUR on Gcore's European accounts): the currency is read, never assumed; a flavor without a price or
currency, or with `price_status` other than "show", is dropped with its reason.

Offers: one per (kind × region × flavor), key `<kind>:<region id>:<flavor>`, region = the display name
as a code ("luxembourg-2"). `available` = `capacity > 0` (None when the API gives no capacity), the capacity
and reserved capacity kept in attributes. The InfiniBand NIC (`hardware_properties.nic_ib`, e.g.
"2x200 Gbps", "8x400 Gbps") is kept as `attributes["nic_ib"]` with `infiniband: true`, the Ethernet NIC as
`nic_eth`. GPU name: `hardware_description.gpu` without its "N x " count ("8 x NVIDIA H100 SXM 80GB"), else
the manufacturer and model.

Evidence: NONE raw. The field list is the one a public connector reads
(`wayneornn/public-pricing@305b3f1a:src/connectors/live/providers/gcore.js`) and Gcore's API reference;
the cassette's flavors, regions and prices are illustrative.
"""

from __future__ import annotations

import re
from datetime import datetime
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
from providers.parsing import as_list, memory_in_name, slug, to_decimal, to_optional_decimal

API = "https://api.gcore.com/cloud"
PROJECTS_URL = f"{API}/v1/projects"
REGIONS_URL = f"{API}/v1/regions"
FLAVORS_URL = API + "/v3/gpu/{kind}/{project}/{region}/flavors"
FLAVOR_PARAMS = {"include_prices": "true", "include_capacity": "true", "hide_disabled": "true"}
KINDS = ("baremetal", "virtual")
API_KEY, PROJECT = "GCORE_API_KEY", "GCORE_PROJECT_ID"
MAX_REGIONS = 40
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*x\s*", re.IGNORECASE)
_IDENT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def ident(value: Any) -> str | None:
    """A project or region id fit for a URL path (an integer, or a plain token), else None: an id goes into
    the flavor path, so a hostile one ("../x") must never shape the request."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    text = str(value).strip()
    return text if _IDENT.match(text) else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _deleted(project: dict[str, Any]) -> bool:
    """A project is deleted when `deleted_at` is a timestamp: one that cannot be read is no deletion (were the
    project really gone, the flavor listing would say so), so a garbled field cannot empty the provider."""
    stamp = project.get("deleted_at")
    if not isinstance(stamp, str) or not stamp.isascii():
        return False
    try:
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def pick_project(payload: Any) -> str:
    live = [
        p
        for p in as_list(require(payload, "results", "projects"), "projects")
        if isinstance(p, dict) and ident(p.get("id")) and not _deleted(p)
    ]
    if not live:
        raise ProviderError("the account has no project to read GPU flavors in")
    live.sort(key=lambda p: not p.get("is_default"))
    return str(ident(live[0]["id"]))


def pick_regions(payload: Any, result: ScrapeResult) -> list[tuple[str, str]]:
    """(region id, region code) of the active regions with AI GPUs, deduplicated and capped."""
    regions: dict[str, str] = {}
    for raw in as_list(require(payload, "results", "regions"), "regions"):
        region_id = ident(raw.get("id")) if isinstance(raw, dict) else None
        if not isinstance(raw, dict) or region_id is None:
            continue
        if str(raw.get("state") or "ACTIVE").upper() != "ACTIVE" or raw.get("has_ai_gpu") is not True:
            continue
        regions.setdefault(region_id, slug(raw.get("display_name")) or region_id.lower())
    chosen = list(regions.items())
    if len(chosen) > MAX_REGIONS:
        result.skipped.append(f"{len(chosen) - MAX_REGIONS} GPU regions past the first {MAX_REGIONS} not read")
    return chosen[:MAX_REGIONS]


def gpu_name(flavor: dict[str, Any]) -> str:
    described = str(_object(flavor.get("hardware_description")).get("gpu") or "").strip()
    if described:
        return _COUNT_PREFIX.sub("", described)
    props = _object(flavor.get("hardware_properties"))
    return " ".join(str(p) for p in (props.get("gpu_manufacturer"), props.get("gpu_model")) if p)


def parse_flavor(raw: Any, kind: str, region_id: str, region: str, where: str) -> ScrapedOffer:
    name = str(require(raw, "name", where))
    props = _object(require(raw, "hardware_properties", where))
    count = to_decimal(require(props, "gpu_count", f"{where}.hardware_properties"), f"{where}.gpu_count")
    price = _object(raw.get("price"))
    amount = to_optional_decimal(price.get("price_per_hour"), f"{where}.price.price_per_hour", blank_is_none=True)
    currency = str(price.get("currency_code") or "").strip().upper()
    status = str(price.get("price_status") or "show").lower()
    if amount is None or amount <= 0 or len(currency) != 3 or status != "show":
        raise ProviderError(f"{kind}:{region_id}:{name}: no price ({amount} {currency or '?'}, status {status})")
    gpu = gpu_name(raw)
    if count <= 0 or not gpu:
        raise ProviderError(f"{kind}:{region_id}:{name}: no GPU ({count} x {gpu!r})")
    capacity = to_optional_decimal(raw.get("capacity"), f"{where}.capacity")
    attributes: dict[str, Any] = {"region_id": region_id, "kind": kind, "architecture": raw.get("architecture")}
    if capacity is not None:
        attributes["capacity"] = int(capacity)
    if raw.get("reserved_capacity") is not None:
        attributes["reserved_capacity"] = raw["reserved_capacity"]
    if props.get("nic_ib"):
        attributes |= {"nic_ib": str(props["nic_ib"]), "infiniband": True}
    if props.get("nic_eth"):
        attributes["nic_eth"] = str(props["nic_eth"])
    if price.get("price_per_month") is not None:
        attributes["price_per_month"] = str(price["price_per_month"])
    return ScrapedOffer(
        key=f"{kind}:{region_id}:{name}",
        gpu_name=gpu,
        gpu_count=count,
        price_per_hour=amount,
        region=region,
        gpu_memory_gb=memory_in_name(gpu),
        instance_type=name,
        available=None if capacity is None else capacity > 0,
        attributes=attributes,
        currency=currency,
    )


def parse_flavors(payload: Any, kind: str, region_id: str, region: str, result: ScrapeResult) -> None:
    for i, raw in enumerate(as_list(require(payload, "results", "flavors"), "flavors")):
        where = f"{kind}/{region_id} flavors[{i}]"
        if isinstance(raw, dict) and raw.get("disabled") is True:
            continue
        try:
            result.offers.append(parse_flavor(raw, kind, region_id, region, where))
        except ProviderError as exc:
            result.skipped.append(str(exc))


class Gcore(Provider):
    name = "gcore"
    title = "Gcore"
    kind = ProviderKind.cloud
    homepage = "https://gcore.com/pricing/cloud"
    credentials = (API_KEY,)
    optional_credentials = (PROJECT,)
    parser_version = "1"
    requests_per_minute = None  # none documented; 2 + 2 x regions requests per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"APIKey {ctx.secret(API_KEY)}"}
        result = ScrapeResult()
        given = ctx.credentials.get(PROJECT)
        if given is not None and ident(given) is None:
            raise ProviderError(f"{PROJECT} is not a project id")
        project = ident(given) or pick_project(
            await get_json(ctx, PROJECTS_URL, params={"limit": 1000}, headers=headers)
        )
        regions = pick_regions(await get_json(ctx, REGIONS_URL, params={"limit": 1000}, headers=headers), result)
        for region_id, region in regions:
            for kind in KINDS:
                url = FLAVORS_URL.format(kind=kind, project=project, region=region_id)
                try:
                    payload = await get_json(ctx, url, params=FLAVOR_PARAMS, headers=headers)
                except ProviderError as exc:
                    if "HTTP 404" not in str(exc):
                        raise
                    result.skipped.append(f"{kind}:{region_id}: not sold in this region")
                    continue
                parse_flavors(payload, kind, region_id, region, result)
        return result

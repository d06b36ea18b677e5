"""RunPod: REST v2 `GET /v2/catalog/gpus` when a key is configured, else the anonymous GraphQL API
.

Why two paths: RunPod's REST v1 retires 2026-11-15 and GraphQL `lowestPrice` is "being retired"; REST v2
carries per-GPU secure and community prices, and stock with `include=AVAILABILITY`, but needs an API key.
Keyless runs keep using GraphQL while it answers; once it answers that the endpoint or the `lowestPrice`
field is gone (HTTP 404/410, or a GraphQL error naming the field), the run fails with an "endpoint
retired" error that says to configure `RUNPOD_API_KEY`, rather than with a schema error.

REST v2 (key set, sent as an `Authorization` bearer token): one request per cloud (`cloud=SECURE|COMMUNITY`)
and size (`count=1, 2, 4, 8`), 8 in all, each with `include=AVAILABILITY`. Offers are per (type, size,
cloud), region "" (the catalog is not per datacenter). `availability.stockStatus` HIGH/MEDIUM/LOW →
available, NONE → `available=False` (the offer is kept, so a sold-out card's price and stock history
go on being recorded); no availability → None. The request parameters come from RunPod's v2 reference;
the response layout is not confirmed by a capture (the cassette's interaction is built from the docs), so
the parser takes the item list bare or under `data`/`items`/`gpus`/`gpuTypes`, the id as `id` or `gpuId`,
and fails loudly if no item carries the cloud's price field.

GraphQL (no key):
1. one metadata query: `countryCodes`, `dataCenters{id name listed}` and every `gpuTypes` entry with its
   display name, memory and per-cloud maximum GPU count;
2. one price query per (gpuCount, location): secure cloud per *listed* datacenter
   (`lowestPriceInput={secureCloud:true, dataCenterId, gpuCount}`), community cloud per country code
   (`{secureCloud:false, countryCode, gpuCount}`).
   Call budget: gpuCount takes only the values 1, 2, 4 and 8 (those not above the largest `maxGpuCount`),
   not every integer up to the maximum as gpuhunt does. Those are the pod sizes fine-tuning jobs use, and
   it halves the number of calls: 4 × (listed datacenters + country codes) price queries per run (about
   180 with RunPod's ~30 datacenters and ~15 countries), sent at most `CONCURRENCY` at a time.
   `lowestPrice.stockStatus == null` means no capacity for that combination: the row is dropped; a
   non-null status ("High", "Medium", "Low") means `available=True`, kept in attributes["stock_status"].
   Region is the datacenter id (secure, e.g. "eu-ro-1") or the country code (community, e.g. "us").

Semantics shared by both paths (the `GpuType` fields are the same):
* `securePrice` / `communityPrice` are USD per GPU-hour; the offer price is that × gpuCount;
* spot: `secureSpotPrice` / `communitySpotPrice` (per GPU-hour, interruptible pods) give a separate spot
  offer of the same cloud, only when strictly below that cloud's on-demand price (a spot rate at or above
  it is no alternative); gpuhunt stopped reading them, but the API publishes them for most types (34 of
  39 in a 2025 capture). `lowestPrice.minimumBidPrice` is not used;
* a cloud the type is not sold in (`secureCloud` / `communityCloud` false) yields nothing, whatever price
  the type shows for it (real answers carry placeholders there, e.g. 0 or 0.5);
* a size above the type's per-cloud maximum (`maxGpuCountSecureCloud` / `maxGpuCountCommunityCloud`,
  falling back to `maxGpuCount`) or below `minPodGpuCount` is not offered;
* the GPU name passed on is the type's `id` (the device name, e.g. "NVIDIA RTX PRO 6000 Blackwell
  Workstation Edition"), not `displayName`: display names drift ("RTX PRO 6000" was the Workstation
  Edition in 2025 and is the Server Edition in 2026, next to a new "RTX PRO 6000 WK") and some are
  ambiguous ("Tesla V100" for the PCIe part); the id names one card. The display name is kept in
  attributes["display_name"] and the id in attributes["gpu_id"]; `cloud` is "secure" or "community".

`RUNPOD_API_KEY` is optional (`optional_credentials`): it is not in `credentials`, so runs without it are
never skipped; when the fetch context carries it, REST v2 is used. (The scrape pipeline hands an adapter
only the names in `credentials` today: until it also passes `optional_credentials` when they are set,
live runs take the GraphQL path.)
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
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
from providers.http import gather_bounded, get_json, post_json, require
from providers.parsing import as_list, dropping, to_optional_decimal

URL = "https://api.runpod.io/graphql"
REST_URL = "https://api.runpod.io/v2/catalog/gpus"
GPU_COUNTS = (1, 2, 4, 8)
CLOUDS = ("secure", "community")
CONCURRENCY = 4
API_KEY = "RUNPOD_API_KEY"

META_QUERY = (
    "query GpuTypes { countryCodes dataCenters { id name listed } "
    "gpuTypes { id manufacturer displayName memoryInGb maxGpuCount maxGpuCountCommunityCloud "
    "maxGpuCountSecureCloud minPodGpuCount secureCloud communityCloud } }"
)
PRICE_QUERY = (
    "query GpuPrices($lowestPriceInput: GpuLowestPriceInput) { gpuTypes { id displayName memoryInGb "
    "securePrice communityPrice secureSpotPrice communitySpotPrice lowestPrice(input: $lowestPriceInput) { "
    "minimumBidPrice uninterruptablePrice minVcpu minMemory stockStatus countryCode } } }"
)
# How GraphQL says a field or the endpoint is gone: the status, or an error naming the retiring field.
RETIRED_STATUS = re.compile(r"^HTTP (404|410) from ")
RETIRED_FIELD = re.compile(r"lowestPrice|Cannot query field", re.IGNORECASE)
RETIRED_HINT = f"set TRACKER_{API_KEY} to read REST v2 {REST_URL}"
IN_STOCK = {"HIGH": True, "MEDIUM": True, "LOW": True, "NONE": False}  # any other status: not said
LIST_KEYS = ("data", "items", "gpus", "gpuTypes")


@dataclass(frozen=True, slots=True)
class GpuType:
    id: str
    display_name: str
    manufacturer: str | None
    memory_gb: Decimal | None
    max_secure: int
    max_community: int
    min_count: int
    secure: bool
    community: bool

    def sells(self, cloud: str, count: int) -> bool:
        offered, limit = (self.secure, self.max_secure) if cloud == "secure" else (self.community, self.max_community)
        return offered and self.min_count <= count <= limit


@dataclass(slots=True)
class Metadata:
    datacenters: list[str] = field(default_factory=list)  # listed ones only
    countries: list[str] = field(default_factory=list)
    gpu_types: dict[str, GpuType] = field(default_factory=dict)

    @property
    def max_count(self) -> int:
        return max((max(t.max_secure, t.max_community) for t in self.gpu_types.values()), default=0)

    def counts(self) -> list[int]:
        return [c for c in GPU_COUNTS if c <= self.max_count]


@dataclass(frozen=True, slots=True)
class Location:
    secure: bool
    id: str  # datacenter id (secure) or country code (community)

    @property
    def cloud(self) -> str:
        return "secure" if self.secure else "community"

    def price_input(self, count: int) -> dict[str, Any]:
        where = {"dataCenterId": self.id} if self.secure else {"countryCode": self.id}
        return {"secureCloud": self.secure, **where, "gpuCount": count}


def _int(value: Any, where: str, default: int) -> int:
    number = to_optional_decimal(value, where)
    return default if number is None else int(number)


def _retired(what: str) -> ProviderError:
    return ProviderError(f"RunPod GraphQL endpoint retired ({what}): {RETIRED_HINT}")


def _data(payload: Any, what: str) -> dict[str, Any]:
    """The `data` object of a GraphQL answer; GraphQL reports failures as `errors` with HTTP 200."""
    if isinstance(payload, dict) and payload.get("errors"):
        errors = payload["errors"]
        first = errors[0] if isinstance(errors, list) and errors else errors
        message = str(first.get("message") if isinstance(first, dict) else first)[:200]
        if RETIRED_FIELD.search(message):
            raise _retired(f"{what} answered {message!r}")
        raise ProviderError(f"RunPod GraphQL error in {what}: {message}")
    data = require(payload, "data", what)
    if not isinstance(data, dict):
        raise ProviderError(f"schema changed: {what} 'data' is not an object")
    return data


def gpu_type(raw: Any, where: str) -> GpuType:
    """One `gpuTypes` entry (GraphQL) or catalog item (REST v2): the same field names."""
    if not isinstance(raw, dict):
        raise ProviderError(f"schema changed: expected an object at {where}, got {type(raw).__name__}")
    gpu_id = str(raw["gpuId"] if "id" not in raw and "gpuId" in raw else require(raw, "id", where) or "").strip()
    display_name = str(raw.get("displayName") or gpu_id).strip()
    if not (gpu_id or display_name):
        raise ProviderError(f"schema changed: GPU type without id or displayName at {where}")
    overall = _int(raw.get("maxGpuCount"), f"{where}.maxGpuCount", 0)
    return GpuType(
        id=gpu_id or display_name,  # the name passed on: an empty id would resolve to nothing
        display_name=display_name,
        manufacturer=raw.get("manufacturer"),
        memory_gb=to_optional_decimal(raw.get("memoryInGb"), f"{where}.memoryInGb"),
        max_secure=_int(raw.get("maxGpuCountSecureCloud"), f"{where}.maxGpuCountSecureCloud", overall),
        max_community=_int(raw.get("maxGpuCountCommunityCloud"), f"{where}.maxGpuCountCommunityCloud", overall),
        min_count=_int(raw.get("minPodGpuCount"), f"{where}.minPodGpuCount", 1),
        secure=bool(raw.get("secureCloud", True)),
        community=bool(raw.get("communityCloud", True)),
    )


def parse_metadata(payload: Any) -> Metadata:
    data = _data(payload, "metadata query")
    meta = Metadata()
    for code in as_list(require(data, "countryCodes", "data"), "countryCodes"):
        if isinstance(code, str) and code.strip():
            meta.countries.append(code.strip())
    for i, dc in enumerate(as_list(require(data, "dataCenters", "data"), "dataCenters")):
        dc_id = require(dc, "id", f"dataCenters[{i}]")
        if dc.get("listed") and isinstance(dc_id, str) and dc_id:
            meta.datacenters.append(dc_id)
    for i, raw in enumerate(as_list(require(data, "gpuTypes", "data"), "gpuTypes")):
        gpu = gpu_type(raw, f"gpuTypes[{i}]")
        meta.gpu_types[gpu.id] = gpu
    return meta


def type_offers(
    raw: dict[str, Any],
    gpu: GpuType,
    cloud: str,
    count: int,
    *,
    key: str,
    region: str,
    available: bool | None,
    where: str,
    attributes: dict[str, Any] | None = None,
    vcpus: Decimal | None = None,
    ram_gb: Decimal | None = None,
) -> tuple[list[ScrapedOffer], str | None]:
    """The on-demand offer of `count` GPUs of `gpu` in `cloud` and, when its spot rate undercuts it, the
    spot offer; or no offer and why. `raw` holds the type's per-GPU prices (`<cloud>Price`,
    `<cloud>SpotPrice`)."""
    per_gpu = to_optional_decimal(raw.get(f"{cloud}Price"), f"{where}.{cloud}Price")
    if per_gpu is None or per_gpu <= 0:
        return [], f"{where}: {gpu.display_name} has no {cloud} price"
    memory = to_optional_decimal(raw.get("memoryInGb"), f"{where}.memoryInGb") or gpu.memory_gb
    on_demand = ScrapedOffer(
        key=key,
        gpu_name=gpu.id,
        gpu_count=Decimal(count),
        price_per_hour=per_gpu * count,
        region=region,
        gpu_memory_gb=memory if memory and memory > 0 else None,
        instance_type=f"{count}x {gpu.display_name}",
        available=available,
        vcpus=vcpus,
        ram_gb=ram_gb,
        attributes={
            "gpu_id": gpu.id,
            "display_name": gpu.display_name,
            "cloud": cloud,
            **(attributes or {}),
            **({"manufacturer": gpu.manufacturer} if gpu.manufacturer else {}),
        },
    )
    offers = [on_demand]
    spot = to_optional_decimal(raw.get(f"{cloud}SpotPrice"), f"{where}.{cloud}SpotPrice")
    if spot is not None and 0 < spot < per_gpu:
        offers.append(replace(on_demand, key=f"{key}:spot", price_per_hour=spot * count, pricing=Pricing.spot))
    return offers, None


def parse_prices(payload: Any, meta: Metadata, location: Location, count: int) -> ScrapeResult:
    """GraphQL offers from one price query: `count` GPUs of each type at `location`."""
    data = _data(payload, f"price query ({location.cloud} {location.id} ×{count})")
    result = ScrapeResult()
    for i, raw in enumerate(as_list(require(data, "gpuTypes", "data"), "gpuTypes")):
        with dropping(result, f"gpuTypes[{i}]"):
            where = f"gpuTypes[{i}] ({location.cloud} {location.id} ×{count})"
            gpu_id = str(require(raw, "id", where))
            lowest = require(raw, "lowestPrice", where)
            if lowest is None or require(lowest, "stockStatus", f"{where}.lowestPrice") is None:
                continue  # no capacity for this size here: RunPod does not offer it
            gpu = meta.gpu_types.get(gpu_id)
            if gpu is None:
                result.skipped.append(f"{where}: GPU type {gpu_id!r} missing from the metadata query")
                continue
            if not gpu.sells(location.cloud, count):
                continue
            require(raw, f"{location.cloud}Price", where)  # asked for: its absence means the schema changed
            offers, why = type_offers(
                raw,
                gpu,
                location.cloud,
                count,
                key=f"{gpu_id}:{count}:{location.cloud}:{location.id}",
                region=location.id.lower(),
                available=True,
                where=where,
                attributes={"stock_status": lowest["stockStatus"]},
                vcpus=to_optional_decimal(lowest.get("minVcpu"), f"{where}.minVcpu"),
                ram_gb=to_optional_decimal(lowest.get("minMemory"), f"{where}.minMemory"),
            )
            result.offers.extend(offers)
            if why:
                result.skipped.append(why)
    return result


def _catalog_items(payload: Any) -> list[Any]:
    if isinstance(payload, dict):
        for name in LIST_KEYS:
            if isinstance(payload.get(name), list):
                return as_list(payload[name], f"'{name}'")
        raise ProviderError(f"schema changed: /v2/catalog/gpus holds no item list (looked for {', '.join(LIST_KEYS)})")
    return as_list(payload, "/v2/catalog/gpus answer")


def _stock(raw: dict[str, Any]) -> tuple[bool | None, str | None]:
    """(available, stock status) from `availability` (or the item itself, as runpodctl prints it)."""
    nested = raw.get("availability")
    source: dict[str, Any] = nested if isinstance(nested, dict) else raw
    text = source.get("stockStatus")
    status = text.strip().upper() if isinstance(text, str) and text.strip() else None
    if isinstance(flag := source.get("available"), bool):
        return flag, status
    return (IN_STOCK.get(status) if status else None), status


def parse_catalog(payload: Any, cloud: str, count: int) -> ScrapeResult:
    """Offers of `count` GPUs in `cloud` from a list of GPU types with per-GPU prices: the REST v2
    `/v2/catalog/gpus` answer (stock from `include=AVAILABILITY`) or any `gpuTypes` list of that shape."""
    items = _catalog_items(payload)
    if items and not any(isinstance(raw, dict) and f"{cloud}Price" in raw for raw in items):
        raise ProviderError(f"schema changed: no {cloud}Price in any /v2/catalog/gpus item")
    result = ScrapeResult()
    for i, raw in enumerate(items):
        where = f"gpus[{i}] ({cloud} ×{count})"
        gpu = gpu_type(raw, where)
        if not gpu.sells(cloud, count):
            continue  # not in this cloud or not at this size, whatever placeholder price it shows
        available, status = _stock(raw)
        offers, why = type_offers(
            raw,
            gpu,
            cloud,
            count,
            key=f"{gpu.id}:{count}:{cloud}",
            region="",
            available=available,
            where=where,
            attributes={"stock_status": status} if status else None,
        )
        result.offers.extend(offers)
        if why:
            result.skipped.append(why)
    return result


def _merge(parts: list[ScrapeResult]) -> ScrapeResult:
    result = ScrapeResult()
    seen: set[str] = set()
    for part in parts:
        result.skipped.extend(part.skipped)
        for offer in part.offers:
            if offer.key not in seen:
                seen.add(offer.key)
                result.offers.append(offer)
    return result


class RunPod(Provider):
    name = "runpod"
    title = "RunPod"
    kind = ProviderKind.cloud
    homepage = "https://www.runpod.io"
    # Read when present, never required (see the module docstring).
    optional_credentials = (API_KEY,)
    # 2: spot offers, the id as GPU name, REST v2 with a key, "endpoint retired" errors.
    parser_version = "2"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.credentials.get(API_KEY)
        return await (self._fetch_rest(ctx, key) if key else self._fetch_graphql(ctx))

    async def _fetch_rest(self, ctx: FetchContext, key: str) -> ScrapeResult:
        headers = {"authorization": f"Bearer {key}"}

        def catalog(cloud: str, count: int) -> Callable[[], Awaitable[Any]]:
            params = {"include": "AVAILABILITY", "cloud": cloud.upper(), "count": str(count)}
            return lambda: get_json(ctx, REST_URL, params=params, headers=headers)

        combos = [(cloud, count) for count in GPU_COUNTS for cloud in CLOUDS]
        payloads = await gather_bounded([catalog(cloud, count) for cloud, count in combos], CONCURRENCY)
        return _merge([parse_catalog(p, cloud, count) for (cloud, count), p in zip(combos, payloads, strict=True)])

    async def _fetch_graphql(self, ctx: FetchContext) -> ScrapeResult:
        async def query(body: dict[str, Any]) -> Any:
            try:
                return await post_json(ctx, URL, json=body)
            except ProviderError as exc:
                if status := RETIRED_STATUS.match(str(exc)):
                    raise _retired(f"HTTP {status[1]}") from None
                raise

        def price_query(loc: Location, count: int) -> Callable[[], Awaitable[Any]]:
            variables = {"lowestPriceInput": loc.price_input(count)}
            return lambda: query({"query": PRICE_QUERY, "variables": variables})

        meta = parse_metadata(await query({"query": META_QUERY}))
        locations = [Location(True, dc) for dc in dict.fromkeys(meta.datacenters)]
        locations += [Location(False, cc) for cc in dict.fromkeys(meta.countries)]
        combos = [(loc, count) for count in meta.counts() for loc in locations]
        payloads = await gather_bounded([price_query(loc, count) for loc, count in combos], CONCURRENCY)
        return _merge([parse_prices(p, meta, loc, count) for (loc, count), p in zip(combos, payloads, strict=True)])

"""RunPod: anonymous GraphQL at `POST https://api.runpod.io/graphql` (providers.md A.2 §2, B.2).

Flow:
1. one metadata query: `countryCodes`, `dataCenters{id name listed}` and every `gpuTypes` entry with its
   display name, memory and per-cloud maximum GPU count;
2. one price query per (gpuCount, location): secure cloud per *listed* datacenter
   (`lowestPriceInput={secureCloud:true, dataCenterId, gpuCount}`), community cloud per country code
   (`{secureCloud:false, countryCode, gpuCount}`).

Call budget: gpuCount takes only the values 1, 2, 4 and 8 (those not above the largest `maxGpuCount`),
not every integer up to the maximum as gpuhunt does. Those are the pod sizes fine-tuning jobs use, and
it halves the number of calls: 4 × (listed datacenters + country codes) price queries per run (about
180 with RunPod's ~30 datacenters and ~15 countries), sent at most `CONCURRENCY` at a time.

Semantics:
* `securePrice` / `communityPrice` are USD per GPU-hour; the offer price is that × gpuCount;
* `lowestPrice.stockStatus == null` means no capacity for that combination: the row is dropped; a
  non-null status ("High", "Medium", "Low") means `available=True`, kept in attributes["stock_status"];
* region is the datacenter id (secure, e.g. "eu-ro-1") or the country code (community, e.g. "us");
* a size above the type's per-cloud maximum (`maxGpuCountSecureCloud` / `maxGpuCountCommunityCloud`,
  falling back to `maxGpuCount`) or below `minPodGpuCount` is not offered;
* RunPod retired spot pods, so only on-demand offers are produced (`minimumBidPrice` is ignored);
* the GPU name is RunPod's `displayName` ("H100 SXM", "A100 PCIe": it carries the form factor that the
  id "NVIDIA H100 80GB HBM3" lacks); the id is kept in attributes["gpu_id"].

No key is needed. When a `RUNPOD_API_KEY` is present in the fetch context it is sent as RunPod's SDK
does (`?api_key=`); it is not declared in `credentials`, so runs never skip for want of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
    default_interval_for,
)
from providers.http import gather_bounded, post_json, require
from providers.parsing import as_list, to_optional_decimal

URL = "https://api.runpod.io/graphql"
GPU_COUNTS = (1, 2, 4, 8)
CONCURRENCY = 4
API_KEY = "RUNPOD_API_KEY"

META_QUERY = (
    "query GpuTypes { countryCodes dataCenters { id name listed } "
    "gpuTypes { id manufacturer displayName memoryInGb maxGpuCount maxGpuCountCommunityCloud "
    "maxGpuCountSecureCloud minPodGpuCount secureCloud communityCloud } }"
)
PRICE_QUERY = (
    "query GpuPrices($lowestPriceInput: GpuLowestPriceInput) { gpuTypes { id displayName memoryInGb "
    "securePrice communityPrice lowestPrice(input: $lowestPriceInput) { minimumBidPrice "
    "uninterruptablePrice minVcpu minMemory stockStatus countryCode } } }"
)


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


def _data(payload: Any, what: str) -> dict[str, Any]:
    """The `data` object of a GraphQL answer; GraphQL reports failures as `errors` with HTTP 200."""
    if isinstance(payload, dict) and payload.get("errors"):
        errors = payload["errors"]
        first = errors[0] if isinstance(errors, list) and errors else errors
        message = first.get("message") if isinstance(first, dict) else first
        raise ProviderError(f"RunPod GraphQL error in {what}: {str(message)[:200]}")
    data = require(payload, "data", what)
    if not isinstance(data, dict):
        raise ProviderError(f"schema changed: {what} 'data' is not an object")
    return data


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
        where = f"gpuTypes[{i}]"
        gpu_id = str(require(raw, "id", where))
        overall = _int(raw.get("maxGpuCount"), f"{where}.maxGpuCount", 0)
        meta.gpu_types[gpu_id] = GpuType(
            id=gpu_id,
            display_name=str(require(raw, "displayName", where) or gpu_id),
            manufacturer=raw.get("manufacturer"),
            memory_gb=to_optional_decimal(raw.get("memoryInGb"), f"{where}.memoryInGb"),
            max_secure=_int(raw.get("maxGpuCountSecureCloud"), f"{where}.maxGpuCountSecureCloud", overall),
            max_community=_int(raw.get("maxGpuCountCommunityCloud"), f"{where}.maxGpuCountCommunityCloud", overall),
            min_count=_int(raw.get("minPodGpuCount"), f"{where}.minPodGpuCount", 1),
            secure=bool(raw.get("secureCloud", True)),
            community=bool(raw.get("communityCloud", True)),
        )
    return meta


def parse_prices(payload: Any, meta: Metadata, location: Location, count: int) -> ScrapeResult:
    """Offers from one price query: `count` GPUs of each type at `location`."""
    data = _data(payload, f"price query ({location.cloud} {location.id} ×{count})")
    result = ScrapeResult()
    for i, raw in enumerate(as_list(require(data, "gpuTypes", "data"), "gpuTypes")):
        where = f"gpuTypes[{i}] ({location.cloud} {location.id} ×{count})"
        gpu_id = str(require(raw, "id", where))
        lowest = require(raw, "lowestPrice", where)
        if lowest is None or require(lowest, "stockStatus", f"{where}.lowestPrice") is None:
            continue  # no capacity for this size here: RunPod does not offer it
        gpu = meta.gpu_types.get(gpu_id)
        if gpu is None:
            result.skipped.append(f"{where}: GPU type {gpu_id!r} missing from the metadata query")
            continue
        offered = gpu.secure if location.secure else gpu.community
        limit = gpu.max_secure if location.secure else gpu.max_community
        if not offered or count > limit or count < gpu.min_count:
            continue
        per_gpu = to_optional_decimal(
            require(raw, "securePrice" if location.secure else "communityPrice", where), where
        )
        if per_gpu is None or per_gpu <= 0:
            result.skipped.append(f"{where}: {gpu.display_name} has no {location.cloud} price")
            continue
        memory = to_optional_decimal(raw.get("memoryInGb"), f"{where}.memoryInGb") or gpu.memory_gb
        result.offers.append(
            ScrapedOffer(
                key=f"{gpu_id}:{count}:{location.cloud}:{location.id}",
                gpu_name=gpu.display_name,
                gpu_count=Decimal(count),
                price_per_hour=per_gpu * count,
                region=location.id.lower(),
                gpu_memory_gb=memory if memory and memory > 0 else None,
                instance_type=f"{count}x {gpu.display_name}",
                available=True,
                vcpus=to_optional_decimal(lowest.get("minVcpu"), f"{where}.minVcpu"),
                ram_gb=to_optional_decimal(lowest.get("minMemory"), f"{where}.minMemory"),
                attributes={
                    "gpu_id": gpu_id,
                    "cloud": location.cloud,
                    "stock_status": lowest["stockStatus"],
                    **({"manufacturer": gpu.manufacturer} if gpu.manufacturer else {}),
                },
            )
        )
    return result


class RunPod(Provider):
    name = "runpod"
    title = "RunPod"
    kind = ProviderKind.cloud
    homepage = "https://www.runpod.io"
    default_interval = default_interval_for(ProviderKind.cloud)
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.credentials.get(API_KEY)
        params = {"api_key": key} if key else None

        async def query(body: dict[str, Any]) -> Any:
            return await post_json(ctx, URL, json=body, params=params)

        def price_query(loc: Location, count: int) -> Callable[[], Awaitable[Any]]:
            variables = {"lowestPriceInput": loc.price_input(count)}
            return lambda: query({"query": PRICE_QUERY, "variables": variables})

        meta = parse_metadata(await query({"query": META_QUERY}))
        locations = [Location(True, dc) for dc in dict.fromkeys(meta.datacenters)]
        locations += [Location(False, cc) for cc in dict.fromkeys(meta.countries)]
        combos = [(loc, count) for count in meta.counts() for loc in locations]
        payloads = await gather_bounded([price_query(loc, count) for loc, count in combos], CONCURRENCY)
        result = ScrapeResult()
        seen: set[str] = set()
        for (loc, count), payload in zip(combos, payloads, strict=True):
            part = parse_prices(payload, meta, loc, count)
            result.skipped.extend(part.skipped)
            for offer in part.offers:
                if offer.key not in seen:
                    seen.add(offer.key)
                    result.offers.append(offer)
        return result

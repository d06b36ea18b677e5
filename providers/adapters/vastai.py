"""Vast.ai marketplace: `POST /api/v0/bundles/` lists every rentable machine.

Prices (all USD per hour for the whole offer, i.e. all of its `num_gpus` GPUs):
* on-demand is `dph_total`: Vast's hourly total, the machine (`dph_base`) plus the default storage
  allocation (`storage_total_cost`). Without `dph_total` we fall back to `dph_base` (no storage).
* interruptible is what an interruptible rental costs right now: the lowest bid that wins the machine
  (`min_bid`, which is on the `dph_base` basis, storage excluded) plus the same storage charge, so it is
  compared with `dph_total` like with like. Real bundles show why the comparison matters: `min_bid`
  equals `dph_base` on many offers (that "spot" row would only be on-demand minus storage) and is far
  above `dph_total` on others, where other renters have bid the machine up (in one capture 147 of
  1,396 offers; worst a 2x RTX 3090 box with dph_base $0.28/h and min_bid $29.33/h). So a spot offer is
  emitted only when it is a real alternative: strictly below the on-demand price on the same basis, by
  more than `SAME_PRICE` (Vast writes `min_bid` to 7 significant digits, so a bid equal to `dph_base`
  can read a hair below it). When storage cannot be told apart from `dph_total`, no spot offer is made.
  It is a floor: a higher bid from someone else interrupts the rental.

Fields read from real bundles (not only from the docs sample):
* `rentable` / `rented` → `available` (the query asks for rentable, unrented machines; absent → True);
* price kind (`providers.contract.PriceKind`): a listed machine's `dph_total` is its asking price. A machine
  marked `rented` (the query excludes them, a captured or relaxed search can hold them) shows the rate its
  renter pays: `transacted`, not orderable; its bid row, if any, is not orderable either. One marked not
  `rentable` (and not rented) is out of stock, which `available` says: its price is still the asking one;
* quality, under stable attribute names for later filtering: `verification` ("verified", "deverified",
  "unverified"; the docs sample's boolean `verified` is mapped onto it), `hosting` ("datacenter" or
  "consumer", from `hosting_type` 1/0, else the boolean `datacenter`), `reliability` (float, from
  `reliability`, else `reliability2`), `storage_cost_per_hour` (USD/h, string);
* cost terms (`providers.cost_terms`, under attributes["cost_terms"]): `storage_cost` ($/GB-month, Vast's
  month being 720 h) → disk_usd_per_gb_month; the disk `dph_total` already pays for (its
  `storage_total_cost` at that rate, 5 GB in real bundles) → included_disk_gb; `inet_down_cost` /
  `inet_up_cost` ($/GB, what the host charges for data in and out) → ingress / egress_usd_per_gb;
  `inet_down` (Mbit/s) → download_mbps;
* kept as Vast names them: `machine_id`, `host_id`, `compute_cap`, `gpu_frac` (the offer's share of the
  machine's GPUs), `discounted_dph_total`, `dph_total_adj`;
* `geolocation` is "Place, CC", "CC" or null, and also ", US" (no place): the region is the lower-case
  country code, then the place as a slug ("us-texas"; "us" alone; "" when null);
* `cpu_cores` may be null (the offer is still a real price, vCPUs unknown);
* `gpu_ram` is MB per GPU (≈ MiB): passed on as GiB and snapped to the card's size by the catalog.
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace
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
from providers.cost_terms import COST_TERMS, terms
from providers.fabric import fabric
from providers.http import post_json_items, require
from providers.parsing import as_list, dropping, gigabytes, slug, to_decimal, to_optional_decimal

URL = "https://console.vast.ai/api/v0/bundles/"
QUERY: dict[str, Any] = {
    "rentable": {"eq": True},
    "rented": {"eq": False},
    "order": [["score", "desc"]],
    "type": "on-demand",
    "limit": 10000,
}
# A bid within this fraction of the on-demand price is the same price, rounded differently (see above).
SAME_PRICE = Decimal("0.00001")
VERIFICATION = {"verified", "deverified", "unverified"}
HOSTING = {0: "consumer", 1: "datacenter"}
KEPT = ("machine_id", "host_id", "compute_cap", "gpu_frac", "discounted_dph_total", "dph_total_adj")


def region_of(geolocation: str | None) -> str:
    """'Texas, US' → 'us-texas'; ', US' → 'us'; 'Québec, CA' → 'ca-quebec'; null → ''."""
    if not geolocation:
        return ""
    # Accents folded to ASCII so a place keeps its letters instead of splitting at them.
    text = unicodedata.normalize("NFKD", geolocation).encode("ascii", "ignore").decode()
    parts = [p.strip() for p in text.split(",")]
    country = parts[-1]
    if len(parts) >= 2 and len(country) == 2 and country.isalpha():
        return slug(country, *parts[:-1])  # slug drops the empty place of ", US"
    return slug(text)


def _money(raw: dict[str, Any], key: str, where: str) -> Decimal | None:
    return to_optional_decimal(raw.get(key), f"{where}.{key}")


def storage_per_hour(raw: dict[str, Any], where: str) -> Decimal | None:
    """What the default storage allocation adds to `dph_base` per hour, when the bundle says."""
    storage = _money(raw, "storage_total_cost", where)
    if storage is None and isinstance(raw.get("search"), dict):
        storage = to_optional_decimal(raw["search"].get("diskHour"), f"{where}.search.diskHour")
    if storage is None:
        base, total = _money(raw, "dph_base", where), _money(raw, "dph_total", where)
        if base is not None and total is not None:
            storage = total - base
    return storage if storage is not None and storage >= 0 else None


def interruptible_price(
    raw: dict[str, Any], on_demand: Decimal, where: str, *, with_storage: bool = True
) -> Decimal | None:
    """The interruptible price on the on-demand price's basis (`with_storage`: on-demand is `dph_total`),
    or None when it is no real alternative: no bid, storage unknown, or not strictly below on-demand."""
    min_bid = _money(raw, "min_bid", where)
    if min_bid is None or min_bid <= 0:
        return None
    if with_storage:
        storage = storage_per_hour(raw, where)
        if storage is None:
            return None  # bid and on-demand would not be on one basis
        price = min_bid + storage
    else:
        price = min_bid  # on-demand fell back to dph_base: neither side carries storage
    return price if price < on_demand * (1 - SAME_PRICE) else None


def _verification(raw: dict[str, Any]) -> str | None:
    value = raw.get("verification")
    if isinstance(value, str) and value.strip().lower() in VERIFICATION:
        return value.strip().lower()
    if isinstance(raw.get("verified"), bool):  # the docs sample's older boolean
        return "verified" if raw["verified"] else "unverified"
    return None


def _hosting(raw: dict[str, Any]) -> str | None:
    kind = raw.get("hosting_type")
    if isinstance(kind, int) and not isinstance(kind, bool) and kind in HOSTING:
        return HOSTING[kind]
    if isinstance(raw.get("datacenter"), bool):
        return "datacenter" if raw["datacenter"] else "consumer"
    return None


def _reliability(raw: dict[str, Any], where: str) -> float | None:
    for key in ("reliability", "reliability2"):
        if (value := to_optional_decimal(raw.get(key), f"{where}.{key}")) is not None:
            return float(value)
    return None


def _rented(raw: dict[str, Any]) -> bool:
    return raw.get("rented", False) is True


def _available(raw: dict[str, Any]) -> bool:
    return raw.get("rentable", True) is not False and not _rented(raw)


# Vast's storage month (gpuhunt and Vast's own disk charge: storage_cost / 30 / 24 per GB-hour).
MONTH_HOURS = Decimal(720)


def _cost_terms(raw: dict[str, Any], where: str) -> dict[str, Any]:
    per_month = _money(raw, "storage_cost", where)
    included = None
    storage_h = _money(raw, "storage_total_cost", where)
    if per_month and per_month > 0 and storage_h is not None and _money(raw, "dph_total", where) is not None:
        included = round(storage_h * MONTH_HOURS / per_month, 3)  # GB the listed price already pays for
    return terms(
        disk_usd_per_gb_month=per_month if per_month is not None and per_month >= 0 else None,
        included_disk_gb=included,
        ingress_usd_per_gb=_non_negative(raw, "inet_down_cost", where),
        egress_usd_per_gb=_non_negative(raw, "inet_up_cost", where),
        download_mbps=mbps if (mbps := _non_negative(raw, "inet_down", where)) else None,  # 0: not measured
    )


def _non_negative(raw: dict[str, Any], key: str, where: str) -> Decimal | None:
    value = _money(raw, key, where)
    return value if value is not None and value >= 0 else None


def _attributes(raw: dict[str, Any], where: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {k: raw[k] for k in KEPT if raw.get(k) is not None}
    # `bw_nvlink` is the GPU-to-GPU bandwidth Vast measured on the host (GB/s; 0 on hosts without NVLink
    # or not measured, so only a positive figure says anything).
    nvlink = to_optional_decimal(raw.get("bw_nvlink"), f"{where}.bw_nvlink")
    if nvlink is not None and nvlink > 0:
        attributes |= fabric(gpu_link="nvlink")
    if cost := _cost_terms(raw, where):
        attributes[COST_TERMS] = cost
    quality = {
        "verification": _verification(raw),
        "hosting": _hosting(raw),
        "reliability": _reliability(raw, where),
        "storage_cost_per_hour": str(s) if (s := storage_per_hour(raw, where)) is not None else None,
    }
    return attributes | {k: v for k, v in quality.items() if v is not None}


def parse(payload: Any) -> ScrapeResult:
    offers = as_list(require(payload, "offers", "response"), "'offers'")
    result = ScrapeResult()
    for i, raw in enumerate(offers):
        add_bundle(result, i, raw)
    return result


def add_bundle(result: ScrapeResult, i: int, raw: Any) -> None:
    """The offers of bundle `offers[i]` added to `result` (a malformed one is dropped with its reason):
    one step of `parse`, and what `VastAi.fetch` does with each bundle as the answer streams in."""
    with dropping(result, f"offers[{i}]"):
        where = f"offers[{i}]"
        offer_id = require(raw, "id", where)
        num_gpus = to_decimal(require(raw, "num_gpus", where), f"{where}.num_gpus")
        if not num_gpus or num_gpus <= 0:
            result.skipped.append(f"{where}: num_gpus={num_gpus}")
            return
        total = _money(raw, "dph_total", where)
        price = total or _money(raw, "dph_base", where)
        if price is None:
            raise ProviderError(f"schema changed: no dph_total/dph_base at {where}")
        gpu_ram_mb = _money(raw, "gpu_ram", where)
        cpu_ram_mb = _money(raw, "cpu_ram", where)
        on_demand = ScrapedOffer(
            key=str(offer_id),
            gpu_name=str(require(raw, "gpu_name", where)),
            gpu_count=num_gpus,
            price_per_hour=price,
            region=region_of(raw.get("geolocation")),
            gpu_memory_gb=gigabytes(gpu_ram_mb, 1024),  # MB per GPU, ≈ MiB
            instance_type=f"machine-{raw['machine_id']}" if raw.get("machine_id") is not None else None,
            available=_available(raw),
            price_kind=PriceKind.transacted if _rented(raw) else PriceKind.asking,
            orderable=not _rented(raw),
            vcpus=to_optional_decimal(raw.get("cpu_cores_effective"), f"{where}.cpu_cores_effective")
            if raw.get("cpu_cores") is not None
            else None,
            ram_gb=gigabytes(cpu_ram_mb, 1000),
            attributes=_attributes(raw, where),
        )
        result.offers.append(on_demand)
        bid = interruptible_price(raw, price, where, with_storage=bool(total))
        if bid is not None:
            # The same machine rented interruptibly: everything but key, price and pricing carries over.
            result.offers.append(
                replace(
                    on_demand,
                    key=f"{offer_id}:bid",
                    price_per_hour=bid,
                    pricing=Pricing.spot,
                    price_kind=PriceKind.asking,  # the bid that wins the machine now, rented or not
                    attributes=on_demand.attributes | {"min_bid": str(_money(raw, "min_bid", where))},
                )
            )


class VastAi(Provider):
    name = "vastai"
    title = "Vast.ai"
    kind = ProviderKind.marketplace
    homepage = "https://vast.ai"
    # 2: interruptible = min_bid + storage, only when below on-demand; availability and quality fields
    # from real bundles; well-formed regions for place-less geolocations. 3: price kind and orderable.
    parser_version = "3"

    # The full marketplace at 200,000 offers is ~77 MB of JSON, past the 64 MiB default: it is parsed as it
    # streams in (memory holds the parsed batch, not the body), so the cap bounds time and bandwidth with
    # room for a marketplace several times that size; a body past it, or a decompression bomb, is refused.
    max_response_bytes = 2**30
    # At most this many bundles per answer (~6x a 200,000-offer marketplace): a body of tiny items costs far
    # more as objects than as bytes, so a count bounds the batch's memory where the byte cap cannot.
    max_bundles = 1_000_000

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        i = 0
        async for raw in post_json_items(ctx, URL, "offers", json=QUERY, max_items=self.max_bundles):
            add_bundle(result, i, raw)
            i += 1
        return result

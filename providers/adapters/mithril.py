"""Mithril (formerly Foundry) spot auction market.

API: `https://api.mithril.ai`, auth `Authorization: Bearer <MITHRIL_API_KEY>` (missing → the run is `skipped`).
Three reads, the ones SkyPilot's fetcher makes (`skypilot-org/skypilot@161a59fc:sky/catalog/data_fetchers/
fetch_mithril.py`):
* `GET /v2/instance-types` → a list of `{fid, name, gpu_type, num_gpus, gpu_memory_gb, num_cpus, ram_gb}`;
* `GET /v2/pricing/current?instance_type=<fid>` → `{minimum_price_cents}`: the auction's reserve price,
  US cents per instance-hour (one request per instance type, at most `CONCURRENCY` at a time);
* `GET /v2/spot/availability` → a list of `{instance_type (fid), region, last_instance_price}`, the last
  clearing price per region as a dollar string ("$12.00") per instance-hour.
No listing is paginated. No rate limit is documented (`requests_per_minute` None); the per-type pricing
calls are bounded to `CONCURRENCY` in flight, and 429s are retried with backoff by `providers.http`.

Mithril rents capacity by auction: a bid at or above the clearing price wins an interruptible instance.
Every offer is therefore `spot`, one per (instance type × region with spot availability), priced at the
region's last clearing price; when a region reports none (or a non-positive one) the reserve price stands
in (`attributes.price_source` says which). The reserve is kept in attributes as well. Neither is a price one
can order at: a clearing price is what the last auction's winners paid (`price_kind` transacted), a reserve
the least a bid must offer (`floor`); both `orderable` False, so market statistics and rankings, which read
asking prices, leave them out unless asked (tracker.market.price_kinds). A listed region has
capacity to bid on: `available` is True. Instance types with no region listed are dropped with a reason, as
are types with neither price.

GPU names: `gpu_type` ("H100") has no form factor, the instance `name` ("h100-80gb.sxm.8x") does: the raw
name passed on is e.g. "H100 SXM 80GB" (originals in attributes).

Docs-built: the bundled cassette uses the field names SkyPilot reads; instance names, shapes, regions and
reserve prices follow SkyPilot's published Mithril catalog; fids and clearing prices are illustrative.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
from providers.http import fan_out, gather_bounded, get_json, require
from providers.parsing import as_list, cents_to_dollars, dropping, parse_money, slug, to_optional_decimal

API = "https://api.mithril.ai"
TYPES_URL = f"{API}/v2/instance-types"
PRICING_URL = f"{API}/v2/pricing/current"
SPOT_URL = f"{API}/v2/spot/availability"
API_KEY = "MITHRIL_API_KEY"
CONCURRENCY = 4


def dollars(value: Any, where: str) -> Decimal | None:
    """'$12.00' / '12.00' / 12 → Decimal dollars (Mithril's "$" is USD); None when absent or blank. A price
    naming another currency ("CA$12", "12 EUR") is a schema change, never read as dollars."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    amount, currency = parse_money(value, where, dollar="USD")
    if currency not in (None, "USD"):
        raise ProviderError(f"schema changed: {value!r} at {where} is not in US dollars")
    return amount


def raw_gpu_name(gpu_type: str, instance_name: str, memory: Decimal | None) -> str:
    """'H100' + 'h100-80gb.sxm.8x' + 80 → 'H100 SXM 80GB'."""
    parts = {p for chunk in instance_name.lower().split(".") for p in chunk.split("-")}
    form = "SXM" if "sxm" in parts else "PCIe" if "pcie" in parts else ""
    size = f"{int(memory)}GB" if memory and memory == int(memory) else ""
    return " ".join(p for p in (gpu_type.strip(), form, size) if p)


def parse(types: Any, reserves: dict[str, Decimal | None], spot: Any) -> ScrapeResult:
    """Offers from the instance-type list, each type's reserve price (dollars, None when it has none) and the
    spot availability list."""
    regions: dict[str, list[tuple[str, Decimal | None]]] = {}
    result = ScrapeResult()
    for i, rec in enumerate(as_list(spot, "spot availability")):
        with dropping(result, f"spot[{i}]"):
            where = f"spot[{i}]"
            fid = str(require(rec, "instance_type", where))
            region = slug(require(rec, "region", where))
            regions.setdefault(fid, []).append(
                (region, dollars(rec.get("last_instance_price"), f"{where}.last_instance_price"))
            )
    seen: set[str] = set()
    for i, raw in enumerate(as_list(types, "instance types")):
        with dropping(result, f"instance_types[{i}]"):
            where = f"instance_types[{i}]"
            fid = str(require(raw, "fid", where))
            name = str(require(raw, "name", where))
            count = to_optional_decimal(require(raw, "num_gpus", where), f"{where}.num_gpus")
            gpu_type = raw.get("gpu_type")
            if not count or count <= 0 or not gpu_type:
                continue  # CPU-only
            listed = regions.get(fid, [])
            if not listed:
                result.skipped.append(f"{name}: no region with spot capacity")
                continue
            reserve = reserves.get(fid)
            memory = to_optional_decimal(raw.get("gpu_memory_gb"), f"{where}.gpu_memory_gb")
            for region, last in listed:
                key = f"{name}:{region}"
                price, source = (last, "last_instance_price") if last and last > 0 else (reserve, "minimum_price")
                if price is None or price <= 0:
                    result.skipped.append(f"{key}: no clearing or reserve price")
                    continue
                if key in seen:
                    result.skipped.append(f"{key}: listed twice")
                    continue
                seen.add(key)
                attributes: dict[str, Any] = {"fid": fid, "raw_gpu": gpu_type, "price_source": source, "auction": True}
                kind = PriceKind.transacted if source == "last_instance_price" else PriceKind.floor
                if reserve is not None:
                    attributes["minimum_price"] = str(reserve)
                result.offers.append(
                    ScrapedOffer(
                        key=key,
                        gpu_name=raw_gpu_name(str(gpu_type), name, memory),
                        gpu_count=count,
                        price_per_hour=price,
                        pricing=Pricing.spot,
                        region=region,
                        gpu_memory_gb=memory,
                        instance_type=name,
                        available=True,
                        price_kind=kind,
                        orderable=False,
                        vcpus=to_optional_decimal(raw.get("num_cpus"), f"{where}.num_cpus"),
                        ram_gb=to_optional_decimal(raw.get("ram_gb"), f"{where}.ram_gb"),
                        attributes=attributes,
                    )
                )
    return result


def reserve_price(payload: Any, fid: str) -> Decimal | None:
    cents = to_optional_decimal(require(payload, "minimum_price_cents", f"pricing {fid}"), f"pricing {fid}")
    return cents_to_dollars(cents) if cents is not None else None


class Mithril(Provider):
    name = "mithril"
    title = "Mithril (spot auction)"
    kind = ProviderKind.marketplace
    homepage = "https://mithril.ai/pricing"
    credentials = (API_KEY,)
    parser_version = "2"  # 2: clearing prices are transacted, reserve prices floors
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        types = await get_json(ctx, TYPES_URL, headers=headers)
        # One pricing request per distinct GPU type, at most MAX_FAN_OUT (a listing that repeats a type, or
        # lists thousands, no longer multiplies authenticated requests); a type without a usable fid is
        # dropped with its reason by `parse`, not here.
        fids = fan_out(
            (
                str(raw["fid"])
                for raw in as_list(types, "instance types")
                if isinstance(raw, dict) and raw.get("num_gpus") and isinstance(raw.get("fid"), str | int)
            ),
            "Mithril GPU instance types",
        )

        def pricing(fid: str) -> Callable[[], Awaitable[Any]]:
            return lambda: get_json(ctx, PRICING_URL, params={"instance_type": fid}, headers=headers)

        answers = await gather_bounded([pricing(fid) for fid in fids], CONCURRENCY)
        reserves = {fid: reserve_price(answer, fid) for fid, answer in zip(fids, answers, strict=True)}
        spot = await get_json(ctx, SPOT_URL, headers=headers)
        if not isinstance(spot, list):
            raise ProviderError("schema changed: /v2/spot/availability is not a list")
        return parse(types, reserves, spot)

"""Hyperstack (NexGen Cloud): `GET /v1/core/flavors` lists VM flavors per GPU and region, and
`GET /v1/pricebook` gives the hourly rate per resource.

Quirks handled here:
* auth is an `api_key: <key>` header;
* the pricebook is keyed by GPU name ("H100-80G-PCIe") with a per-GPU `value` (a decimal string, the
  rate after any running promotion; `original_value` is kept in attributes) that covers the whole VM, so
  a flavor's price = value × `gpu_count`;
* the flavors response is grouped `data[].{gpu, region_name, flavors[]}`; `status: false` means the call
  failed even with HTTP 200;
* GPU names encode memory as "-80G-" and the form factor as a suffix ("H100-80G-PCIe", "H100-80G-SXM5",
  "A100-80G-PCIe-NVLink", "RTX-A6000", "L40"): the name is passed on unchanged (the GPU catalog reads
  these) and the "<n>G" token gives `gpu_memory_gb` when present;
* `stock_available` is the flavor's live availability in its region; CPU-only flavors (`gpu` empty,
  `gpu_count` 0) are skipped; a GPU the pricebook does not price is reported in `skipped`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, redacting_secrets, require
from providers.parsing import as_list, dropping, memory_in_name, to_decimal, to_optional_decimal

API = "https://infrahub-api.nexgencloud.com/v1"
FLAVORS_URL = f"{API}/core/flavors"
PRICEBOOK_URL = f"{API}/pricebook"


def _opt_dec(value: Any, where: str) -> Decimal | None:
    return to_optional_decimal(value, where, blank_is_none=True)


def _plain(value: Decimal) -> Decimal:
    """'1.900000000' → 1.9 (no exponent notation: 10.000 → 10)."""
    value = value.normalize()
    return value.quantize(Decimal(1)) if value.as_tuple().exponent > 0 else value  # type: ignore[operator]


def parse_pricebook(payload: Any) -> dict[str, dict[str, Any]]:
    """`[{name, value, original_value, …}]` → {lower-cased name: entry with `value` as Decimal}."""
    book: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(as_list(payload, "pricebook")):
        where = f"pricebook[{i}]"
        name = str(require(entry, "name", where)).strip()
        value = _opt_dec(require(entry, "value", where), f"{where}.value")
        if not name or value is None or name.lower() in book:
            continue
        book[name.lower()] = {
            "value": _plain(value),
            "original_value": entry.get("original_value"),
            "discount_applied": entry.get("discount_applied"),
        }
    return book


def parse(flavors_payload: Any, pricebook_payload: Any) -> ScrapeResult:
    if isinstance(flavors_payload, dict) and flavors_payload.get("status") is False:
        message = str(flavors_payload.get("message") or "no message")[:200]
        raise ProviderError(f"flavors call failed: {message}")
    groups = as_list(require(flavors_payload, "data", "flavors response"), "flavors 'data'")
    book = parse_pricebook(pricebook_payload)
    result = ScrapeResult()
    unpriced: set[str] = set()
    for i, group in enumerate(groups):
        with dropping(result, f"data[{i}]"):
            where = f"data[{i}]"
            for j, flavor in enumerate(as_list(require(group, "flavors", where), "flavors", where)):
                with dropping(result, f"data[{i}].flavors[{j}]"):
                    fwhere = f"{where}.flavors[{j}]"
                    name = str(require(flavor, "name", fwhere))
                    raw_gpu = str(flavor.get("gpu") or group.get("gpu") or "").strip()
                    count = to_decimal(require(flavor, "gpu_count", fwhere), f"{fwhere}.gpu_count")
                    if not raw_gpu or count <= 0:
                        continue  # CPU-only flavor
                    price = book.get(raw_gpu.lower())
                    if price is None:
                        if raw_gpu not in unpriced:
                            unpriced.add(raw_gpu)
                            result.skipped.append(f"{raw_gpu}: not in the pricebook")
                        continue
                    if price["value"] <= 0:
                        result.skipped.append(f"{name}: pricebook value {price['value']}")
                        continue
                    region = str(flavor.get("region_name") or group.get("region_name") or "").strip().lower()
                    stock = flavor.get("stock_available")
                    attributes: dict[str, Any] = {"price_per_gpu_hr": str(price["value"])}
                    if price["discount_applied"]:
                        attributes["original_value"] = price["original_value"]
                    result.offers.append(
                        ScrapedOffer(
                            key=f"{name}:{region}",
                            gpu_name=raw_gpu,
                            gpu_count=count,
                            price_per_hour=price["value"] * count,
                            region=region,
                            gpu_memory_gb=memory_in_name(raw_gpu),
                            instance_type=name,
                            available=stock if isinstance(stock, bool) else None,
                            vcpus=_opt_dec(flavor.get("cpu"), f"{fwhere}.cpu"),
                            ram_gb=_opt_dec(flavor.get("ram"), f"{fwhere}.ram"),
                            attributes=attributes,
                        )
                    )
    return result


class Hyperstack(Provider):
    name = "hyperstack"
    title = "Hyperstack (NexGen Cloud)"
    kind = ProviderKind.cloud
    homepage = "https://www.hyperstack.cloud"
    credentials = ("HYPERSTACK_API_KEY",)
    parser_version = "2"  # 2: region codes in the one region form (slug)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("HYPERSTACK_API_KEY")
        headers = {"api_key": key}
        with redacting_secrets(key):
            flavors = await get_json(ctx, FLAVORS_URL, headers=headers)
            pricebook = await get_json(ctx, PRICEBOOK_URL, headers=headers)
            return parse(flavors, pricebook)

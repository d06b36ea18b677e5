"""Seeweb: Italian cloud GPU servers.

API: `GET https://api.seeweb.it/ecs/v2/plans`, every ECS plan with its hourly price and the regions it can
be created in (the endpoint gpuhunt's `seeweb.py` and SkyPilot's `fetch_seeweb.py` read). Auth: header
`X-APITOKEN: <token>` (`SEEWEB_API_TOKEN`; missing → the run is skipped). One request, no pagination.

Shape: `{status, plans: [{name, cpu, ram, disk, gpu, gpu_label, hourly_price, available,
available_regions: [{location}]}]}`. Numbers may come as strings with units ("8 cores", "32768 MB",
"1 GPU", "$0.85"), so each is read as the first number in the text. `ram` is MiB (→ GiB), `gpu` is the GPU
count, `gpu_label` names the card with its memory ("L40s 48GB", "A100 80GB"; passed on as the raw name,
with the memory parsed into `gpu_memory_gb`). `available: false` means the plan is retired (not a capacity
signal: gpuhunt's reading), so such plans are dropped; `available_regions` are where the plan can be
ordered, not free capacity, so `available` is None. CPU-only plans (`gpu` 0, no `gpu_label`) are skipped.
`/plans/availables` (capacity) is not read: no reader documents its response, so a parser for it would be a
guess.

Currency: Seeweb's price list is in euros (seeweb.it quotes € per hour, VAT excluded) and the API carries
no currency field in the readers' shape, so a bare number is EUR by that documented default
(`attributes["currency_source"] = "provider default"`). A `currency` field on the plan, or a currency sign
in a string price ("$0.85", "€0.85"), overrides it; an unknown sign or code drops that plan with the reason
(never a silent USD). Prices are per plan (the whole server), on demand only.

Rate limit: none documented; one request per run.

Docs-built: the cassette mirrors the `/plans` shape of gpuhunt's fixture (`dstackai/gpuhunt@310de515:
src/tests/providers/test_seeweb.py`, "mirrors the live /plans shape") with illustrative prices.
"""

from __future__ import annotations

import re
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
from providers.http import get_json, require
from providers.parsing import ISO_CODES, as_list, memory_in_name, parse_money, slug

URL = "https://api.seeweb.it/ecs/v2/plans"
DEFAULT_CURRENCY = "EUR"  # Seeweb's published price list is in euros
MIB_PER_GIB = 1024
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Accelerators the catalog has no entry for and that are not GPUs in the tracker's sense.
NOT_GPUS = ("TENSTORRENT", "GRAYSKULL", "WORMHOLE")


def number_in(value: Any) -> Decimal | None:
    """The first number in a JSON number or a string with units ("32768 MB" → 32768); None when there is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _NUMBER.search(str(value))
    return Decimal(match[0]) if match else None


def _price_text(plan: dict[str, Any]) -> tuple[Decimal, str | None] | str:
    """`hourly_price` through the one money reader (`providers.parsing.parse_money`): (amount, the code its
    text names or None), or why it cannot be read. A bare "$" is USD, as Seeweb's API writes dollar prices;
    "CA$", "A$", "HK$" name their own dollars, never USD."""
    try:
        return parse_money(plan.get("hourly_price"), "hourly_price", dollar="USD")
    except ProviderError as exc:
        return str(exc)


def currency_of(plan: dict[str, Any]) -> tuple[str | None, str]:
    """(ISO code or None when it cannot be told, where it came from) for a plan's `hourly_price`."""
    read = _price_text(plan)
    named = read[1] if isinstance(read, tuple) else None
    stated = plan.get("currency")
    if isinstance(stated, str) and stated.strip():
        code = stated.strip().upper()
        agrees = code in ISO_CODES and named in (None, code)
        return (code if agrees else None), "currency field"
    price = plan.get("hourly_price")
    if isinstance(price, str):
        if not isinstance(read, tuple):
            return None, f"price text {price!r}"
        if named:
            return named, "price text"
    return DEFAULT_CURRENCY, "provider default"


def _regions(plan: dict[str, Any]) -> list[str] | None:
    regions = plan.get("available_regions")
    if not isinstance(regions, list):
        return None
    codes = [slug(r.get("location")) for r in regions if isinstance(r, dict) and isinstance(r.get("location"), str)]
    return list(dict.fromkeys(code for code in codes if code))


def _plan(plan: Any, where: str, result: ScrapeResult) -> None:
    name = str(require(plan, "name", where))
    require(plan, "hourly_price", where)
    label = plan.get("gpu_label")
    count = number_in(plan.get("gpu"))
    if not label or not count:
        return  # CPU-only plan
    label = " ".join(str(label).split())
    if plan.get("available") is False:
        result.skipped.append(f"{name}: plan not available (retired)")
        return
    if any(marker in label.upper() for marker in NOT_GPUS):
        result.skipped.append(f"{name}: {label!r} is not a GPU the catalog tracks")
        return
    read = _price_text(plan)
    if isinstance(read, str):
        result.skipped.append(f"{name}: {read}")
        return
    price = read[0]
    if price <= 0:
        result.skipped.append(f"{name}: hourly_price {plan.get('hourly_price')!r}")
        return
    currency, source = currency_of(plan)
    if currency is None:
        result.skipped.append(f"{name}: currency cannot be told from the {source}")
        return
    regions = _regions(plan)
    if not regions:
        result.skipped.append(f"{name}: no available_regions")
        return
    ram = number_in(plan.get("ram"))
    attributes: dict[str, Any] = {"raw_gpu": label}
    if source != "currency field":
        attributes["currency_source"] = source
    if (disk := number_in(plan.get("disk"))) is not None:
        attributes["disk_gb"] = str(disk)
    for region in regions:
        result.offers.append(
            ScrapedOffer(
                key=f"{name}:{region}",
                gpu_name=label,
                gpu_count=count,
                price_per_hour=price,
                region=region,
                gpu_memory_gb=memory_in_name(label),
                instance_type=name,
                available=None,
                vcpus=number_in(plan.get("cpu")),
                ram_gb=(ram / MIB_PER_GIB).quantize(Decimal("0.01")) if ram else None,
                attributes=dict(attributes),
                currency=currency,
            )
        )


def parse(payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    for i, plan in enumerate(as_list(require(payload, "plans", "response"), "plans")):
        if not isinstance(plan, dict):
            result.skipped.append(f"plans[{i}]: not an object")
            continue
        _plan(plan, f"plans[{i}]", result)
    return result


class Seeweb(Provider):
    name = "seeweb"
    title = "Seeweb"
    kind = ProviderKind.cloud
    homepage = "https://www.seeweb.it/en/products/cloud-server-gpu"
    credentials = ("SEEWEB_API_TOKEN",)
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        token = ctx.secret("SEEWEB_API_TOKEN")
        return parse(await get_json(ctx, URL, headers={"X-APITOKEN": token}))

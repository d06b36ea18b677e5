"""OVHcloud Public Cloud GPU instances, priced per OVH subsidiary in its own currency.

API: the public order catalog, `GET {api}/1.0/order/catalog/public/cloud?ovhSubsidiary=<XX>`, anonymous (no
credentials). One request per subsidiary: FR on `eu.api.ovh.com` (EUR), CA on `ca.api.ovh.com` (CAD) and US on
`api.us.ovhcloud.com` (USD). The currency is never assumed from the subsidiary: it is read from the catalog's
`locale.currencyCode`; a catalog without one yields no offers (each reported in `skipped`), never USD.

Shape (as OVH's own manager and SpareCores' crawler read it):
* `plans[planCode == "project"].addonFamilies[name == "instance"].addons` lists the instance plan codes;
  each is an entry of `addons[]` with `planCode` ("h100-380.consumption", "h100-380.monthly.postpaid"),
  `invoiceName`, `pricings[]` and `blobs.technical.{name, cpu.cores, memory.size (GiB), gpu.{number, model,
  memory.size}}`. Windows flavors (`win-…`) are left out: their price includes a licence;
* `pricings[].price` is an integer in **1e-8 of the currency** (279000000 → 2.79), **net of tax**: the
  `locale.taxRate` is kept in attributes with `tax_included: false`;
* the `.consumption` plan (`intervalUnit` "hour") is the on-demand price per instance-hour; the
  `.monthly.postpaid` plan (`intervalUnit` "month") is a one-month commitment: a `reserved` offer with
  `reserved_term="1mo"` at the monthly price / 730 h (the monthly amount kept in attributes);
* regions: `configurations[name == "region"].values` of a flavor's plans, merged across its plans (an
  hourly plan may list none while its monthly plan lists them all, per SpareCores). They say where the flavor
  can be ordered, not live capacity: `available` is None. A flavor with no region list anywhere keeps one
  region-less offer per plan. Region codes are lower-cased ("GRA11" → "gra11");
* keys are `<subsidiary>:<flavor>:<region>` (+ ":1mo" for the monthly plan): the same machine quoted by
  two subsidiaries is two prices in two currencies.

OVH bills per second since 2026-07; the price unit stays the hour.

Rate limit: none documented for the public catalog; three requests per run, one per subsidiary.

Docs-built: the cassette follows the catalog fields OVH's manager (`ovh/manager`: `addons[].planCode,
pricings[].price`, `locale`) and SpareCores' `sc_crawler/vendors/ovh.py` read (`addonFamilies`,
`configurations`, `blobs.technical`); flavors are OVH's GPU range, prices illustrative.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require
from providers.parsing import as_list, dropping, slug, to_decimal, to_optional_decimal

# (ovhSubsidiary, API root): each subsidiary prices in its own currency, read from the catalog's locale.
SUBSIDIARIES: tuple[tuple[str, str], ...] = (
    ("FR", "https://eu.api.ovh.com/1.0"),
    ("CA", "https://ca.api.ovh.com/1.0"),
    ("US", "https://api.us.ovhcloud.com/1.0"),
)
CATALOG_PATH = "/order/catalog/public/cloud"
PRICE_UNIT = Decimal("1e8")  # catalog prices are integers in 1e-8 of the currency
HOURS_PER_MONTH = Decimal(730)  # a month's commitment turned into an effective hourly price
WINDOWS_PREFIX = "win-"


@dataclass(frozen=True, slots=True)
class _Plan:
    flavor: str
    plan_code: str
    price: Decimal  # per instance-hour, in the catalog currency
    pricing: Pricing
    term: str | None
    monthly: Decimal | None
    technical: dict[str, Any]


def _object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: optional blobs may be absent or null."""
    return value if isinstance(value, dict) else {}


def url_for(api: str) -> str:
    return f"{api}{CATALOG_PATH}"


def _instance_codes(catalog: Any) -> set[str] | None:
    """Plan codes of the `project` plan's `instance` addon family; None when the catalog has no such plan."""
    plans = catalog.get("plans")
    for plan in plans if isinstance(plans, list) else []:
        if isinstance(plan, dict) and plan.get("planCode") == "project":
            for family in as_list(plan.get("addonFamilies") or [], "plans[project].addonFamilies"):
                if isinstance(family, dict) and family.get("name") == "instance":
                    return {str(code) for code in as_list(family.get("addons") or [], "addonFamilies[instance].addons")}
    return None


def _regions(addon: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for configuration in as_list(addon.get("configurations") or [], "configurations", str(addon.get("planCode"))):
        if isinstance(configuration, dict) and configuration.get("name") == "region":
            values = as_list(configuration.get("values") or [], "region values", str(addon.get("planCode")))
            found += [code for value in values if (code := slug(value))]
    return found


def _plan(addon: dict[str, Any], where: str) -> _Plan | str | None:
    """The addon as a priced plan, a reason it cannot be one, or None when it is not a GPU Linux flavor."""
    code = str(require(addon, "planCode", where))
    blobs = _object(addon.get("blobs"))
    technical = _object(blobs.get("technical"))
    gpu = technical.get("gpu")
    flavor = str(technical.get("name") or addon.get("invoiceName") or code.split(".", 1)[0])
    if not isinstance(gpu, dict) or not gpu.get("number") or flavor.startswith(WINDOWS_PREFIX):
        return None
    pricings = as_list(require(addon, "pricings", where), "pricings", where)
    if not pricings:
        return f"{code}: no pricings"
    first = pricings[0]
    unit = str(require(first, "intervalUnit", f"{where}.pricings[0]"))
    raw = require(first, "price", f"{where}.pricings[0]")
    # A null price drops that plan with the reason, not the subsidiary's whole catalog with it.
    units = to_optional_decimal(raw, f"{where}.pricings[0].price", blank_is_none=True)
    amount = units / PRICE_UNIT if units is not None else Decimal(0)
    if amount <= 0:
        return f"{code}: price {raw!r}"
    if unit == "hour":
        return _Plan(flavor, code, amount, Pricing.on_demand, None, None, technical)
    if unit == "month":
        return _Plan(flavor, code, amount / HOURS_PER_MONTH, Pricing.reserved, "1mo", amount, technical)
    return f"{code}: priced per {unit!r}"


def parse(payload: Any, subsidiary: str) -> ScrapeResult:
    """One subsidiary's catalog."""
    result = ScrapeResult()
    locale = require(payload, "locale", "catalog")
    currency = str(locale.get("currencyCode") or "").strip().upper() if isinstance(locale, dict) else ""
    tax_rate = to_optional_decimal(locale.get("taxRate"), "locale.taxRate") if isinstance(locale, dict) else None
    addons = as_list(require(payload, "addons", "catalog"), "addons")
    wanted = _instance_codes(payload)
    plans: list[_Plan] = []
    regions: dict[str, list[str]] = {}
    for i, addon in enumerate(addons):
        with dropping(result, f"addons[{i}]"):
            if not isinstance(addon, dict):
                continue
            code = str(addon.get("planCode", ""))
            if wanted is not None and code not in wanted:
                continue
            if wanted is None and addon.get("product") != "publiccloud-instance":
                continue
            plan = _plan(addon, f"addons[{i}]")
            if plan is None:
                continue
            if isinstance(plan, str):
                result.skipped.append(f"{subsidiary}: {plan}")
                continue
            plans.append(plan)
            regions.setdefault(plan.flavor, [])
            regions[plan.flavor] += [r for r in _regions(addon) if r not in regions[plan.flavor]]
    if len(currency) != 3 or not currency.isalpha():
        result.skipped += [f"{subsidiary}: {p.plan_code}: catalog has no locale.currencyCode" for p in plans]
        return result
    prefix = subsidiary.lower()
    for plan in plans:
        with dropping(result, f"plan {plan.plan_code}"):
            technical = plan.technical
            gpu = technical["gpu"]
            memory = _object(gpu.get("memory"))
            per_gpu = to_optional_decimal(memory.get("size"), f"{plan.plan_code}.gpu.memory.size")
            model = str(gpu.get("model") or "").strip()
            if not model:
                result.skipped.append(f"{subsidiary}: {plan.plan_code}: GPU without a model")
                continue
            cpu = _object(technical.get("cpu"))
            ram = _object(technical.get("memory"))
            attributes: dict[str, Any] = {
                "raw_gpu": model,
                "plan_code": plan.plan_code,
                "ovh_subsidiary": subsidiary,
                "tax_included": False,
            }
            if tax_rate is not None:
                attributes["tax_rate"] = str(tax_rate)
            if plan.monthly is not None:
                monthly = f"{plan.monthly.normalize():f}"
                attributes |= {"monthly_price": monthly, "hours_per_month": int(HOURS_PER_MONTH)}
            suffix = f":{plan.term}" if plan.term else ""
            for region in regions[plan.flavor] or [""]:
                where = f":{region}" if region else ""
                result.offers.append(
                    ScrapedOffer(
                        key=f"{prefix}:{plan.flavor}{where}{suffix}",
                        gpu_name=f"{model} {per_gpu.normalize():f}GB" if per_gpu else model,
                        gpu_count=to_decimal(gpu["number"], f"{plan.plan_code}.gpu.number"),
                        price_per_hour=plan.price,
                        pricing=plan.pricing,
                        reserved_term=plan.term,
                        region=region,
                        gpu_memory_gb=per_gpu,
                        instance_type=plan.flavor,
                        available=None,
                        vcpus=to_optional_decimal(cpu.get("cores"), f"{plan.plan_code}.cpu.cores"),
                        ram_gb=to_optional_decimal(ram.get("size"), f"{plan.plan_code}.memory.size"),
                        attributes=dict(attributes),
                        currency=currency,
                    )
                )
    return result


class OvhCloud(Provider):
    name = "ovhcloud"
    title = "OVHcloud"
    kind = ProviderKind.cloud
    homepage = "https://www.ovhcloud.com/en/public-cloud/prices/"
    credentials = ()
    requests_per_minute = None  # none documented for the public catalog; one request per subsidiary
    parser_version = "1"

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        result = ScrapeResult()
        for subsidiary, api in SUBSIDIARIES:
            catalog = await get_json(ctx, url_for(api), params={"ovhSubsidiary": subsidiary})
            part = parse(catalog, subsidiary)
            result.offers += part.offers
            result.skipped += part.skipped
        return result

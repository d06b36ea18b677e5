"""Oracle Cloud (OCI): the public Cost Estimator data files.

`GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json` (compute shapes and the price
parts they consume) and `GET …/products.json` (the price of each part), no authentication.

Semantics:
* a GPU shape is one with `gpuQty > 0`; CPU-only shapes are skipped silently, hidden shapes too;
* its price part is the shape's product of type "ocpu", whose price (USD `PAY_AS_YOU_GO`, the first
  non-zero one) is per GPU-hour; the offer price is that × `gpuQty`. A part whose `metricName` says it is
  billed per OCPU rather than per GPU is reported in `result.skipped` instead of being mispriced;
* OCI publishes no per-region prices or capacity: OCI list prices are the same in every commercial
  region, so each shape is ONE offer with region "" (unknown), not one copy per region;
* preemptible capacity costs 50% of on-demand (OCI documentation; the price files carry no preemptible
  price): shapes with `allowPreemptible` also get a `spot` offer at half the on-demand price, marked
  `attributes["derived_price"] = "50% of on-demand (OCI preemptible discount)"`;
* quantities may be floats (`gpuQty: 8.0`, a memory `qty: 81.6`): they are read as Decimal, never
  truncated or rejected;
* the GPU model comes from the shape name (`BM.GPU.H100.8`, `VM.GPU.A10.1`, `BM.GPU4.8` …) through
  `MODELS`, which adds the form factor and per-GPU memory ("H100 SXM 80GB"); `gpuMemoryQty` is total for
  most shapes but per GPU for a few, so it is not used. An unknown model token is passed on as-is;
* real shape names may carry a display suffix: "BM.GPU.GB200.4 (NVL72)", "BM.GPU.GB300.4 (NVL72)". The
  shape is read without it (`instance_type` is the bare shape), the suffix is kept in
  `attributes["shape_suffix"]`, and the key keeps the full name so a suffixed and a bare listing of the
  same shape stay two offers;
* CPU shapes (no `gpuQty`) are skipped before any of their parts are read, so their fractional or odd
  quantities (the real estimator data has `qty: 81.6`) can never fail the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
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
from providers.parsing import as_list, dropping, to_optional_decimal

BASE = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
SHAPES_URL = f"{BASE}/shapes.json"
PRODUCTS_URL = f"{BASE}/products.json"
PREEMPTIBLE_FACTOR = Decimal("0.5")
DERIVED = "50% of on-demand (OCI preemptible discount)"

SHAPE_NAME = re.compile(
    r"^(?P<shape>(?:BM|VM)\.GPU(?P<gen>\d*)(?:\.(?P<model>[A-Za-z0-9-]+))?\.(?P<n>\d+))"
    r"(?:\s*\((?P<suffix>[^()]*)\))?$"
)


@dataclass(frozen=True, slots=True)
class Model:
    gpu: str  # raw name with form factor and memory
    memory_gb: Decimal


# Shape name token (generation digit "GPU4" or model "GPU.H100") → GPU.
MODELS: dict[str, Model] = {
    "2": Model("P100 16GB", Decimal(16)),
    "3": Model("V100 SXM2 16GB", Decimal(16)),
    "4": Model("A100 SXM 40GB", Decimal(40)),
    "A10": Model("A10 24GB", Decimal(24)),
    "A100-v2": Model("A100 SXM 80GB", Decimal(80)),
    "H100": Model("H100 SXM 80GB", Decimal(80)),
    "H200": Model("H200 SXM 141GB", Decimal(141)),
    "L40S": Model("L40S 48GB", Decimal(48)),
    "B200": Model("B200 180GB", Decimal(180)),
    "GB200": Model("GB200 186GB", Decimal(186)),
    "GB300": Model("GB300 288GB", Decimal(288)),
    "MI300X": Model("MI300X 192GB", Decimal(192)),
}


def _dec(value: Any, where: str) -> Decimal | None:
    """An optional number; a whole one loses its fraction (gpuQty 8.0 → 8)."""
    number = to_optional_decimal(value, where)
    if number is None:
        return None
    return number.to_integral_value() if number == number.to_integral_value() else number


def _value(obj: Any) -> Any:
    """OCI wraps enums as {"value": "ocpu"}; accept a bare string too."""
    return obj.get("value") if isinstance(obj, dict) else obj


def _items(payload: Any, what: str) -> list[Any]:
    return as_list(require(payload, "items", what), f"{what} 'items'")


@dataclass(frozen=True, slots=True)
class Part:
    price: Decimal
    metric: str


def parse_products(payload: Any, result: ScrapeResult | None = None) -> dict[str, Part]:
    """partNumber → USD pay-as-you-go price; parts without one are left out (a malformed one with its
    reason in `result`)."""
    result = result if result is not None else ScrapeResult()
    parts: dict[str, Part] = {}
    for i, item in enumerate(_items(payload, "products.json")):
        with dropping(result, f"products.json items[{i}]"):
            where = f"products.json items[{i}]"
            number = require(item, "partNumber", where)
            localized = require(item, "currencyCodeLocalizations", where)
            localizations = as_list(localized, "currencyCodeLocalizations", where)
            for loc in localizations:
                if not isinstance(loc, dict) or loc.get("currencyCode") != "USD":
                    continue
                for price in as_list(require(loc, "prices", f"{where} USD"), "prices", where):
                    if isinstance(price, dict) and price.get("model") == "PAY_AS_YOU_GO":
                        value = _dec(require(price, "value", f"{where} price"), f"{where} price")
                        if value is not None and value > 0:
                            parts[str(number)] = Part(value, str(item.get("metricName") or ""))
                            break
                if str(number) in parts:
                    break
    return parts


def split_shape(name: str) -> tuple[str, str | None]:
    """'BM.GPU.GB200.4 (NVL72)' → ('BM.GPU.GB200.4', 'NVL72'); a name that is no GPU shape is returned whole."""
    match = SHAPE_NAME.match(name.strip())
    if match is None:
        return name, None
    suffix = (match.group("suffix") or "").strip()
    return match.group("shape"), suffix or None


def gpu_model(shape: str) -> tuple[str, Decimal | None]:
    """(raw GPU name, per-GPU memory or None) from a shape name, display suffix or not."""
    match = SHAPE_NAME.match(shape.strip())
    token = (match.group("model") or match.group("gen")) if match else None
    if token and token in MODELS:
        return MODELS[token].gpu, MODELS[token].memory_gb
    return (token or shape), None


def parse(shapes_payload: Any, products_payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    parts = parse_products(products_payload, result)
    keys: set[str] = set()
    for i, shape in enumerate(_items(shapes_payload, "shapes.json")):
        with dropping(result, f"shapes[{i}]"):
            where = f"shapes.json items[{i}]"
            name = str(require(shape, "name", where))
            gpus = _dec(shape.get("gpuQty"), f"{where}.gpuQty")
            if gpus is None or gpus <= 0 or shape.get("hidden"):
                continue
            products = as_list(require(shape, "products", where), "products", where)
            gpu_parts = [p for p in products if isinstance(p, dict) and _value(p.get("type")) == "ocpu"]
            if len(gpu_parts) != 1:
                result.skipped.append(f"{name}: expected one 'ocpu' price part, found {len(gpu_parts)}")
                continue
            number = str(require(gpu_parts[0], "partNumber", f"{where}.products"))
            part = parts.get(number)
            if part is None:
                result.skipped.append(f"{name}: part {number} has no USD pay-as-you-go price")
                continue
            if "OCPU" in part.metric.upper() and "GPU PER" not in part.metric.upper():
                result.skipped.append(f"{name}: part {number} is billed {part.metric!r}, not per GPU")
                continue
            if name in keys:
                result.skipped.append(f"{name}: duplicate shape")
                continue
            keys.add(name)
            gpu_name, memory = gpu_model(name)
            bare, suffix = split_shape(name)
            price = part.price * gpus
            attributes: dict[str, Any] = {"part_number": number}
            if suffix:
                attributes["shape_suffix"] = suffix
            if part.metric:
                attributes["metric"] = part.metric
            if shape.get("status") is not None:
                attributes["status"] = shape["status"]
            if (qty := _dec(gpu_parts[0].get("qty"), f"{where}.products.qty")) is not None:
                attributes["part_qty"] = str(qty)
            on_demand = ScrapedOffer(
                key=f"{name}:on_demand",
                gpu_name=gpu_name,
                gpu_count=gpus,
                price_per_hour=price,
                region="",
                gpu_memory_gb=memory,
                instance_type=bare,
                available=None,
                ram_gb=_dec(shape.get("bundleMemoryQty"), f"{where}.bundleMemoryQty"),
                attributes=attributes,
            )
            result.offers.append(on_demand)
            if shape.get("allowPreemptible"):
                # Preemptible is the same shape at a derived price: only key, price, pricing and the note differ.
                result.offers.append(
                    replace(
                        on_demand,
                        key=f"{name}:spot",
                        price_per_hour=price * PREEMPTIBLE_FACTOR,
                        pricing=Pricing.spot,
                        attributes=attributes | {"derived_price": DERIVED},
                    )
                )
    return result


class Oci(Provider):
    name = "oci"
    title = "Oracle Cloud Infrastructure"
    kind = ProviderKind.cloud
    homepage = "https://www.oracle.com/cloud/price-list/"
    parser_version = "2"  # 2: shape names with a display suffix ("BM.GPU.GB200.4 (NVL72)"); GB300

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        shapes = await get_json(ctx, SHAPES_URL)
        products = await get_json(ctx, PRODUCTS_URL)
        return parse(shapes, products)

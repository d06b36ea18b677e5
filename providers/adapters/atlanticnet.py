"""Atlantic.Net GPU cloud hosting: the schema.org catalog embedded in its public pricing page,
`GET https://www.atlantic.net/cloud-hosting/gpu-cloud-hosting/`.

Atlantic.Net's Cloud API lists no GPU plans; the page carries every plan as JSON-LD
(`<script type="application/ld+json">`): an `Offer` (or `Product`) with `category: "Accelerated Compute"`,
`name` (the plan, "AH100NVL.240GB"), `priceSpecification[{name ("Linux – On-Demand", "Linux – 1-Year
Term", "Linux – 3-Year Term"), price, priceCurrency, unitCode}]` and `additionalProperty[{name, value}]`
(RAM, vCPU, SSD Storage, Transfer, and GPU where the page states it). No credentials; one request.

UNITS: `price` is the **whole VM** in `priceCurrency` (USD) per `unitCode`: "HUR" per hour, "MON" per
month (÷ 730). The currency is read from the specification or the offer, never assumed: a plan without
one is dropped with its reason.

Pricing: the "On-Demand" specification is the on-demand offer; "1-Year Term" and "3-Year Term" are
`reserved` offers with terms "1y" and "3y" (keys `<plan>:1y`, `<plan>:3y`). Only Linux specifications are
read (a Windows one includes a licence).

GPU: the plan name is `A<MODEL>.<RAM>` ("A" for Accelerated): "AH100NVL.240GB" → "H100 NVL", "AL40S.192GB"
→ "L40S"; the count is the GPU property's leading number when the page gives one ("2 x NVIDIA L40S"), else
1 (the plans are single-GPU). The page states no location and no stock: `region` "", `available` None.

A block that is not JSON, or a plan that cannot be read, is dropped with its reason; a page with no
JSON-LD catalog at all fails the run (the page changed).

Evidence: SHAPE. The JSON-LD structure and the H100 NVL ($3.941/h on demand) and L40S ($1.668/h) figures
follow a public connector's notes ("verified live", `wayneornn/public-pricing@305b3f1a:
src/connectors/live/providers/atlanticnet.js`) and the cloud-gpus PR #74 transcription; the term prices
and the remaining page markup are illustrative.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from html.parser import HTMLParser
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
from providers.http import request
from providers.parsing import reservation_term, to_decimal

URL = "https://www.atlantic.net/cloud-hosting/gpu-cloud-hosting/"
CATEGORY = "accelerated compute"
HOURS_PER_MONTH = Decimal(730)
_UNIT_HOURS = {"HUR": Decimal(1), "MON": HOURS_PER_MONTH}
_TERMS = {"on-demand": None} | {w: reservation_term(w) for w in ("1-year", "3-year")}  # "1y", "3y"
_COUNT = re.compile(r"^\s*(\d+)\s*x\b", re.IGNORECASE)
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


class _JsonLd(HTMLParser):
    """The text of every `<script type="application/ld+json">` block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kind = dict(attrs).get("type") or ""
        self._inside = tag == "script" and kind.strip().lower() == "application/ld+json"
        if self._inside:
            self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._inside = False

    def handle_data(self, data: str) -> None:
        if self._inside:
            self.blocks[-1] += data


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every GPU plan in a JSON-LD document, however it is nested (@graph, offers, itemListElement)."""
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, list):
            todo.extend(reversed(current))
        elif isinstance(current, dict):
            if str(current.get("category") or "").strip().lower() == CATEGORY and "priceSpecification" in current:
                yield current
            todo.extend(reversed(list(current.values())))


def model_of(plan: str) -> str:
    """ "AH100NVL.240GB" → "H100 NVL"; "AL40S.192GB" → "L40S"."""
    head = plan.split(".", 1)[0].strip()
    head = head[1:] if head[:1].upper() == "A" and len(head) > 1 else head
    return re.sub(r"(?<=\w)(NVL|SXM|PCIE)$", r" \1", head.upper()).replace("PCIE", "PCIe")


def _properties(offer: dict[str, Any]) -> dict[str, str]:
    props = offer.get("additionalProperty")
    found: dict[str, str] = {}
    for prop in props if isinstance(props, list) else []:
        if isinstance(prop, dict) and prop.get("name") is not None:
            found[str(prop["name"]).strip().lower()] = str(prop.get("value") or "")
    return found


def _number(text: str | None) -> Decimal | None:
    match = _NUMBER.search(text or "")
    return Decimal(match[1]) if match else None


def parse_plan(offer: dict[str, Any]) -> list[ScrapedOffer]:
    plan = str(offer.get("name") or "").strip()
    if not plan:
        raise ProviderError("a GPU plan without a name")
    props = _properties(offer)
    count_match = _COUNT.match(props.get("gpu", ""))
    count = Decimal(count_match[1]) if count_match else Decimal(1)
    if count <= 0:
        raise ProviderError(f"{plan}: {count} GPUs")
    specs = offer.get("priceSpecification")
    specs = specs if isinstance(specs, list) else [specs]
    offers: list[ScrapedOffer] = []
    for j, spec in enumerate(specs):
        if not isinstance(spec, dict):
            continue
        label = str(spec.get("name") or "").lower()
        if "windows" in label:
            continue
        term_words = [w for w in _TERMS if w in label]
        hours = _UNIT_HOURS.get(str(spec.get("unitCode") or "").upper())
        if not term_words or hours is None:
            continue
        term = _TERMS[term_words[0]]
        currency = str(spec.get("priceCurrency") or offer.get("priceCurrency") or "").strip().upper()
        if len(currency) != 3:
            raise ProviderError(f"{plan}: {spec.get('name')!r} has no priceCurrency")
        price = to_decimal(spec.get("price"), f"{plan}.priceSpecification[{j}].price") / hours
        if price <= 0:
            raise ProviderError(f"{plan}: {spec.get('name')!r} price {price}")
        offers.append(
            ScrapedOffer(
                key=f"{plan}:{term}" if term else plan,
                gpu_name=model_of(plan),
                gpu_count=count,
                price_per_hour=price,
                pricing=Pricing.reserved if term else Pricing.on_demand,
                reserved_term=term,
                instance_type=plan,
                available=None,
                vcpus=_number(props.get("vcpu")),
                ram_gb=_number(props.get("ram")),
                attributes={
                    "price_label": spec.get("name"),
                    "ssd": props.get("ssd storage"),
                    "transfer": props.get("transfer"),
                },
                currency=currency,
            )
        )
    if not offers:
        raise ProviderError(f"{plan}: no Linux on-demand or term price")
    return offers


def parse_page(html: str) -> ScrapeResult:
    reader = _JsonLd()
    reader.feed(html)
    result = ScrapeResult()
    plans: list[dict[str, Any]] = []
    for i, block in enumerate(reader.blocks):
        try:
            plans += list(_walk(json.loads(block)))
        except ValueError as exc:
            result.skipped.append(f"JSON-LD block {i} is not JSON: {exc}")
    if not plans:
        raise ProviderError("schema changed: the GPU page carries no 'Accelerated Compute' JSON-LD plans")
    seen: set[str] = set()
    for plan in plans:
        try:
            offers = parse_plan(plan)
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        for offer in offers:
            if offer.key in seen:
                continue  # the same plan repeated in another block (Product and Offer)
            seen.add(offer.key)
            result.offers.append(offer)
    return result


class AtlanticNet(Provider):
    name = "atlanticnet"
    title = "Atlantic.Net"
    kind = ProviderKind.cloud
    homepage = URL
    credentials = ()
    parser_version = "1"
    requests_per_minute = None  # one page per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        response = await request(ctx, "GET", URL, headers={"accept": "text/html"})
        return parse_page(response.text)

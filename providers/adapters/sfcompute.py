"""SF Compute (San Francisco Compute Company) order-book market: `GET https://api.sfcompute.com/v0/quote`
.

Auth: `Authorization: Bearer <SFCOMPUTE_API_KEY>` (a token from `sf tokens create`; missing → `skipped`).
No rate limit is published (`requests_per_minute` None): one run asks a quote per instance type, cluster
size (`CLUSTER_NODES`) and term, at most `CONCURRENCY` in flight; a 429 is retried with backoff by `providers.http`.

SF Compute has no price list: capacity is sold in BLOCKS (a number of 8-GPU nodes × a duration from a start
time), each priced by the order book. We ask, per instance type and term, for a buy quote of one node
starting now (`min_start_date=max_start_date=NOW`) lasting the term, with the duration window the official
CLI uses (−10 % … +max(1 h, 10 %)). A quote is `{object: "quote", quote: {price, quantity, instance_type,
start_at, end_at} | null}`:
* UNITS: `price` is US cents for the WHOLE block; `quantity` counts nodes of `GPUS_PER_NODE` GPUs (the CLI's
  `getPricePerGpuHourFromQuote` divides by quantity × 8 × hours). We turn it into the offer's price per
  hour for the block's GPUs, `price / 100 / (end_at − start_at in hours)`, whose per-GPU figure is the
  $/GPU-hour; the block shape (nodes, GPUs, hours, total cents, start/end) is kept in attributes;
* a block is bought up front for its whole duration, so every offer is `reserved` with `reserved_term`
  the term asked for ("1d", "7d", "1mo"), never on demand (SF Compute also sells hour-long blocks, but a
  reservation term is whole days or longer in this tracker); a quote whose start is "NOW" (no date)
  is measured from the fetch time rounded up to the next minute, as the market reads "NOW";
* `quote: null` means no block of that shape is on offer now: nothing to price, dropped with a reason.

A quote is capacity one can buy now: `available` is True. The market chooses the cluster: `region` is "".
GPU names: `h100i`/`h100v` are HGX H100 (SXM, 80 GB) nodes with InfiniBand / as VMs, `h200ki` HGX H200 nodes
(Kubernetes, InfiniBand); the raw names passed on say so, the instance type is kept.

Docs-built: the bundled cassette follows the published v0 OpenAPI (`Quote`) and the CLI's arithmetic;
prices illustrative.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
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
from providers.fabric import fabric
from providers.http import gather_bounded, get_json, require
from providers.parsing import cents_to_dollars, term_hours, tidy_decimal, to_optional_decimal

URL = "https://api.sfcompute.com/v0/quote"
API_KEY = "SFCOMPUTE_API_KEY"
GPUS_PER_NODE = 8
CONCURRENCY = 4
HOUR = 3600

# The fabric of each instance type (providers.fabric), as SF Compute's instance-type names document it:
# HGX boards (8 SXM GPUs on NVSwitch); the "i" types (h100i, h200ki) are InfiniBand-connected nodes, the
# "v" type a VM whose inter-node network is not said.
FABRIC: dict[str, dict[str, Any]] = {
    "h100i": fabric(gpu_link="nvswitch", network="infiniband"),
    "h100v": fabric(gpu_link="nvswitch"),
    "h200ki": fabric(gpu_link="nvswitch", network="infiniband"),
}

# instance type → (raw GPU name, memory per GPU GB)
INSTANCE_TYPES: dict[str, tuple[str, Decimal]] = {
    "h100i": ("H100 SXM 80GB", Decimal(80)),
    "h100v": ("H100 SXM 80GB", Decimal(80)),
    "h200ki": ("H200 SXM 141GB", Decimal(141)),
}
# Cluster sizes quoted, in nodes: one node of every type, and a 4-node cluster of the InfiniBand types (a
# multi-node block is priced by the order book on its own, so its $/GPU-hour can differ from one node's).
CLUSTER_NODES: dict[str, tuple[int, ...]] = {"h100i": (1, 4), "h100v": (1,), "h200ki": (1, 4)}
# reserved_term → block duration in seconds; the term's length is the one every reserved price uses
# (`providers.parsing.term_hours`: a month is 730 h), so the label and the block quoted agree.
TERMS: dict[str, int] = {term: int(term_hours(term)) * HOUR for term in ("1d", "7d", "1mo")}


def quote_params(instance_type: str, seconds: int, nodes: int = 1) -> dict[str, str | int]:
    """`nodes` nodes starting now for `seconds`, with the CLI's flexibility on the duration."""
    return {
        "side": "buy",
        "instance_type": instance_type,
        "quantity": nodes,
        "min_start_date": "NOW",
        "max_start_date": "NOW",
        "min_duration": max(1, seconds - math.ceil(seconds * 0.1)),
        "max_duration": max(seconds + HOUR, seconds + math.ceil(seconds * 0.1)),
    }


def _when(value: Any, where: str) -> datetime | None:
    """An ISO 8601 time (UTC-aware); None for "NOW"."""
    if value == "NOW":
        return None
    if not isinstance(value, str):
        raise ProviderError(f"schema changed: expected a date-time at {where}, got {type(value).__name__}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ProviderError(f"schema changed: {value!r} at {where} is not a date-time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _next_minute(now: datetime) -> datetime:
    floor = now.replace(second=0, microsecond=0)
    return floor if floor == now else floor + timedelta(minutes=1)


def parse_quote(
    payload: Any, instance_type: str, term: str, now: datetime, result: ScrapeResult, nodes_asked: int = 1
) -> None:
    """The offer one quote answer prices (or the reason there is none), added to `result`. A cluster of
    several nodes is its own offer (key suffix ":<n>n"): its price per cluster size."""
    where = f"quote {instance_type} {term}" + (f" {nodes_asked} nodes" if nodes_asked > 1 else "")
    quote = require(payload, "quote", where)
    key = f"{instance_type}:{term}" + (f":{nodes_asked}n" if nodes_asked > 1 else "")
    if quote is None:
        result.skipped.append(f"{key}: no block on offer")
        return
    cents = to_optional_decimal(require(quote, "price", where), f"{where}.price")
    nodes = to_optional_decimal(require(quote, "quantity", where), f"{where}.quantity")
    start = _when(require(quote, "start_at", where), f"{where}.start_at") or _next_minute(now)
    end = _when(require(quote, "end_at", where), f"{where}.end_at")
    if end is None:
        raise ProviderError(f"schema changed: {where}.end_at is 'NOW'")
    seconds = Decimal(int((end - start).total_seconds()))
    if cents is None or cents <= 0:
        result.skipped.append(f"{key}: quote without a price")
        return
    if not nodes or nodes <= 0 or seconds <= 0:
        result.skipped.append(f"{key}: quote for an empty block ({nodes} nodes, {seconds} s)")
        return
    name, memory = INSTANCE_TYPES[instance_type]
    hours = seconds / HOUR
    gpus = nodes * GPUS_PER_NODE
    result.offers.append(
        ScrapedOffer(
            key=key,
            gpu_name=name,
            gpu_count=gpus,
            price_per_hour=cents_to_dollars(cents) / hours,
            pricing=Pricing.reserved,
            reserved_term=term,
            gpu_memory_gb=memory,
            instance_type=instance_type,
            available=True,
            attributes={
                "block_nodes": int(nodes),
                "block_gpus": int(gpus),
                "block_hours": str(tidy_decimal(hours)),
                "block_price_cents": str(cents),
                "block_start": start.isoformat(),
                "block_end": end.isoformat(),
            }
            | FABRIC.get(instance_type, {})
            | fabric(gpus_per_node=GPUS_PER_NODE, cluster_nodes=nodes),
        )
    )


class SfCompute(Provider):
    name = "sfcompute"
    title = "SF Compute (block market)"
    kind = ProviderKind.marketplace
    homepage = "https://sfcompute.com/prices"
    credentials = (API_KEY,)
    parser_version = "2"  # 2: 4-node InfiniBand clusters quoted as their own offers; fabric attributes
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        shapes = [(itype, term, n) for itype in INSTANCE_TYPES for n in CLUSTER_NODES[itype] for term in TERMS]

        def ask(itype: str, term: str, nodes: int) -> Callable[[], Awaitable[Any]]:
            return lambda: get_json(ctx, URL, params=quote_params(itype, TERMS[term], nodes), headers=headers)

        now = datetime.now(UTC)
        answers = await gather_bounded([ask(*shape) for shape in shapes], CONCURRENCY)
        result = ScrapeResult()
        for (itype, term, nodes), payload in zip(shapes, answers, strict=True):
            parse_quote(payload, itype, term, now, result, nodes)
        return result

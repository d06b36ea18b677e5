"""Deterministic, realistic benchmark data: a Vast.ai-shaped marketplace and a year of its price history.

The marketplace is generated as the JSON Vast's `/bundles/` endpoint returns (field names and units as
in providers/cassettes/vastai.json) and turned into offers by `providers.adapters.vastai.parse`, so the benchmark
exercises the real parser and the real mix of on-demand bundles plus `min_bid` spot offers.

The history is a stream of hourly batches (a fixed seed, one RNG draw sequence per hour), so the first
K hours of a year-long plan are exactly a K-hour plan: that is what lets the bench bulk-load a year of
change-only rows and still check them against the real ingest path replayed over the first hours.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from providers.adapters.vastai import QUERY, URL, parse
from providers.contract import ScrapedOffer, ScrapeResult
from tracker.ingest.validate import ValidOffer
from tracker.money import to_money as money

# (Vast gpu_name, gpu_ram in MB, share of bundles, typical $/GPU-hour). Names and memory sizes are ones
# the catalog resolves for provider "vastai"; shares lean to consumer cards, as Vast's listing does.
GPU_MIX: tuple[tuple[str, int, float, float], ...] = (
    ("RTX 4090", 24564, 22, 0.35),
    ("RTX 3090", 24576, 14, 0.20),
    ("RTX 5090", 32607, 8, 0.55),
    ("H100 SXM", 81559, 8, 1.90),
    ("RTX A6000", 49140, 5, 0.45),
    ("A100 SXM4", 81920, 5, 1.10),
    ("H100 PCIE", 81559, 4, 1.65),
    ("RTX 6000Ada", 49140, 3, 0.75),
    ("L40S", 46068, 3, 0.80),
    ("A100 PCIE", 81920, 3, 1.00),
    ("H200", 143771, 3, 2.60),
    ("RTX A5000", 24564, 3, 0.22),
    ("A100 SXM4", 40960, 2, 0.80),
    ("H100 NVL", 95830, 2, 2.10),
    ("A40", 46068, 2, 0.40),
    ("L4", 23034, 2, 0.30),
    ("Tesla T4", 15360, 2, 0.12),
    ("RTX A4000", 16376, 2, 0.15),
    ("RTX 4080", 16376, 2, 0.25),
    ("RTX 3080", 10240, 2, 0.12),
    ("B200", 183359, 1, 4.50),
    ("Q RTX 8000", 49152, 1, 0.35),
)
GPU_COUNTS = ((1, 45), (2, 20), (4, 15), (8, 20))
PLACES: tuple[str | None, ...] = (
    "Texas, US",
    "California, US",
    "Oregon, US",
    "Virginia, US",
    "New York, US",
    "Illinois, US",
    "Florida, US",
    "Washington, US",
    "Georgia, US",
    "Utah, US",
    "Quebec, CA",
    "Ontario, CA",
    "British Columbia, CA",
    "Bavaria, DE",
    "Hesse, DE",
    "Berlin, DE",
    "Ile-de-France, FR",
    "North Holland, NL",
    "England, GB",
    "Stockholm, SE",
    "Oslo, NO",
    "Uusimaa, FI",
    "Mazovia, PL",
    "Czechia",
    "Catalonia, ES",
    "Lombardy, IT",
    "Tokyo, JP",
    "Seoul, KR",
    "Taiwan",
    "Singapore, SG",
    "New South Wales, AU",
    "Sao Paulo, BR",
    "Maharashtra, IN",
    "Hong Kong, HK",
    "Israel",
    "Romania",
    "Ukraine",
    "Bulgaria",
    None,
    None,
)
SPOT_SHARE = 0.55  # bundles with a min_bid, i.e. also listed as an interruptible (spot) offer


def _weighted(rng: random.Random, items: Sequence[Any], weights: Sequence[float]) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def _bundle(rng: random.Random, i: int) -> dict[str, Any]:
    name, ram_mb, _, per_gpu = _weighted(rng, GPU_MIX, [g[2] for g in GPU_MIX])
    gpus = _weighted(rng, [c for c, _ in GPU_COUNTS], [w for _, w in GPU_COUNTS])
    # Log-normal spread around the card's typical price: marketplaces have a long tail of dear hosts.
    base = round(per_gpu * gpus * math.exp(rng.gauss(0.0, 0.25)), 4)
    storage = round(rng.uniform(0.0005, 0.02), 4)
    cores = gpus * rng.choice((8, 12, 16, 24, 32))
    place = rng.choice(PLACES)
    datacenter = name.startswith(("H1", "H2", "B2", "A100", "L40S")) and rng.random() < 0.7
    return {
        "id": 20_000_000 + i,
        "machine_id": 10_000 + rng.randrange(60_000),
        "host_id": 1_000 + rng.randrange(90_000),
        "gpu_name": name,
        "num_gpus": gpus,
        "gpu_ram": ram_mb,
        "gpu_total_ram": ram_mb * gpus,
        "compute_cap": 900 if name.startswith(("H1", "H2")) else 890,
        "cuda_max_good": rng.choice((12.2, 12.4, 12.6, 12.8)),
        "cpu_cores": cores * 2 if rng.random() > 0.05 else None,  # Vast sometimes omits it
        "cpu_cores_effective": float(cores),
        "cpu_ram": gpus * rng.choice((64_000, 128_000, 257_000)),
        "disk_space": float(rng.choice((100, 200, 400, 1000, 2000))),
        "storage_cost": rng.choice((0.1, 0.15, 0.2)),
        "dph_base": base,
        "dph_total": round(base + storage, 4),
        # Stated, as real bundles do: the spot price is min_bid plus this, so a change of dph_total alone
        # (the "2 % changed" batches) changes the on-demand price only.
        "storage_total_cost": storage,
        "search": {"totalHour": round(base + storage, 4)},
        "min_bid": None,
        "geolocation": place,
        "hosting_type": int(datacenter),
        "datacenter": datacenter,
        "verified": rng.random() < 0.8,
        "rentable": True,
        "rented": False,
        "reliability2": round(rng.uniform(0.9, 0.9999), 4),
        "inet_down": round(rng.uniform(100, 10_000), 1),
        "inet_up": round(rng.uniform(100, 10_000), 1),
    }


def vast_payload(n_offers: int, seed: int = 8) -> dict[str, Any]:
    """A `/bundles/` response that `providers.adapters.vastai.parse` turns into exactly `n_offers` offers."""
    rng = random.Random(seed)
    bundles: list[dict[str, Any]] = []
    count = 0
    while count < n_offers:
        bundle = _bundle(rng, len(bundles))
        count += 1
        if count < n_offers and rng.random() < SPOT_SHARE:
            bundle["min_bid"] = round(bundle["dph_base"] * rng.uniform(0.4, 0.7), 4)
            count += 1
        bundles.append(bundle)
    return {"offers": bundles}


def change_prices(payload: dict[str, Any], fraction: float, seed: int) -> tuple[dict[str, Any], int]:
    """A copy of the payload with `fraction` of its offers' prices changed (spot and on-demand alike)."""
    rng = random.Random(seed)
    out = copy.deepcopy(payload)
    # Each bundle carries one on-demand price and maybe a spot price: a "price" is one of those.
    slots = [(b, "dph_total") for b in out["offers"]] + [(b, "min_bid") for b in out["offers"] if b["min_bid"]]
    chosen = rng.sample(slots, round(len(slots) * fraction))
    for bundle, field in chosen:
        old = bundle[field]
        new = old
        while new == old:
            new = round(old * rng.uniform(0.9, 1.1), 4)
        bundle[field] = new
        if field == "dph_total":
            bundle["search"]["totalHour"] = new
    return out, len(chosen)


def vast_cassette(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as a cassette `gpu-tracker scrape vastai --replay FILE` serves (for the memory figure)."""
    return {
        "provider": "vastai",
        "recorded_at": "2026-11-29T00:00:00Z",
        "source": "synthetic benchmark marketplace (benchmarks/data.py)",
        "interactions": [
            {
                "request": {"method": "POST", "url": URL, "body": QUERY},
                "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": payload},
            }
        ],
    }


def parse_payload(payload: dict[str, Any]) -> ScrapeResult:
    """Through the wire format (bytes → json → parse), as a live fetch would be."""
    return parse(json.loads(json.dumps(payload)))


# ---------------------------------------------------------------------------------------------- history


@dataclass
class HistoryPlan:
    """Hourly scrapes of one provider: hour 0 lists `base`; hour h changes the prices in `changes[h]`."""

    base: list[ScrapedOffer]
    changes: list[list[tuple[int, Decimal]]]  # per hour: (offer index, new price per hour), index order
    t0: datetime

    @property
    def hours(self) -> int:
        return len(self.changes)

    def at(self, hour: int) -> datetime:
        return self.t0 + timedelta(hours=hour)

    def batches(self, hours: int) -> Iterator[tuple[datetime, ScrapeResult]]:
        """What each hourly scrape returned, for replaying the plan through the real ingest."""
        prices = [o.price_per_hour for o in self.base]
        for h in range(hours):
            for i, price in self.changes[h]:
                prices[i] = price
            offers = [replace(o, price_per_hour=p) for o, p in zip(self.base, prices, strict=True)]
            yield self.at(h), ScrapeResult(offers)


def plan_history(base: list[ScrapedOffer], hours: int, change_rate: float, end: datetime, seed: int = 9) -> HistoryPlan:
    """`hours` hourly scrapes ending at `end`, each changing `change_rate` of the prices.

    A new price is drawn around the offer's first price (not the last one) so a year of changes stays a
    stationary market instead of a random walk drifting to absurd prices.
    """
    rng = random.Random(seed)
    per_hour = round(len(base) * change_rate)
    current = [money(o.price_per_hour) for o in base]
    changes: list[list[tuple[int, Decimal]]] = [[]]
    for _ in range(1, hours):
        hour = []
        for i in sorted(rng.sample(range(len(base)), per_hour)):
            new = current[i]
            while new == current[i]:  # ingest writes a row only for a real change (at 6 decimals)
                new = money(Decimal(f"{float(base[i].price_per_hour) * math.exp(rng.gauss(0.0, 0.1)):.4f}"))
            current[i] = new
            hour.append((i, new))
        changes.append(hour)
    t0 = end.replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours - 1)
    return HistoryPlan(base, changes, t0)


@dataclass(slots=True)
class PriceRow:
    """One offer_prices row as ingest writes it: valid on [valid_from, valid_to)."""

    offer: int  # index into plan.base
    valid_from: datetime
    valid_to: datetime | None
    price_per_hour: Decimal
    price_per_gpu_hour: Decimal
    hour: int  # the scrape (hour index) that wrote it


def history_rows(plan: HistoryPlan, hours: int, valid: list[ValidOffer]) -> list[PriceRow]:
    """The change-only rows of the first `hours` scrapes, in the order ingest would insert them.

    `valid` is `tracker.ingest.batch.validate_batch(...)` of the base batch: it supplies the exact rounding ingest
    applies (money(), per-GPU division), so the rows match what ingest stores digit for digit.
    """
    assert len(valid) == len(plan.base), "every base offer must be valid"
    rows = [PriceRow(i, plan.t0, None, v.price_per_hour, v.price_per_gpu_hour, 0) for i, v in enumerate(valid)]
    open_row = list(range(len(valid)))
    for h in range(1, hours):
        at = plan.at(h)
        for i, price in plan.changes[h]:
            rows[open_row[i]].valid_to = at
            open_row[i] = len(rows)
            per_gpu = money(price / plan.base[i].gpu_count)
            rows.append(PriceRow(i, at, None, money(price), per_gpu, h))
    return rows


def final_prices(plan: HistoryPlan, hours: int) -> list[Decimal]:
    prices = [money(o.price_per_hour) for o in plan.base]
    for h in range(hours):
        for i, price in plan.changes[h]:
            prices[i] = price
    return prices

"""§9 Price index: a year of one card family's imported history, indexed per day and area (issue #28).

The history is an export directory (tracker.history.dataset, CSV) imported into a freshly migrated
database with `import_export`, as an operator seeding a tracker would: a marketplace with 1,000
datacenter-hosted H100 listings and eight clouds with 25 each, observed every six hours for a year, 2 %
of the offers re-priced at each observation, and one cloud down for a week. Measured: `index_values` for
the H100 family over 365 days and the four areas (the database read included), and the same from the
export files alone (tracker.history.index_export). Target (issue #28): at most 1 s per card family.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchmarks.common import Figure, Report, migrated
from tracker.config import Settings
from tracker.history.dataset import MANIFEST, SCHEMA_VERSION, encode_file, file_name, sha256
from tracker.history.imports.export_dir import import_export
from tracker.history.index_export import history_from_export
from tracker.market.index import compute
from tracker.market.index_source import baskets, index_values
from tracker.storage.engine import session_scope

START = datetime(2025, 1, 1, tzinfo=UTC)
CLOUDS = ("aws", "azure", "gcp", "lambdalabs", "fluidstack", "digitalocean", "cudo", "denvr")
CARDS = ("H100-SXM-80GB", "H100-PCIE-80GB")
REGIONS = ("us-east-1", "eu-west-1", "ap-northeast-1")
STEP = timedelta(hours=6)


def _offers(days: int) -> list[dict[str, Any]]:
    rows = []
    sellers = [("vastai", 1000, Decimal("1.90"))] + [(c, 25, Decimal("2.60")) for c in CLOUDS]
    for provider, n, base in sellers:
        for i in range(n):
            rows.append(
                {
                    "provider": provider,
                    "offer_key": f"{provider}-{i}",
                    "gpu_id": CARDS[i % 2],
                    "gpu_family": "H100",
                    "raw_gpu_name": "H100",
                    "gpu_count": Decimal(8 if i % 3 else 1),
                    "gpu_memory_gb": Decimal(80),
                    "form_factor": "SXM" if i % 2 == 0 else "PCIe",
                    "pricing": "on_demand",
                    "region": REGIONS[i % 3],
                    "attributes": {"hosting": "datacenter"} if provider == "vastai" else {},
                    "demo": False,
                    "first_seen": START,
                    "last_seen": START + timedelta(days=days) - STEP,
                    "currency": "USD",
                    "base": base,
                }
            )
    return rows


def build(out: Path, days: int, share: float = 0.02, seed: int = 28) -> int:
    """Write the export under `out`; returns the number of price rows."""
    rng = random.Random(seed)
    offers = _offers(days)
    price = {
        o["offer_key"]: (o.pop("base") * Decimal(str(0.8 + 0.4 * rng.random()))).quantize(Decimal("0.000001"))
        for o in offers
    }
    by_key = {o["offer_key"]: o for o in offers}
    runs: dict[date, list[dict[str, Any]]] = {}
    prices: dict[date, list[dict[str, Any]]] = {}
    open_rows: dict[str, dict[str, Any]] = {}
    down = ("cudo", START + timedelta(days=100), START + timedelta(days=107))
    run_id = 0
    for step in range(days * 4):
        at = START + step * STEP
        for provider in ("vastai", *CLOUDS):
            if provider == down[0] and down[1] <= at < down[2]:
                continue
            run_id += 1
            runs.setdefault(at.date(), []).append(
                {
                    "provider": provider,
                    "run_id": run_id,
                    "source": "live",
                    "status": "ok",
                    "started_at": at,
                    "finished_at": at,
                    "observed_at": at,
                    "attempt": 0,
                    "offers_seen": 0,
                    "offers_valid": 0,
                    "offers_new": 0,
                    "price_rows": 0,
                    "fx_rows": 0,
                    "offers_closed": 0,
                    "offers_reopened": 0,
                    "unknown_names": 0,
                    "invalid_offers": 0,
                    "parser_version": "1",
                }
            )
        keys = list(price) if step == 0 else rng.sample(list(price), int(len(price) * share))
        for key in keys:
            if key in open_rows:
                open_rows[key]["valid_to"] = at
                price[key] = (price[key] * Decimal(str(0.97 + 0.06 * rng.random()))).quantize(Decimal("0.000001"))
            o = by_key[key]
            row = {
                "provider": o["provider"],
                "offer_key": key,
                "gpu_id": o["gpu_id"],
                "pricing": "on_demand",
                "valid_from": at,
                "valid_to": None,
                "price_per_hour": price[key] * o["gpu_count"],
                "price_per_gpu_hour": price[key],
                "change_kind": "price",
                "currency": "USD",
                "run_id": None,
            }
            open_rows[key] = row
            prices.setdefault(at.date(), []).append(row)
    for o in offers:
        o["price_per_gpu_hour"] = price[o["offer_key"]]
        o["price_per_hour"] = price[o["offer_key"]] * o["gpu_count"]
    files = []
    tables = [("runs", d, r) for d, r in runs.items()] + [("prices", d, r) for d, r in prices.items()]
    tables.append(("offers", None, offers))
    for table, day, rows in tables:
        data = encode_file(table, rows, "csv")
        name = file_name(table, "csv", day)
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
        files.append({"name": name, "table": table, "rows": len(rows), "sha256": sha256(data)})
    manifest = {"schema_version": SCHEMA_VERSION, "generated_at": START.isoformat(), "format": "csv", "files": files}
    (out / MANIFEST).write_text(json.dumps(manifest))
    return sum(len(r) for r in prices.values())


def run(report: Report, backend: str, url: str, tmp: Path, days: int = 365, repeat: int = 3) -> None:
    out = tmp / f"index-export-{backend}"
    n_rows = build(out, days)
    engine = migrated(url)
    with session_scope(engine) as session:
        import_export(session, out, now=START + timedelta(days=days))
    settings = Settings(database_url=url)
    now = START + timedelta(days=days, hours=1)
    times, cpu, values = [], [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        with session_scope(engine) as session:
            values = index_values(session, settings, now, card="H100", days=days)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    engine.dispose()
    [(label, ids)] = baskets("H100")
    t = time.perf_counter()
    from_files = compute(
        history_from_export(out, ids, now.date(), settings),
        gpu_ids=ids,
        basket=label,
        start=now.date() - timedelta(days=days),
        end=now.date(),
        settings=settings,
    )
    export_s = time.perf_counter() - t
    median = statistics.median(times)
    published = sum(v.published for v in values)
    report.add(
        Figure(
            name=f"{backend} index H100 x {days} d x 4 areas, from imported history",
            value=median * 1000,
            unit="ms",
            anchor=None,
            anchor_label="",
            anchor_unit="",
            ratio=median / 1.0,
            ratio_label="x target",
            target="<= 1000 ms",
            ok=median <= 1.0,
            note=f"{n_rows:,} price rows of 1,200 offers at 9 providers; {published} of {len(values)} values "
            f"published; max {max(times) * 1000:.0f} ms of {repeat}; this process's CPU (median) "
            f"{statistics.median(cpu) * 1000:.0f} ms; from the export files alone "
            f"{export_s * 1000:.0f} ms (same values: {sorted(from_files, key=_order) == values})",
        )
    )


def _order(v: Any) -> tuple[Any, ...]:
    return (v.basket, v.day, ("global", "us", "eu", "apac").index(v.area))

"""§8 History import: one year of 20,000 offers' changes restored from an export into an empty database.

The data set is a real export directory (tracker.history.dataset's CSV, one file per UTC day, manifest
with SHA-256s): 20,000 offers listed on day one, 1 % of them re-priced each day for a year, one run a day.
Measured: `tracker.history.imports.export_dir.import_export` into a freshly migrated database in one
transaction (hash check and decoding included). Anchor: psycopg `COPY` (Postgres) or one `executemany`
transaction (SQLite) of the same price rows into a bare table: the fastest way to put those rows there.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import Figure, Report, migrated, psycopg_dsn
from tracker.clock import utcnow
from tracker.history.dataset import MANIFEST, SCHEMA_VERSION, encode_file, file_name, sha256
from tracker.history.imports.export_dir import import_export
from tracker.storage.engine import session_scope

START = datetime(2025, 1, 1, tzinfo=UTC)
CARDS = (
    ("H100-SXM-80GB", "H100", "SXM", Decimal("2.40")),
    ("A100-SXM-80GB", "A100", "SXM", Decimal("1.30")),
    ("RTX4090-24GB", "RTX 4090", "PCIe", Decimal("0.40")),
)
BARE = (
    "offer_key TEXT, valid_from TIMESTAMP{tz}, valid_to TIMESTAMP{tz}, price_per_hour NUMERIC(14,6), "
    "price_per_gpu_hour NUMERIC(14,6)"
)


def build(out: Path, n_offers: int, days: int, share: float = 0.01, seed: int = 8) -> int:
    """Write the export under `out`; returns the number of price rows."""
    rng = random.Random(seed)
    price: dict[str, Decimal] = {}
    offers, prices, runs = [], {}, {}
    for i in range(n_offers):
        gpu, family, form, base = CARDS[i % len(CARDS)]
        key = f"o{i}"
        price[key] = (base * Decimal(str(0.8 + 0.4 * rng.random()))).quantize(Decimal("0.000001"))
        offers.append(
            {
                "provider": "vastai",
                "offer_key": key,
                "gpu_id": gpu,
                "gpu_family": family,
                "raw_gpu_name": family,
                "gpu_count": Decimal(1),
                "gpu_memory_gb": Decimal(80),
                "form_factor": form,
                "pricing": "on_demand",
                "region": "us",
                "attributes": {},
                "demo": False,
                "first_seen": START,
                "last_seen": START + timedelta(days=days - 1),
                "currency": "USD",
            }
        )
    open_rows: dict[str, dict[str, Any]] = {}
    for day in range(days):
        at = START + timedelta(days=day)
        runs[at.date()] = [
            {
                "provider": "vastai",
                "run_id": day + 1,
                "source": "live",
                "status": "ok",
                "started_at": at,
                "finished_at": at,
                "observed_at": at,
                "attempt": 0,
                "offers_seen": n_offers,
                "offers_valid": n_offers,
                "offers_new": 0,
                "price_rows": 0,
                "fx_rows": 0,
                "offers_closed": 0,
                "offers_reopened": 0,
                "unknown_names": 0,
                "invalid_offers": 0,
                "parser_version": "1",
            }
        ]
        moved = list(price) if day == 0 else rng.sample(list(price), int(n_offers * share))
        todays = prices.setdefault(at.date(), [])
        for key in moved:
            if key in open_rows:
                open_rows[key]["valid_to"] = at
                price[key] = (price[key] * Decimal(str(0.97 + 0.06 * rng.random()))).quantize(Decimal("0.000001"))
            row = {
                "provider": "vastai",
                "offer_key": key,
                "gpu_id": offers[int(key[1:])]["gpu_id"],
                "pricing": "on_demand",
                "valid_from": at,
                "valid_to": None,
                "price_per_hour": price[key],
                "price_per_gpu_hour": price[key],
                "change_kind": "price",
                "currency": "USD",
                "run_id": day + 1,
            }
            open_rows[key] = row
            todays.append(row)
    for o in offers:
        o["price_per_hour"] = o["price_per_gpu_hour"] = price[o["offer_key"]]
    files = []
    availability = [
        {"provider": "vastai", "offer_key": o["offer_key"], "available": True, "valid_from": START, "run_id": 1}
        for o in offers
    ]
    tables = [("runs", d, r) for d, r in runs.items()] + [("prices", d, r) for d, r in prices.items()]
    tables += [("availability", START.date(), availability), ("offers", None, offers)]
    for table, day, rows in tables:
        data = encode_file(table, rows, "csv")
        name = file_name(table, "csv", day)
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
        files.append({"name": name, "table": table, "rows": len(rows), "sha256": sha256(data)})
    manifest = {"schema_version": SCHEMA_VERSION, "generated_at": utcnow().isoformat(), "format": "csv", "files": files}
    (out / MANIFEST).write_text(json.dumps(manifest))
    return sum(len(r) for r in prices.values())


def _anchor(backend: str, target: str, out: Path) -> float:
    """Seconds to write the same price rows into a bare table and commit."""
    from tracker.history.dataset import decode_file

    rows = [
        (r["offer_key"], r["valid_from"], r["valid_to"], r["price_per_hour"], r["price_per_gpu_hour"])
        for p in sorted((out / "prices").iterdir())
        for r in decode_file("prices", p.read_bytes(), "csv", p.name)
    ]
    if backend == "postgres":
        with psycopg.connect(psycopg_dsn(target)) as conn, conn.cursor() as cur:
            cur.execute(f"CREATE TABLE bench_bare_prices ({BARE.format(tz='TZ')})")
            conn.commit()
            t = time.perf_counter()
            with cur.copy("COPY bench_bare_prices FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            conn.commit()
            seconds = time.perf_counter() - t
            cur.execute("DROP TABLE bench_bare_prices")
            return seconds
    lite = sqlite3.connect(target)
    lite.execute("PRAGMA journal_mode=WAL")
    lite.execute("PRAGMA synchronous=NORMAL")
    lite.execute(f"CREATE TABLE bench_bare_prices ({BARE.format(tz='')})")
    lite.commit()
    plain = [(k, a.isoformat(), b.isoformat() if b else None, str(p), str(q)) for k, a, b, p, q in rows]
    t = time.perf_counter()
    lite.executemany("INSERT INTO bench_bare_prices VALUES (?, ?, ?, ?, ?)", plain)
    lite.commit()
    seconds = time.perf_counter() - t
    lite.close()
    return seconds


def run(report: Report, backend: str, url: str, tmp: Path, n_offers: int, days: int, anchor_target: str) -> None:
    out = tmp / f"export-{backend}"
    rows = build(out, n_offers, days)
    engine = migrated(url)
    t = time.perf_counter()
    with session_scope(engine) as session:
        result = import_export(session, out, now=utcnow())
    seconds = time.perf_counter() - t
    engine.dispose()
    assert result.price_rows == rows, (result.price_rows, rows)
    base = _anchor(backend, anchor_target, out)
    label = "COPY" if backend == "postgres" else "executemany"
    report.add(
        Figure(
            name=f"§8 import one year of {n_offers:,} offers' changes ({backend})",
            value=rows / seconds,
            unit="price rows/s",
            anchor=rows / base,
            anchor_label=label,
            anchor_unit="rows/s",
            ratio=(rows / seconds) / (rows / base),
            ratio_label=f"x {label} rate",
            target="info",
            ok=None,
            note=f"{rows:,} price rows, {n_offers:,} offers, {days} runs in {seconds:.1f} s (hashed, decoded, written)",
        )
    )

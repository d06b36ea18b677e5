"""`import aggregates DIR`: a third party's market statistics (min, percentiles, median per card per
instant), stored apart from offers in `external_aggregates` and drawn as a reference line.

Input: JSON lines, one object per snapshot per card, as Prime Intellect's aggregated marketplace series is
published: `timestamp`, `gpu_type` (e.g. "H100_80GB"), optional `socket_type` ("SXM5"), `price_stats`
(min/p10/p25/median/p75/p90/max/mean $/GPU-hour) and optional `availability` (total, available). The card
name ("H100_80GB SXM5") resolves through the catalog like a scraped name; an unresolved one is kept (gpu_id
NULL) and reported. Rows are keyed by (source, card name, instant): a re-import adds nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.catalog.gpus import GpuNameError, get_catalog
from tracker.history.dataset import DatasetError, sha256
from tracker.history.imports import ImportReport
from tracker.ingest.apply import bump_data_version
from tracker.storage.bulk import insert_rows
from tracker.storage.tables import ExternalAggregate

STATISTICS = ("min", "p10", "p25", "median", "p75", "p90", "max", "mean")
MAX_PRICE = Decimal("1000")  # $/GPU-hour: anything above is a unit error, not a market statistic


def _name(row: dict[str, Any]) -> str:
    gpu, socket = row.get("gpu_type"), row.get("socket_type")
    if not isinstance(gpu, str) or not gpu.strip():
        raise ValueError("no gpu_type")
    return f"{gpu} {socket}" if isinstance(socket, str) and socket.strip() else gpu


def _price(stats: dict[str, Any], name: str) -> Decimal | None:
    value = stats.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"price_stats.{name} is not a number")
    try:
        price = Decimal(str(value)).quantize(Decimal("0.000001"))
    except InvalidOperation:
        raise ValueError(f"price_stats.{name} is not a number") from None
    if not 0 <= price <= MAX_PRICE:
        raise ValueError(f"price_stats.{name}={price} is outside 0..{MAX_PRICE} $/GPU-hour")
    return price


def _count(block: Any, name: str) -> int | None:
    value = block.get(name) if isinstance(block, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_line(line: str) -> dict[str, Any]:
    """One JSON line → an `external_aggregates` row (without source, version and card); ValueError says why."""
    row = json.loads(line)
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    at = datetime.fromisoformat(str(row.get("timestamp")))
    if at.tzinfo is None:
        raise ValueError("timestamp has no UTC offset")
    stats = row.get("price_stats")
    if not isinstance(stats, dict):
        raise ValueError("no price_stats")
    prices = {s: _price(stats, s) for s in STATISTICS}
    if prices["median"] is None:
        raise ValueError("price_stats has no median")
    avail = row.get("availability")
    return {
        "raw_gpu_name": _name(row),
        "observed_at": at.astimezone(UTC),
        **prices,
        "offers": _count(avail, "total"),
        "available": _count(avail, "available"),
    }


def import_aggregates(session: Session, directory: Path, *, source: str) -> ImportReport:
    """Every `*.jsonl` file under `directory`, in the caller's transaction; a bad line refuses the import."""
    if not directory.is_dir():
        raise DatasetError(f"{directory}: not a directory")
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        raise DatasetError(f"{directory}: no .jsonl files")
    report = ImportReport(kind="aggregates", source=str(directory), files_read=len(files))
    catalog, cards = get_catalog(), dict[str, str | None]()
    stored = select(ExternalAggregate.raw_gpu_name, ExternalAggregate.observed_at)
    existing = {(n, at) for n, at in session.execute(stored.where(ExternalAggregate.source == source))}
    fresh: list[dict[str, Any]] = []
    for path in files:
        data = path.read_bytes()
        version = f"{path.name}@sha256:{sha256(data)}"
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = parse_line(line)
            except (ValueError, TypeError) as exc:
                raise DatasetError(f"{path.name} line {n}: {exc}") from None
            report.rows_read += 1
            key = (row["raw_gpu_name"], row["observed_at"])
            if key in existing:
                report.skipped += 1
                continue
            existing.add(key)
            name = row["raw_gpu_name"]
            if name not in cards:
                try:
                    cards[name] = catalog.normalize(name.replace("_", " ")).id
                except GpuNameError:
                    cards[name] = None
            if cards[name] is None:
                report.count_unknown({name: 1})
            fresh.append(row | {"source": source, "gpu_id": cards[name], "source_version": version[:255]})
    insert_rows(session, ExternalAggregate, fresh)
    report.aggregate_rows = len(fresh)
    if fresh:  # cached reference answers key on the data version
        bump_data_version(session, max(r["observed_at"] for r in fresh))
    return report


def reference_series(session: Session, gpu_ids: list[str], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Each source's series for these cards over [start, end), by source then time (for the chart)."""
    rows = session.execute(
        select(
            ExternalAggregate.source,
            ExternalAggregate.gpu_id,
            ExternalAggregate.observed_at,
            ExternalAggregate.min,
            ExternalAggregate.median,
            ExternalAggregate.p25,
            ExternalAggregate.p75,
            ExternalAggregate.offers,
        )
        .where(
            ExternalAggregate.gpu_id.in_(gpu_ids),
            ExternalAggregate.observed_at >= start,
            ExternalAggregate.observed_at < end,
        )
        .order_by(ExternalAggregate.source, ExternalAggregate.observed_at)
    ).all()
    series: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for source, gpu, at, lo, median, p25, p75, offers in rows:
        series.setdefault((source, gpu), []).append(
            {"at": at, "min": lo, "median": median, "p25": p25, "p75": p75, "offers": offers}
        )
    return [{"source": s, "gpu": g, "points": pts} for (s, g), pts in series.items()]

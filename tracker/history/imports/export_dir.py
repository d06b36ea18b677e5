"""`import export DIR`: restore a gpu-price-tracker export (tracker.history.export) into this database.

Every file is checked against the manifest's SHA-256 and decoded before anything is written; then, in the
caller's transaction, runs, offers, price rows and availability rows are added under the rule in
`tracker.history.imports`. Into an empty database the restore is exact: every history answer is the same.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from tracker.history.dataset import DAILY, DatasetError, decode_file, read_manifest, sha256
from tracker.history.imports import ImportReport
from tracker.ingest.apply import bump_data_version
from tracker.storage.bulk import insert_rows
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun

OfferRef = tuple[str, str]


def read_export(directory: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The manifest and every table's rows, each file verified; DatasetError on the first problem."""
    manifest = read_manifest(directory)
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    root = directory.resolve()
    for entry in manifest["files"]:
        name, table = str(entry.get("name", "")), str(entry.get("table", ""))
        path = (directory / name).resolve()
        if not path.is_relative_to(root) or table not in (*DAILY, "offers"):
            raise DatasetError(f"manifest lists {name!r} ({table!r}): not a file of this dataset")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DatasetError(f"{name}: not readable ({exc.strerror})") from None
        if sha256(data) != entry.get("sha256"):
            raise DatasetError(f"{name}: SHA-256 differs from the manifest (changed or truncated)")
        tables[table].extend(decode_file(table, data, manifest["format"], name))
    return manifest, tables


def import_export(session: Session, directory: Path, *, now: datetime) -> ImportReport:
    manifest, tables = read_export(directory)
    report = ImportReport(kind="export", source=str(directory), files_read=len(manifest["files"]))
    report.rows_read = sum(len(rows) for rows in tables.values())
    version = str(manifest.get("generated_at", "?"))
    run_ids = _runs(session, tables["runs"], version, report)
    offer_ids, known = _offers(session, tables["offers"], report)
    for model, table in ((OfferPrice, "prices"), (OfferAvailability, "availability")):
        rows = _history_rows(session, model, tables[table], offer_ids, known, run_ids, report)
        insert_rows(session, model, rows)
        if model is OfferPrice:
            report.price_rows = sum(1 for r in rows if r["change_kind"] != "fx")
            report.fx_rows = len(rows) - report.price_rows
        else:
            report.availability_rows = len(rows)
    if report.runs or report.offers_new or report.price_rows or report.fx_rows or report.availability_rows:
        bump_data_version(session, now)
    return report


def _runs(
    session: Session, runs: list[dict[str, Any]], version: str, report: ImportReport
) -> dict[tuple[str, int], int]:
    """Export run id → this database's run id; a run already here (same provider, start, attempt) is reused."""
    if not runs:
        return {}
    lo, hi = min(r["started_at"] for r in runs), max(r["started_at"] for r in runs)
    existing = {
        (p, at, a): i
        for i, p, at, a in session.execute(
            select(ScrapeRun.id, ScrapeRun.provider, ScrapeRun.started_at, ScrapeRun.attempt).where(
                ScrapeRun.started_at >= lo, ScrapeRun.started_at <= hi
            )
        )
    }
    fresh = []
    for r in runs:
        if (r["provider"], r["started_at"], r["attempt"]) in existing:
            report.skipped += 1
            continue
        row = {k: v for k, v in r.items() if k != "run_id"}
        # Labelled as imported; what observed it first and where it was published stay in the version.
        row["source_version"] = f"export:{r['source']}:{r['source_version'] or ''}@{version}"[:255]
        row["source"], row["slot"], row["claimed_by"] = "import", None, None
        fresh.append(row)
    insert_rows(session, ScrapeRun, fresh)
    report.runs = len(fresh)
    if fresh:
        existing = {
            (p, at, a): i
            for i, p, at, a in session.execute(
                select(ScrapeRun.id, ScrapeRun.provider, ScrapeRun.started_at, ScrapeRun.attempt).where(
                    ScrapeRun.started_at >= lo, ScrapeRun.started_at <= hi
                )
            )
        }
    return {(r["provider"], r["run_id"]): existing[(r["provider"], r["started_at"], r["attempt"])] for r in runs}


def _offers(
    session: Session, offers: list[dict[str, Any]], report: ImportReport
) -> tuple[dict[OfferRef, int], set[int]]:
    """(provider, offer_key) → id, and the ids of offers this database held before the import."""
    ids: dict[OfferRef, int] = {}
    for provider in {o["provider"] for o in offers}:
        ids.update(
            ((provider, k), i)
            for k, i in session.execute(select(Offer.offer_key, Offer.id).where(Offer.provider == provider))
        )
    known = set(ids.values())
    fresh = [_with_kind(o) for o in offers if (o["provider"], o["offer_key"]) not in ids]
    insert_rows(session, Offer, fresh)
    report.offers_new = len(fresh)
    for provider in {o["provider"] for o in fresh}:
        ids.update(
            ((provider, k), i)
            for k, i in session.execute(select(Offer.offer_key, Offer.id).where(Offer.provider == provider))
        )
    # A held offer was first seen no later than its earliest imported row.
    earliest = {
        ids[(o["provider"], o["offer_key"])]: o["first_seen"]
        for o in offers
        if ids.get((o["provider"], o["offer_key"])) in known
    }
    for offer_id, first in earliest.items():
        session.execute(update(Offer).where(Offer.id == offer_id, Offer.first_seen > first).values(first_seen=first))
    return ids, known


def _history_rows(
    session: Session,
    model: type[OfferPrice] | type[OfferAvailability],
    rows: list[dict[str, Any]],
    offer_ids: dict[OfferRef, int],
    known: set[int],
    run_ids: dict[tuple[str, int], int],
    report: ImportReport,
) -> list[dict[str, Any]]:
    """The rows to insert: all of a new offer's; of a held offer only those before its first stored row."""
    first = (
        dict(
            session.execute(
                select(model.offer_id, func.min(model.valid_from))
                .where(model.offer_id.in_(known))
                .group_by(model.offer_id)
            ).all()
        )
        if known
        else {}
    )
    out = []
    for r in rows:
        ref = (r["provider"], r["offer_key"])
        if ref not in offer_ids:
            raise DatasetError(f"a {model.__tablename__} row refers to offer {ref}, which the offers file lacks")
        offer_id = offer_ids[ref]
        row = {k: v for k, v in r.items() if k not in {"provider", "offer_key"}}
        if model is OfferPrice:
            row = _with_kind(row)
        row["offer_id"] = offer_id
        row["run_id"] = run_ids.get((r["provider"], r["run_id"])) if r["run_id"] is not None else None
        if offer_id in first:
            cutoff = first[offer_id]
            if row["valid_from"] >= cutoff:
                report.skipped += 1
                continue
            if row["valid_to"] is None or row["valid_to"] > cutoff:
                row["valid_to"] = cutoff
        out.append(row)
    return out


def _with_kind(row: dict[str, Any]) -> dict[str, Any]:
    """An export written before price kinds were kept holds asking prices only (as the tracker read them)."""
    kind = row.get("price_kind") or "asking"
    orderable = row.get("orderable")
    return row | {"price_kind": kind, "orderable": (kind == "asking") if orderable is None else orderable}

"""Export the change-only history as an open dataset: one file per UTC day per table, and a manifest.

What is exported: every price and availability row valid at some instant of [since, until) (a row that
began before `since` is in the file of the day it began, so the price in force at `since` is there), the
runs started in the window (the ledger: each provider's outcome per day), and the offers those rows refer
to, as they stand when the export is made. The manifest lists each file with its row count and SHA-256,
the outcome of each provider's runs per day, and a terms note per source. The schema: tracker.history.dataset.

Whose rows are exported follows each source's declared data terms under the operator's setting, one rule
(`tracker.market.data_terms.may_republish`): a source left out has no row in any file and is named, with
why, in the manifest's `left_out`; every exported source carries its terms as read (`data_terms`), so one
whose terms are unknown is labelled so. Under `TRACKER_REPUBLISH=private` the manifest says
`for_publication: false`.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import tarfile
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, or_, select
from sqlalchemy.orm import Session

from tracker.clock import Clock, utcnow
from tracker.config import Settings, get_settings
from tracker.history.dataset import DAILY, MANIFEST, SCHEMA_VERSION, TABLES, encode_file, file_name, sha256
from tracker.history.imports.terms import terms_note
from tracker.market.data_terms import may_republish, source_terms
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun

log = logging.getLogger(__name__)

_OFFER_COLUMNS = [c.name for c in TABLES["offers"]]
_RUN_COLUMNS = {"run_id": ScrapeRun.id} | {
    c.name: getattr(ScrapeRun, c.name) for c in TABLES["runs"] if c.name not in {"run_id"}
}


def _window(
    stmt: Any, model: type[OfferPrice] | type[OfferAvailability], since: datetime | None, until: datetime | None
) -> Any:
    if until is not None:
        stmt = stmt.where(model.valid_from < until)
    if since is not None:
        stmt = stmt.where(or_(model.valid_to.is_(None), model.valid_to > since))
    return stmt


def _prices(
    session: Session, since: datetime | None, until: datetime | None, out: frozenset[str]
) -> Iterator[dict[str, Any]]:
    names = [c.name for c in TABLES["prices"] if c.name not in {"provider", "offer_key"}]
    stmt = select(Offer.provider, Offer.offer_key, *(getattr(OfferPrice, n) for n in names)).join(
        Offer, Offer.id == OfferPrice.offer_id
    )
    stmt = _window(stmt, OfferPrice, since, until).order_by(OfferPrice.valid_from, OfferPrice.id)
    if out:
        stmt = stmt.where(Offer.provider.not_in(out))
    for row in session.execute(stmt).yield_per(5000):
        yield dict(row._mapping)


def _availability(
    session: Session, since: datetime | None, until: datetime | None, out: frozenset[str]
) -> Iterator[dict[str, Any]]:
    stmt = select(
        Offer.provider,
        Offer.offer_key,
        OfferAvailability.available,
        OfferAvailability.valid_from,
        OfferAvailability.valid_to,
        OfferAvailability.run_id,
    ).join(Offer, Offer.id == OfferAvailability.offer_id)
    stmt = _window(stmt, OfferAvailability, since, until).order_by(OfferAvailability.valid_from, OfferAvailability.id)
    if out:
        stmt = stmt.where(Offer.provider.not_in(out))
    for row in session.execute(stmt).yield_per(5000):
        yield dict(row._mapping)


def _runs(
    session: Session, since: datetime | None, until: datetime | None, out: frozenset[str]
) -> Iterator[dict[str, Any]]:
    stmt = select(*(col.label(name) for name, col in _RUN_COLUMNS.items())).order_by(ScrapeRun.started_at, ScrapeRun.id)
    if out:
        stmt = stmt.where(ScrapeRun.provider.not_in(out))
    if since is not None:
        stmt = stmt.where(ScrapeRun.started_at >= since)
    if until is not None:
        stmt = stmt.where(ScrapeRun.started_at < until)
    for row in session.execute(stmt).yield_per(5000):
        yield dict(row._mapping)


def _by_day(rows: Iterator[dict[str, Any]], column: str) -> Iterator[tuple[date, list[dict[str, Any]]]]:
    """Rows ordered by `column`, grouped by its UTC day."""
    day: date | None = None
    batch: list[dict[str, Any]] = []
    for row in rows:
        d = row[column].astimezone(UTC).date()
        if d != day and batch:
            assert day is not None
            yield day, batch
            batch = []
        day = d
        batch.append(row)
    if batch and day is not None:
        yield day, batch


def build_export(
    session: Session,
    *,
    fmt: str,
    generated_at: datetime,
    since: datetime | None = None,
    until: datetime | None = None,
    settings: Settings | None = None,
) -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of every file, day by day, then the offers file and the manifest last.
    `settings` decide whose rows may be republished (module docstring); None: this process's settings."""
    settings = settings if settings is not None else get_settings()
    stored = set(session.scalars(select(ScrapeRun.provider).distinct())) | set(
        session.scalars(select(Offer.provider).distinct())
    )
    out = frozenset(p for p in stored if not may_republish(p, settings))
    files: list[dict[str, Any]] = []
    offer_refs: set[tuple[str, str]] = set()
    outcomes: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    sources: dict[tuple[str, str], None] = {}
    readers = {"runs": _runs, "prices": _prices, "availability": _availability}
    for table, reader in readers.items():
        for day, rows in _by_day(reader(session, since, until, out), DAILY[table]):
            if table == "runs":
                for r in rows:
                    outcomes[day.isoformat()][r["provider"]][r["status"]] += 1
                    sources[(r["provider"], _source_kind(r))] = None
            else:
                offer_refs.update((r["provider"], r["offer_key"]) for r in rows)
            data = encode_file(table, rows, fmt)
            name = file_name(table, fmt, day)
            files.append(
                {
                    "name": name,
                    "table": table,
                    "day": day.isoformat(),
                    "rows": len(rows),
                    "bytes": len(data),
                    "sha256": sha256(data),
                }
            )
            yield name, data
    offers = _offers(session, offer_refs)
    data = encode_file("offers", offers, fmt)
    name = file_name("offers", fmt)
    files.append(
        {"name": name, "table": "offers", "day": None, "rows": len(offers), "bytes": len(data), "sha256": sha256(data)}
    )
    yield name, data
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at.astimezone(UTC).isoformat(),
        "format": fmt,
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        "columns": {
            t: [{"name": c.name, "type": c.kind, "nullable": c.nullable} for c in cols] for t, cols in TABLES.items()
        },
        "files": files,
        "runs_by_day": {d: {p: dict(s) for p, s in sorted(v.items())} for d, v in sorted(outcomes.items())},
        "sources": [
            {"provider": p, "source": k, "terms": terms_note(p, k), "data_terms": source_terms(p, settings)}
            for p, k in sorted(sources)
        ],
        # Sources whose rows this export leaves out, and why (their terms under TRACKER_REPUBLISH).
        "left_out": [{"provider": p, "data_terms": source_terms(p, settings)} for p in sorted(out)],
        "republish": settings.republish,
        "for_publication": settings.republish != "private",
    }
    yield MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode()


def _source_kind(run: dict[str, Any]) -> str:
    """live, demo, replay, or the import kind ("import:snapshots") an imported run came from."""
    if run["source"] == "import" and run["source_version"]:
        return "import:" + str(run["source_version"]).split(":", 1)[0]
    return str(run["source"])


def _offers(session: Session, refs: set[tuple[str, str]]) -> list[dict[str, Any]]:
    by_provider: dict[str, set[str]] = defaultdict(set)
    for provider, key in refs:
        by_provider[provider].add(key)
    out: list[dict[str, Any]] = []
    for provider, keys in sorted(by_provider.items()):
        stmt = select(*(getattr(Offer, n) for n in _OFFER_COLUMNS)).where(Offer.provider == provider)
        out.extend(dict(r._mapping) for r in session.execute(stmt.order_by(Offer.offer_key)) if r.offer_key in keys)
    return out


def write_export(session: Session, out: Path, **options: Any) -> dict[str, Any]:
    """Write every file under `out` (created if missing); returns the manifest."""
    manifest: dict[str, Any] = {}
    for name, data in build_export(session, **options):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if name == MANIFEST:
            manifest = json.loads(data)
    return manifest


def scheduled_export(engine: Engine, settings: Settings, clock: Clock = utcnow) -> dict[str, Any] | None:
    """The worker's daily job (`TRACKER_EXPORT_DIR`): the whole history, written beside the directory and then
    swapped in, so a reader never sees half an export. Never raises (a scheduler job); None when off or failed."""
    if settings.export_dir is None:
        return None
    target = settings.export_dir
    fresh, old = target.with_name(target.name + ".new"), target.with_name(target.name + ".old")
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        with session_scope(engine) as session:
            manifest = write_export(session, fresh, fmt=settings.export_format, generated_at=clock(), settings=settings)
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        fresh.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        log.info("dataset exported to %s: %d files", target, len(manifest["files"]))
        return manifest
    except Exception:
        log.exception("scheduled dataset export to %s failed", target)
        return None


def stream_tar(session: Session, **options: Any) -> Iterator[bytes]:
    """The same files as one uncompressed tar stream, file by file (each day's file is built in memory)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w|") as tar:
        for name, data in build_export(session, **options):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), int(options["generated_at"].timestamp())
            tar.addfile(info, io.BytesIO(data))
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


__all__ = ["build_export", "scheduled_export", "stream_tar", "write_export"]

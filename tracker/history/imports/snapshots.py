"""`import snapshots DIR --provider P`: a directory of one provider's dated raw responses, replayed in time
order through the provider's own parser and `tracker.ingest.batch.ingest`, each as a scrape at its time.

A file's time is the ISO-8601 instant its name starts with (`2025-06-15T10-27-05+00-00_aef71e0.json`:
dashes may stand for colons, as file systems need). The provider's `fetch` runs against a transport that
answers every request with the file's body, so whatever parsing, naming and validation a scrape does
happens here too; a provider whose fetch needs several different answers cannot be replayed from one file.
Credentials the fetch asks for are placeholders: nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from providers.contract import FetchContext, Provider, ProviderError, ScrapeResult
from providers.fetching import fetch_offers
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.history.dataset import DatasetError, sha256
from tracker.history.imports import ImportReport
from tracker.ingest.batch import ingest
from tracker.market import freshness
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun

_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[T_ ](\d{2})[-:]?(\d{2})[-:]?(\d{2})(\.\d+)?(Z|[+-]\d{2}[-:]?\d{2})?")


@dataclass(frozen=True)
class Snapshot:
    path: Path
    at: datetime


def snapshot_time(name: str) -> datetime:
    """The instant a snapshot's file name starts with; a name without one is refused (DatasetError)."""
    m = _STAMP.match(name)
    if not m:
        raise DatasetError(f"{name}: the file name does not start with a timestamp (e.g. 2025-06-15T10-27-05+00-00)")
    day, hh, mm, ss, frac, zone = m.groups()
    zone = "+00:00" if zone in (None, "Z") else f"{zone[:3]}:{zone[-2:]}"
    try:
        return datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss}{frac or ''}{zone}").astimezone(UTC)
    except ValueError as exc:
        raise DatasetError(f"{name}: {exc}") from None


def list_snapshots(directory: Path) -> list[Snapshot]:
    if not directory.is_dir():
        raise DatasetError(f"{directory}: not a directory")
    files = [p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")]
    snaps = sorted((Snapshot(p, snapshot_time(p.name)) for p in files), key=lambda s: (s.at, s.path.name))
    if not snaps:
        raise DatasetError(f"{directory}: no snapshot files")
    return snaps


async def _parse(provider: type[Provider], body: bytes) -> ScrapeResult:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    names = (*provider.credentials, *provider.optional_credentials)
    credentials = {c: provider.demo_credentials.get(c, "snapshot-replay") for c in names}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        return await fetch_offers(provider, FetchContext(client=client, credentials=credentials, retries=0,
                                                         backoff_base_s=0.0))  # fmt: skip


def covered_until(session: Session, provider: str) -> datetime | None:
    """The latest instant this provider's stored history speaks for (its runs, and offers closed after them)."""
    # A failed run has no observation, but its attempt is on the ledger: its start counts as covered.
    at = func.coalesce(ScrapeRun.observed_at, ScrapeRun.started_at)
    runs = session.scalar(select(func.max(at)).where(ScrapeRun.provider == provider))
    closed = session.scalar(select(func.max(Offer.delisted_at)).where(Offer.provider == provider))
    return max((t for t in (runs, closed) if t is not None), default=None)


def import_snapshots(
    session: Session, directory: Path, provider: type[Provider], *, settings: Settings, now: datetime
) -> ImportReport:
    """Replay every snapshot newer than the provider's stored history, in the caller's transaction."""
    snaps = list_snapshots(directory)
    report = ImportReport(kind="snapshots", source=str(directory), files_read=len(snaps))
    horizon = covered_until(session, provider.name)
    last: datetime | None = None
    for snap in snaps:
        if snap.at > now:
            raise DatasetError(f"{snap.path.name}: dated {snap.at.isoformat()}, in the future")
        if horizon is not None and snap.at <= horizon:
            report.skipped += 1
            continue
        body = snap.path.read_bytes()
        run = ScrapeRun(provider=provider.name, source="import", status="running", started_at=snap.at,
                        finished_at=snap.at, parser_version=provider.parser_version, claimed_by=None,
                        source_version=f"snapshots:{snap.path.name}@sha256:{sha256(body)}"[:255])  # fmt: skip
        session.add(run)
        report.runs += 1
        try:
            result = asyncio.run(_parse(provider, body))
        except ProviderError as exc:
            # As a scrape of that answer would have: a failed run, with the reason, and nothing stored.
            run.status, run.error = "failed", str(exc)[:2000]
            report.failed.append(snap.path.name)
            report.notes.append(f"{snap.path.name}: {provider.name}'s parser refused it: {exc}")
            continue
        session.flush()
        outcome = ingest(session, run, result, catalog=get_catalog(), settings=settings, observed_at=snap.at)
        report.rows_read += outcome.offers_seen
        report.count_unknown(outcome.unknown_names)
        if outcome.status != "ok":
            report.quarantined += 1
            report.notes.append(f"{snap.path.name}: {outcome.error}")
            continue
        report.offers_new += outcome.offers_new
        report.price_rows += outcome.price_rows
        report.fx_rows += outcome.fx_rows
        report.availability_rows += outcome.availability_rows
        last = snap.at
    if last is not None:
        _close(session, provider.name, min(last + freshness.window(provider.name, settings), now))
    return report


def _close(session: Session, provider: str, at: datetime) -> None:
    """The history stops where the snapshots do: listed offers end at `at`, as ingest ends a delisted one."""
    listed = select(Offer.id).where(Offer.provider == provider, Offer.delisted_at.is_(None)).scalar_subquery()
    for model in (OfferPrice, OfferAvailability):
        session.execute(
            update(model)
            .where(model.offer_id.in_(listed), model.valid_to.is_(None))
            .values(valid_to=at)
            .execution_options(synchronize_session=False)
        )
    session.execute(
        update(Offer).where(Offer.provider == provider, Offer.delisted_at.is_(None)).values(delisted_at=at)
        .execution_options(synchronize_session=False)
    )  # fmt: skip

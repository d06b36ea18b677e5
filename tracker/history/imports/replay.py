"""Replaying dated observations through ingest, as scrapes at their times (the rule: tracker.history.imports).

Shared by every import kind that reads observations (snapshots, SkyPilot's catalog history): one labelled
run per observation, `tracker.ingest.batch.ingest` for each, in time order; only observations later than
the provider's stored history; and the history closed after the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from providers.contract import ProviderError, ScrapeResult
from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.history.dataset import DatasetError
from tracker.history.imports import ImportReport
from tracker.ingest.batch import ingest
from tracker.market import freshness
from tracker.storage.tables import Offer, OfferAvailability, OfferPrice, ScrapeRun


@dataclass(frozen=True)
class Observation:
    at: datetime
    label: str  # how notes name it (a file, a commit)
    version: str  # the run's source_version: "<kind>:<what>@<hash>"
    parse: Callable[[], ScrapeResult]  # raises ProviderError for an answer the parser refuses


def covered_until(session: Session, provider: str) -> datetime | None:
    """The latest instant this provider's stored history speaks for (its runs, and offers closed after them)."""
    # A failed run has no observation, but its attempt is on the ledger: its start counts as covered.
    at = func.coalesce(ScrapeRun.observed_at, ScrapeRun.started_at)
    runs = session.scalar(select(func.max(at)).where(ScrapeRun.provider == provider))
    closed = session.scalar(select(func.max(Offer.delisted_at)).where(Offer.provider == provider))
    return max((t for t in (runs, closed) if t is not None), default=None)


def replay(
    session: Session,
    provider: str,
    parser_version: str,
    observations: Iterable[Observation],
    *,
    settings: Settings,
    now: datetime,
    report: ImportReport,
) -> None:
    """Ingest each observation (in time order) newer than the provider's stored history; tally `report`."""
    horizon = covered_until(session, provider)
    last: datetime | None = None
    for obs in observations:
        if obs.at > now:
            raise DatasetError(f"{obs.label}: dated {obs.at.isoformat()}, in the future")
        if horizon is not None and obs.at <= horizon:
            report.skipped += 1
            continue
        run = ScrapeRun(
            provider=provider,
            source="import",
            status="running",
            started_at=obs.at,
            finished_at=obs.at,
            parser_version=parser_version,
            claimed_by=None,
            source_version=obs.version[:255],
        )
        session.add(run)
        report.runs += 1
        try:
            result = obs.parse()
        except ProviderError as exc:
            # As a scrape of that answer would have: a failed run, with the reason, and nothing stored.
            run.status, run.error = "failed", str(exc)[:2000]
            report.failed.append(obs.label)
            report.notes.append(f"{obs.label}: {provider}'s parser refused it: {exc}")
            continue
        session.flush()
        outcome = ingest(session, run, result, catalog=get_catalog(), settings=settings, observed_at=obs.at)
        report.rows_read += outcome.offers_seen
        report.count_unknown(outcome.unknown_names)
        if outcome.status != "ok":
            report.quarantined += 1
            report.notes.append(f"{obs.label}: {outcome.error}")
            continue
        report.offers_new += outcome.offers_new
        report.price_rows += outcome.price_rows
        report.fx_rows += outcome.fx_rows
        report.availability_rows += outcome.availability_rows
        last = obs.at
    if last is not None:
        _close(session, provider, min(last + freshness.window(provider, settings), now))


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
        update(Offer)
        .where(Offer.provider == provider, Offer.delisted_at.is_(None))
        .values(delisted_at=at)
        .execution_options(synchronize_session=False)
    )

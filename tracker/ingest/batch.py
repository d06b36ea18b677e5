"""Ingest: turn one provider batch into change-only history, in one transaction.

Stages, one module each: validate and normalize every offer (`tracker.ingest.validate`: bad rows and
unknown GPU names are set aside and counted; an offer stated exactly as its stored offer's last observation
is taken as stored, `tracker.ingest.digest`), check the batch as a whole against the last good run (an
empty, collapsed or degenerate batch, or one whose price level jumped, is quarantined and changes
nothing: `tracker.ingest.quarantine`), then diff against the stored offers (`tracker.ingest.diff`, pure)
and write the result (`tracker.ingest.apply`): new offers and price changes write price rows,
unchanged offers only move `last_seen`, offers missing from a successful batch are closed, and
returning offers reopen. Availability is history the same way (`offer_availability`): a row when an
offer appears, when its `available` flag changes and when it returns; delisting closes it. Ingesting
the same batch twice writes no price row and no availability row.

Native currency (`tracker.ingest.fx`): an offer quoted in another currency is converted at the rate of the
observation's day, and the quote, its currency and that rate go on the price row. A price change is a
change of the quote (amount or currency), the GPU count or the card: a `change_kind="price"` row, counted
in `price_rows`. The same quote at another rate whose USD figure differs writes a `change_kind="fx"`
row, counted apart (`fx_rows`), so the USD history stays exact without FX moves posing as price changes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from providers.contract import ScrapeResult
from tracker.catalog.gpus import GpuCatalog
from tracker.config import Settings
from tracker.ingest.apply import (
    bump_data_version,
    read_known,
    read_listed,
    record_locations,
    record_unknown,
    write_changes,
)
from tracker.ingest.costs import record_cost_terms
from tracker.ingest.diff import diff
from tracker.ingest.fx import MAX_RATE_AGE, RateBook
from tracker.ingest.quarantine import price_level_reason, quarantine_reason
from tracker.ingest.validate import Prepared, validate_batch
from tracker.storage.ledger import RunStatus
from tracker.storage.tables import ScrapeRun

# A run's source whose prices are not observed now: a recording replayed today converts at the latest
# recorded rate, however old (its date is on the row), instead of being refused for want of a fresh one.
OFFLINE_SOURCES = frozenset({"demo", "replay"})


@dataclass
class IngestReport:
    provider: str
    run_id: int | None
    status: RunStatus
    offers_seen: int = 0
    offers_valid: int = 0
    offers_new: int = 0
    price_rows: int = 0  # price changes (change_kind "price"), new and reopened offers included
    fx_rows: int = 0  # rows written only because the exchange rate moved (change_kind "fx")
    availability_rows: int = 0
    offers_closed: int = 0
    offers_reopened: int = 0
    unknown_names: dict[str, int] = field(default_factory=dict)
    assumed_names: dict[str, str] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)
    error: str | None = None
    # Set by the scraper, not by ingest: the response's shape against what the parser needs.
    schema_warnings: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "run_id": self.run_id,
            "status": self.status,
            "offers_seen": self.offers_seen,
            "offers_valid": self.offers_valid,
            "offers_new": self.offers_new,
            "price_rows": self.price_rows,
            "fx_rows": self.fx_rows,
            "availability_rows": self.availability_rows,
            "offers_closed": self.offers_closed,
            "offers_reopened": self.offers_reopened,
            "unknown_names": self.unknown_names,
            "assumed_names": self.assumed_names,
            "invalid": self.invalid,
            "schema_warnings": self.schema_warnings,
            "error": self.error,
        }


_gc_lock = threading.Lock()
_gc_pausers = 0  # ingests running with the collector paused (threads of one worker may ingest at once)


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the duration (re-enabled when the last concurrent user leaves).

    Why: a batch allocates a few objects per offer (rows read, tuples compared, row dicts written) and keeps
    most of them alive until it ends, so allocation keeps triggering collections that find nothing to free
    while walking the whole batch: a fifth of an unchanged 20,000-offer ingest on the bench machine, and one
    full (generation 2) pass over every live object per batch, which grows with the batch. Nothing an ingest
    builds needs the cycle collector to be freed (reference counting frees it when the batch ends); any
    cycle left over is collected on the first pass after re-enabling. Left alone when the caller has
    already disabled the collector."""
    global _gc_pausers
    with _gc_lock:
        if _gc_pausers == 0 and not gc.isenabled():
            owner = False
        else:
            owner = True
            _gc_pausers += 1
            gc.disable()
    try:
        yield
    finally:
        if owner:
            with _gc_lock:
                _gc_pausers -= 1
                if _gc_pausers == 0:
                    gc.enable()


@gc_paused()
def ingest(
    session: Session,
    run: ScrapeRun,
    result: ScrapeResult,
    *,
    catalog: GpuCatalog,
    settings: Settings,
    observed_at: datetime,
) -> IngestReport:
    """Apply one successful fetch to the store: validate → quarantine checks → diff → apply. The caller
    owns the transaction; a quarantined batch changes nothing but the run's row and the unknown names.
    Run with the cycle collector paused (`gc_paused`)."""
    provider, demo = run.provider, run.source == "demo"
    rates = RateBook.load(
        session,
        {o.currency for o in result.offers},
        observed_at,
        max_age=None if run.source in OFFLINE_SOURCES else MAX_RATE_AGE,
    )
    # The stored offers' digests first: an observation identical to its offer's last one is taken as stored
    # (tracker.ingest.digest) and passes the diff and the cost terms by; only the rest is read in full.
    known = read_known(session, provider)
    prepared = validate_batch(result, catalog, settings, provider, rates, known=known, demo=demo)
    report = _report(run, result, prepared)
    run.observed_at = observed_at
    run.offers_seen, run.offers_valid = report.offers_seen, report.offers_valid
    run.unknown_names = sum(prepared.unknown_counts.values())
    run.invalid_offers = len(prepared.invalid)
    record_unknown(session, run, prepared, observed_at)
    if reason := quarantine_reason(session, provider, prepared, settings):
        return _quarantine(report, run, reason)
    compared = [row.id for v in prepared.valid if v.same_as is None and (row := known.get(v.scraped.key))]
    listed = read_listed(session, provider, compared)
    # The listed offers' prices are the last good run's: the diff samples the price level against them,
    # and nothing is written until that check has passed.
    changes = diff(listed, prepared.valid, demo=demo, known=known)
    if reason := price_level_reason(session, provider, changes.level, settings):
        return _quarantine(report, run, reason)
    offer_ids = write_changes(session, provider, changes, known, observed_at=observed_at, run_id=run.id, demo=demo)
    record_cost_terms(  # tracker.ingest.costs
        session, provider, prepared.valid, offer_ids, observed_at, run.id, reread=[*compared, *changes.gone]
    )
    record_locations(session, provider, prepared.valid)
    report.offers_new, report.offers_reopened = len(changes.new), changes.reopened
    report.price_rows, report.fx_rows = changes.price_rows, changes.fx_rows
    report.availability_rows = len(changes.new) + len(changes.availability)
    report.offers_closed = len(changes.gone)
    run.status = RunStatus.ok
    run.offers_new, run.price_rows, run.fx_rows = report.offers_new, report.price_rows, report.fx_rows
    run.offers_closed, run.offers_reopened = report.offers_closed, report.offers_reopened
    bump_data_version(session, observed_at)
    return report


def _report(run: ScrapeRun, result: ScrapeResult, prepared: Prepared) -> IngestReport:
    return IngestReport(
        provider=run.provider,
        run_id=run.id,
        status=RunStatus.ok,
        offers_seen=len(result.offers),
        offers_valid=len(prepared.valid),
        unknown_names=dict(prepared.unknown_counts),
        assumed_names=prepared.assumed,
        invalid=prepared.invalid,
    )


def _quarantine(report: IngestReport, run: ScrapeRun, reason: str) -> IngestReport:
    """Record why and change nothing else: the offers keep the last good run's prices and listing."""
    report.status, report.error = RunStatus.quarantined, reason
    run.status, run.error = RunStatus.quarantined, reason
    return report

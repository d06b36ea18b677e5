"""The claim protocol: which `running` ledger rows are live claims, and which are reclaimed.

Every run that writes to the ledger, the worker's scheduled ones and `gpu-tracker scrape`'s, holds its
provider's lock (`tracker.storage.locks`) from before its `running` row is written until the row is
closed, and judges the provider's other `running` rows the same way before it starts:

* a row this process wrote is alive exactly while one of its threads runs it (`in_flight`);
* on Postgres any other holder is dead by definition: a live one would hold the advisory lock, which
  the server drops with a dead process's connection, and we hold it now;
* on SQLite a holder is dead when it names a process on this host that is gone, or when its row is
  older than the claim lease (a live worker closes its own row when its job timeout fires).

A dead claim is closed `failed` with the reason. For a scheduled run the slot's latest attempt decides
what happens next: a dead one is scraped again as the next `attempt`, a finished one leaves the slot
taken, a live one is left alone.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import Engine

from tracker.config import Settings
from tracker.storage.claims import holder_id, local_process_gone
from tracker.storage.engine import session_scope
from tracker.storage.ledger import RunStatus, claims_to_judge, close_claim
from tracker.storage.locks import provider_locks
from tracker.storage.tables import ScrapeRun

log = logging.getLogger(__name__)

# (database, provider, slot) this process is scraping now (slot None: an unscheduled `scrape` run): a
# `running` row this process wrote is alive exactly while it is listed here, whatever the locks say.
# Counted, not a set: two jobs of one process on one key (two workers whose locks did not keep them apart)
# each hold it, and the first to finish must not make the other's live row look dead to a third.
_in_flight: Counter[tuple[str, str, datetime | None]] = Counter()
_in_flight_guard = threading.Lock()


def job_timeout_s(settings: Settings) -> float:
    """How long a worker's scrape job may run before its run is closed as timed out."""
    return settings.worker_job_timeout_s or settings.scrape_timeout_s + 120


def claim_lease_s(settings: Settings) -> float:
    # A live holder closes its own row when its job timeout fires; past that plus a margin, the
    # row can only be a dead holder's (or a hung one's, which the next slot must not wait for).
    return settings.worker_claim_lease_s or job_timeout_s(settings) + 60


def mark_in_flight(engine: Engine, provider: str, slot: datetime | None) -> None:
    with _in_flight_guard:
        _in_flight[(str(engine.url), provider, slot)] += 1


def unmark_in_flight(engine: Engine, provider: str, slot: datetime | None) -> None:
    with _in_flight_guard:
        key = (str(engine.url), provider, slot)
        if _in_flight[key] > 1:
            _in_flight[key] -= 1
        else:
            _in_flight.pop(key, None)


def is_in_flight(engine: Engine, provider: str, slot: datetime | None) -> bool:
    with _in_flight_guard:
        return _in_flight[(str(engine.url), provider, slot)] > 0


class ClaimState(StrEnum):
    free = "free"  # scrape it (as `Claim.attempt`)
    taken = "taken"  # the slot's run finished (ok, failed, ...): one run per slot
    locked = "locked"  # a live holder is at work on it


@dataclass(frozen=True)
class Claim:
    state: ClaimState
    attempt: int = 0
    holder: str | None = None


def claim_alive(engine: Engine, run: ScrapeRun, now: datetime, lease_s: float) -> bool:
    """Whether a `running` row's holder may still be at work. Called holding the provider's lock."""
    if run.claimed_by == holder_id():
        return is_in_flight(engine, run.provider, run.slot)
    if engine.dialect.name == "postgresql":
        # Every live holder keeps the provider's advisory lock for its whole run, and the server
        # releases it when the holder's connection dies. We hold it, so this holder is gone.
        return False
    if local_process_gone(run.claimed_by):
        return False
    return run.started_at + timedelta(seconds=lease_s) > now


def reclaim(engine: Engine, provider: str, slot: datetime | None, now: datetime, lease_s: float) -> Claim:
    """Under the provider's lock: close the provider's dead claims (any slot, or none), then decide
    whether `slot` may be scraped. Without a slot (an unscheduled run) the answer is always free."""
    me = holder_id()
    closed_here: list[ScrapeRun] = []
    live_here: ScrapeRun | None = None
    with session_scope(engine) as session:
        rows = claims_to_judge(session, provider, slot)
        for run in rows:
            if run.status != RunStatus.running:
                continue
            if claim_alive(engine, run, now, lease_s):
                if slot is not None and run.slot == slot:
                    live_here = run
                continue
            who = "worker" if run.slot is not None else "scrape"
            reason = f"{who} died mid-run (claim reclaimed by {me}; holder {run.claimed_by or 'unknown'})"
            if not close_claim(session, run.id, reason, now):
                if slot is not None and run.slot == slot:  # another worker reclaimed it first, scrapes it now
                    return Claim(ClaimState.taken)
                continue
            log.warning("reclaimed %s run %s (slot %s) from %s: %s", provider, run.id, run.slot, run.claimed_by, reason)
            if slot is not None and run.slot == slot:
                closed_here.append(run)
    if slot is None:
        return Claim(ClaimState.free)
    if live_here is not None:
        return Claim(ClaimState.locked, holder=live_here.claimed_by)
    here = [r for r in rows if r.slot == slot]
    if not here:
        return Claim(ClaimState.free, 0)
    latest = max(here, key=lambda r: r.attempt)
    if latest in closed_here:  # the slot's latest attempt died: scrape it again as the next one
        return Claim(ClaimState.free, latest.attempt + 1)
    return Claim(ClaimState.taken)


@contextmanager
def unscheduled_claims(
    engine: Engine, providers: Iterable[str], settings: Settings, now: datetime
) -> Iterator[set[str]]:
    """For runs outside the schedule (`gpu-tracker scrape`): the providers of `providers` this process
    now holds the claim on, after closing their dead claims; the others are being scraped by another
    process now (it holds the lock). The runs' rows must be written and closed inside the block."""
    with provider_locks(engine, providers) as got:
        try:
            for name in got:
                reclaim(engine, name, None, now, claim_lease_s(settings))
                mark_in_flight(engine, name, None)  # after: our own dead rows are reclaimed too
            yield got
        finally:
            for name in got:
                unmark_in_flight(engine, name, None)

"""The worker: scrape every provider on its own cadence, evaluate alerts, deliver notifications.

Scheduling uses APScheduler 3.x (one in-memory job store per process; job stores are never shared).
Each provider's cadence is cut into slots, `floor(now / interval)`; a run belongs to the slot it
started in, and the run ledger's unique (provider, slot) admits one run per slot however many
workers race for it. Before claiming the slot a worker also takes a Postgres advisory lock keyed by
a stable hash of the provider name (never Python's per-process `hash()`), so two workers never even
fetch concurrently. The lock is transaction-level (`pg_try_advisory_xact_lock`) and held by a
dedicated connection for the whole run: it is released by commit/rollback, so returning that
connection to a pool (or a transaction-pooling pgbouncer) can never leak it. On SQLite (the
embedded, single-process default) a process-local lock stands in.

Every run has a timeout on top of the fetch timeout, so a hung provider cannot block its next slot
(`max_instances=1` would otherwise skip it forever). Misfired runs are coalesced into one, with a
generous grace time (APScheduler's default of 1 s would silently drop runs on a busy host).

A claim outlives its holder only as a `running` row, and is reclaimable: a worker that holds the
provider's lock and finds the slot's row still `running` checks whether its holder is alive. On
Postgres the holder is dead by definition (a live one would hold the advisory lock, which the server
drops with a dead process's connection); on SQLite it is dead when it names a process on this host
that is gone, or when the row is older than the claim lease. The dead run is closed `failed` with
the reason, and the slot is scraped again as the next `attempt`.

A run the database was unreachable for cannot be written to the ledger when it happens: it is kept
in memory (`unrecorded`) and written as a `failed` row once the database answers again (at the next
scrape job or alert sweep), unless another worker has meanwhile recorded that slot, so no slot
vanishes from the ledger. Every database wait is bounded (tracker.storage.engine), so during an
outage each job fails within seconds instead of hanging, and jobs do not pile up.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Connection, CursorResult, Engine, or_, select, text, update
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from providers.cassette import Cassette, CassetteError, bundled_cassette
from providers.contract import Provider, ProviderKind
from providers.registry import all_providers, get_provider
from tracker.alerts.deliver import Deliverer
from tracker.alerts.evaluate import EvaluationReport, evaluate_after_ingest, evaluate_rules
from tracker.alerts.job_cost import CostModel
from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.history.export import scheduled_export
from tracker.ingest.batch import IngestReport
from tracker.market import freshness
from tracker.pipeline.rates import RatesReport, rates_due, update_rates_sync
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.pipeline.slots import SlotTrigger, slot_start
from tracker.storage.claims import holder_id, local_process_gone
from tracker.storage.engine import close_or_drop, session_scope
from tracker.storage.tables import ScrapeRun

log = logging.getLogger(__name__)

_local_locks: dict[tuple[str, str], threading.Lock] = {}
_local_locks_guard = threading.Lock()
# (database, provider, slot) this process is scraping now: a `running` row this process wrote is
# alive exactly while it is listed here, whatever the locks say.
_in_flight: set[tuple[str, str, datetime]] = set()
_in_flight_guard = threading.Lock()


def interval_for(provider: type[Provider], settings: Settings) -> timedelta:
    return freshness.scrape_interval(provider.name, settings, default=provider.default_interval)


def lock_key(provider: str) -> int:
    """A stable signed 64-bit advisory-lock key: the same in every process and on every host."""
    digest = hashlib.sha256(f"gpu-price-tracker:scrape:{provider}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextmanager
def provider_lock(engine: Engine, provider: str) -> Iterator[bool]:
    """Yield True if this worker may scrape `provider` now; the lock holds until the block exits."""
    if engine.dialect.name == "postgresql":
        # A dedicated connection and transaction for the lock alone: the run's own work commits on
        # other connections, and this transaction's end (commit, rollback, or the connection dying)
        # is what releases the lock.
        conn = engine.connect()
        try:
            conn.begin()
            got = bool(conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": lock_key(provider)}).scalar())
        except BaseException:
            _release(conn)
            raise
        try:
            yield got
        finally:
            _release(conn)
        return
    with _local_locks_guard:
        lock = _local_locks.setdefault((str(engine.url), provider), threading.Lock())
    got = lock.acquire(blocking=False)
    try:
        yield got
    finally:
        if got:
            lock.release()


def _release(conn: Connection) -> None:
    """End the lock's transaction. A connection that died took the lock with it (the server ends the
    session), so a failure here must not fail the run that already finished."""
    try:
        close_or_drop(conn)  # rolls the transaction back, which releases the lock
    except SQLAlchemyError as exc:
        log.warning("provider lock: connection lost on release (the server drops the lock with it): %s", exc)
        with suppress(SQLAlchemyError):
            conn.invalidate()


@dataclass(frozen=True)
class UnrecordedRun:
    """A run the ledger could not be told about (database unreachable), to be written when it answers."""

    provider: str
    slot: datetime
    attempt: int
    source: str
    parser_version: str
    started_at: datetime
    failed_at: datetime
    error: str
    tries: int = 1  # scrape jobs for this slot that found the database unreachable

    @property
    def key(self) -> tuple[str, datetime]:
        return self.provider, self.slot


@dataclass(frozen=True)
class _Claim:
    state: str  # free | taken | locked
    attempt: int = 0
    holder: str | None = None


def _unreachable_error(exc: BaseException) -> bool:
    """A database that cannot be reached or cannot take writes now (vs. a bug or a schema problem):
    connect/ping/statement timeouts, a lost connection, an exhausted pool, SQLite's "database is locked"."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError | PoolTimeout | DisconnectionError)


def _short(exc: BaseException) -> str:
    """The driver's message, first line: readable in the ledger, without SQL or SQLAlchemy's links."""
    inner = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text_ = str(inner).strip().splitlines()
    message = text_[0] if text_ else ""
    return f"{type(inner).__name__}: {message}"[:300]


@dataclass
class SlotOutcome:
    provider: str
    slot: datetime
    status: str  # ok | failed | quarantined | skipped | locked | slot_taken | timeout | db_unreachable
    error: str | None = None
    report: IngestReport | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"provider": self.provider, "slot": self.slot, "status": self.status, "error": self.error}
        if self.report:
            out |= {k: v for k, v in self.report.as_dict().items() if k not in out}
        return out


@dataclass
class CycleReport:
    runs: list[SlotOutcome] = field(default_factory=list)
    alerts: EvaluationReport = field(default_factory=EvaluationReport)
    deliveries: dict[str, int] = field(default_factory=dict)
    rates: RatesReport | None = None  # None: the day's rates were already fetched

    def as_dict(self) -> dict[str, Any]:
        return {
            "rates": self.rates.as_dict() if self.rates else None,
            "runs": [r.as_dict() for r in sorted(self.runs, key=lambda r: r.provider)],
            "alerts": {
                "evaluated": self.alerts.evaluated,
                "transitions": [
                    {"rule_id": rid, "from": t.from_state, "to": t.to_state, "reason": t.reason}
                    for rid, t in self.alerts.transitions
                ],
                "notifications_queued": self.alerts.notifications,
                "errors": self.alerts.errors,
            },
            "deliveries": self.deliveries,
        }


class Worker:
    """Scheduler logic without the scheduler: what each job does, callable directly (tests, --once)."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        *,
        clock: Clock = utcnow,
        source: str = "live",  # live | demo | replay
        replay_dir: Path | None = None,
        providers: Sequence[str] | None = None,
        deliverer: Deliverer | None = None,
        cost_model: CostModel | None = None,
    ) -> None:
        if source == "replay" and replay_dir is None:
            raise ValueError("replay needs a cassette directory")
        self.engine, self.settings, self.clock = engine, settings, clock
        self.source, self.replay_dir = source, replay_dir
        self.deliverer = deliverer or Deliverer(engine, settings, clock=clock)
        self.cost_model = cost_model
        self._db = str(engine.url)
        self._unrecorded: dict[tuple[str, datetime], UnrecordedRun] = {}
        self._unrecorded_guard = threading.Lock()
        unknown = set(settings.intervals) - set(all_providers())
        if unknown:
            raise ValueError(f"TRACKER_INTERVALS names unknown providers: {', '.join(sorted(unknown))}")
        chosen = [get_provider(n) for n in providers] if providers else list(all_providers().values())
        self.cassettes: dict[str, Cassette | None] = {}
        self.providers: dict[str, type[Provider]] = {}
        self.unscheduled: dict[str, str] = {}  # provider → why the worker leaves it out
        for cls in chosen:
            if source == "live" and (missing := settings.credentials_for(cls.credentials)[1]):
                # Scheduling it would only fill the ledger with "skipped" rows every interval.
                self.unscheduled[cls.name] = f"no credentials: set {', '.join(missing)}"
                continue
            try:
                self.cassettes[cls.name] = self._cassette_for(cls)
            except (CassetteError, FileNotFoundError) as exc:
                # Offline modes can only run providers they have a recording for.
                self.unscheduled[cls.name] = str(exc)
                continue
            self.providers[cls.name] = cls
        for name, why in self.unscheduled.items():
            log.info("worker: %s not scheduled: %s", name, why)

    def _cassette_for(self, cls: type[Provider]) -> Cassette | None:
        if self.source == "live" or cls.kind == ProviderKind.static_sheet:
            return None
        if self.source == "demo":
            return Cassette.load(bundled_cassette(cls.name))
        assert self.replay_dir is not None
        path = self.replay_dir / f"{cls.name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"no cassette {path}")
        return Cassette.load(path)

    @property
    def job_timeout_s(self) -> float:
        return self.settings.worker_job_timeout_s or self.settings.scrape_timeout_s + 120

    @property
    def claim_lease_s(self) -> float:
        # A live holder closes its own row when its job timeout fires; past that plus a margin, the
        # row can only be a dead holder's (or a hung one's, which the next slot must not wait for).
        return self.settings.worker_claim_lease_s or self.job_timeout_s + 60

    def interval(self, name: str) -> timedelta:
        return interval_for(self.providers[name], self.settings)

    def _job(self, name: str, slot: datetime, attempt: int = 0) -> ScrapeJob:
        source = "live" if self.source == "live" else self.source
        return ScrapeJob(self.providers[name], source, self.cassettes.get(name), slot, attempt)

    def _slot_taken(self, name: str, slot: datetime) -> bool:
        """The slot has a run and none still `running` (a running one may be a dead claim: see `_claim`)."""
        with session_scope(self.engine) as session:
            statuses = session.scalars(
                select(ScrapeRun.status).where(ScrapeRun.provider == name, ScrapeRun.slot == slot)
            ).all()
        return bool(statuses) and "running" not in statuses

    def due(self, now: datetime | None = None) -> list[str]:
        """Providers whose current slot has no run yet (or only a claim that may be dead)."""
        now = now or self.clock()
        return [n for n in self.providers if not self._slot_taken(n, slot_start(now, self.interval(n)))]

    def run_providers(self, names: Sequence[str]) -> list[SlotOutcome]:
        """Scrape `names` for their current slots (concurrently), then evaluate the alerts they touch."""
        now = self.clock()
        slots = {n: slot_start(now, self.interval(n)) for n in names}
        if (down := self.record_unrecorded()) is not None:
            # Still unreachable: each claim would wait out the same timeouts only to fail again (the
            # backlog is only written to here when a run already found the database unreachable).
            return [self._unreachable(n, slots[n], 0, now, down) for n in names]
        outcomes: list[SlotOutcome] = []
        jobs: list[ScrapeJob] = []
        try:
            with ExitStack() as stack:
                for name in names:
                    try:
                        claimed = self._claim_slot(stack, name, slots[name])
                    except SQLAlchemyError as exc:
                        outcomes.append(self._unreachable(name, slots[name], 0, now, exc))
                        continue
                    if isinstance(claimed, SlotOutcome):
                        outcomes.append(claimed)
                    else:
                        jobs.append(claimed)
                if jobs:
                    outcomes.extend(self._scrape(jobs))
        finally:
            with _in_flight_guard:
                _in_flight.difference_update((self._db, j.provider.name, j.slot) for j in jobs if j.slot)
        for outcome in outcomes:
            if outcome.status in ("locked", "slot_taken", "db_unreachable"):
                continue  # the worker that ran it evaluates; or the database cannot answer anyway
            try:
                evaluate_after_ingest(
                    self.engine, self.settings, outcome.provider, self.clock(), cost_model=self.cost_model
                )
            except Exception:
                log.exception("alert evaluation after %s failed", outcome.provider)
        return outcomes

    def _claim_slot(self, stack: ExitStack, name: str, slot: datetime) -> SlotOutcome | ScrapeJob:
        """A job for this slot, holding the provider's lock until `stack` exits; or why not."""
        if self._slot_taken(name, slot):
            return SlotOutcome(name, slot, "slot_taken", "another worker ran this slot")
        with ExitStack() as held:
            if not held.enter_context(provider_lock(self.engine, name)):
                return SlotOutcome(name, slot, "locked", "another worker is scraping it")
            claim = self._claim(name, slot)
            if claim.state == "taken":
                return SlotOutcome(name, slot, "slot_taken", "another worker ran this slot")
            if claim.state == "locked":
                return SlotOutcome(name, slot, "locked", f"claim held by live worker {claim.holder or '(unknown)'}")
            with _in_flight_guard:
                _in_flight.add((self._db, name, slot))
            stack.push(held.pop_all())  # the lock now lasts until the scrape is done
            return self._job(name, slot, claim.attempt)

    def _claim_alive(self, run: ScrapeRun, now: datetime) -> bool:
        """Whether a `running` row's holder may still be at work. Called holding the provider's lock."""
        if run.claimed_by == holder_id():
            with _in_flight_guard:  # this process: alive exactly while one of its threads runs it
                return (self._db, run.provider, run.slot) in _in_flight
        if self.engine.dialect.name == "postgresql":
            # Every live holder keeps the provider's advisory lock for its whole run, and the server
            # releases it when the holder's connection dies. We hold it, so this holder is gone.
            return False
        if local_process_gone(run.claimed_by):
            return False
        return run.started_at + timedelta(seconds=self.claim_lease_s) > now

    def _claim(self, name: str, slot: datetime) -> _Claim:
        """Under the provider's lock: close dead claims (this slot's and older ones), then decide."""
        now, me = self.clock(), holder_id()
        closed_here: list[ScrapeRun] = []
        live_here: ScrapeRun | None = None
        with session_scope(self.engine) as session:
            rows = session.scalars(
                select(ScrapeRun)
                .where(
                    ScrapeRun.provider == name,
                    ScrapeRun.slot.is_not(None),
                    or_(ScrapeRun.slot == slot, ScrapeRun.status == "running"),
                )
                .order_by(ScrapeRun.slot, ScrapeRun.attempt)
            ).all()
            for run in rows:
                if run.status != "running":
                    continue
                if self._claim_alive(run, now):
                    if run.slot == slot:
                        live_here = run
                    continue
                reason = f"worker died mid-run (claim reclaimed by {me}; holder {run.claimed_by or 'unknown'})"
                result = cast(
                    CursorResult[Any],
                    session.execute(
                        update(ScrapeRun)
                        .where(ScrapeRun.id == run.id, ScrapeRun.status == "running")
                        .values(status="failed", error=reason, finished_at=now)
                        .execution_options(synchronize_session=False)
                    ),
                )
                if result.rowcount != 1:
                    if run.slot == slot:  # another worker reclaimed it first and scrapes it now
                        return _Claim("taken")
                    continue
                log.warning("reclaimed %s slot %s from %s: %s", name, run.slot, run.claimed_by, reason)
                if run.slot == slot:
                    closed_here.append(run)
        if live_here is not None:
            return _Claim("locked", holder=live_here.claimed_by)
        here = [r for r in rows if r.slot == slot]
        if not here:
            return _Claim("free", 0)
        latest = max(here, key=lambda r: r.attempt)
        if latest in closed_here:  # the slot's latest attempt died: scrape it again as the next one
            return _Claim("free", latest.attempt + 1)
        return _Claim("taken")  # it finished (ok, failed, ...): one run per slot

    def _scrape(self, jobs: list[ScrapeJob]) -> list[SlotOutcome]:
        started = self.clock()
        done: dict[str, IngestReport] = {}

        def finished(report: IngestReport) -> None:
            done[report.provider] = report

        async def go() -> list[IngestReport]:
            return await asyncio.wait_for(
                run_scrape(jobs, self.engine, self.settings, clock=self.clock, on_done=finished),
                timeout=self.job_timeout_s,
            )

        try:
            reports = asyncio.run(go())
        except TimeoutError:
            return [
                self._outcome(job, done[job.provider.name]) if job.provider.name in done else self._timed_out(job)
                for job in jobs
            ]
        except Exception as exc:
            # The batch ended early: a database that stopped answering (the usual cause), or a bug.
            # Runs that finished are in the ledger; the others would be left `running` or absent.
            log.warning("scrape batch aborted: %s", _short(exc))
            out = []
            for job in jobs:
                if job.provider.name in done:
                    out.append(self._outcome(job, done[job.provider.name]))
                else:
                    assert job.slot is not None
                    out.append(self._unreachable(job.provider.name, job.slot, job.attempt, started, exc))
            if not _unreachable_error(exc):
                self.record_unrecorded()  # the database may well be fine: write them now
            return out
        return [self._outcome(job, report) for job, report in zip(jobs, reports, strict=True)]

    def _outcome(self, job: ScrapeJob, report: IngestReport) -> SlotOutcome:
        assert job.slot is not None
        status = report.status
        if status == "skipped" and report.run_id is None:
            status = "slot_taken"  # lost the ledger race after all: the unique slot did its job
        return SlotOutcome(job.provider.name, job.slot, status, report.error, report)

    def _timed_out(self, job: ScrapeJob) -> SlotOutcome:
        assert job.slot is not None
        error = f"worker timeout after {self.job_timeout_s:.0f}s"
        this_run = (
            ScrapeRun.provider == job.provider.name,
            ScrapeRun.slot == job.slot,
            ScrapeRun.attempt == job.attempt,
        )
        try:
            with session_scope(self.engine) as session:
                session.execute(
                    update(ScrapeRun)
                    .where(*this_run, ScrapeRun.status == "running")
                    .values(status="failed", error=error, finished_at=self.clock())
                )
                # An ingest already under way finishes (its thread cannot be stopped) and may have
                # recorded its own outcome: report what the ledger says, not a timeout that did not stick.
                status = session.scalar(select(ScrapeRun.status).where(*this_run))
        except SQLAlchemyError as exc:
            self._remember(job.provider.name, job.slot, job.attempt, self.clock(), f"{error}; {_short(exc)}")
            return SlotOutcome(job.provider.name, job.slot, "timeout", f"{error} (not yet in the ledger)")
        if status is not None and status != "failed":
            return SlotOutcome(job.provider.name, job.slot, status, None)
        return SlotOutcome(job.provider.name, job.slot, "timeout", error)

    # -- runs the database could not be told about --

    def _unreachable(
        self, name: str, slot: datetime, attempt: int, started_at: datetime, exc: BaseException
    ) -> SlotOutcome:
        if _unreachable_error(exc):
            kind = "database unreachable"
        else:
            kind = "database error" if isinstance(exc, SQLAlchemyError) else "worker error"
        error = f"{kind}: {_short(exc)}"
        self._remember(name, slot, attempt, started_at, error)
        log.warning("scrape %s slot %s: %s (kept to record once the database answers)", name, slot.isoformat(), error)
        return SlotOutcome(name, slot, "db_unreachable", error)

    def _remember(self, name: str, slot: datetime, attempt: int, started_at: datetime, error: str) -> None:
        provider = self.providers[name]
        run = UnrecordedRun(
            provider=name,
            slot=slot,
            attempt=attempt,
            source="live" if self.source == "live" else self.source,
            parser_version=provider.parser_version,
            started_at=started_at,
            failed_at=self.clock(),
            error=error,
        )
        with self._unrecorded_guard:
            earlier = self._unrecorded.get(run.key)
            # One row per slot: the first failure's times and reason, and how many jobs hit the outage.
            self._unrecorded[run.key] = replace(earlier, tries=earlier.tries + 1) if earlier else run

    @property
    def unrecorded(self) -> list[UnrecordedRun]:
        """Failed runs waiting for the database, oldest slot first."""
        with self._unrecorded_guard:
            return sorted(self._unrecorded.values(), key=lambda r: (r.slot, r.provider))

    def record_unrecorded(self) -> SQLAlchemyError | None:
        """Write the backlog to the ledger; the database's error if it still cannot be reached."""
        for run in self.unrecorded:
            try:
                written = self._record(run)
            except SQLAlchemyError as exc:
                if _unreachable_error(exc):
                    log.info("ledger backlog: %d run(s) still unrecorded: %s", len(self.unrecorded), _short(exc))
                    return exc
                # Not an outage: keep the run (nothing is dropped) and let the others through.
                log.exception("ledger backlog: cannot record %s slot %s", run.provider, run.slot.isoformat())
                continue
            with self._unrecorded_guard:
                if self._unrecorded.get(run.key) is run:
                    del self._unrecorded[run.key]
            log.info("ledger backlog: %s slot %s %s", run.provider, run.slot.isoformat(), written)
        return None

    def _record(self, run: UnrecordedRun) -> str:
        error = run.error if run.tries == 1 else f"{run.error} ({run.tries} jobs found it unreachable)"
        error = f"{error}; recorded once the database answered again"
        key = (self._db, run.provider, run.slot)
        try:
            with session_scope(self.engine) as session:
                with _in_flight_guard:
                    ours_in_flight = key in _in_flight
                if not ours_in_flight:
                    # Our own claim, left `running` when the database went away mid-run.
                    closed = cast(
                        CursorResult[Any],
                        session.execute(
                            update(ScrapeRun)
                            .where(
                                ScrapeRun.provider == run.provider,
                                ScrapeRun.slot == run.slot,
                                ScrapeRun.attempt == run.attempt,
                                ScrapeRun.status == "running",
                                ScrapeRun.claimed_by == holder_id(),
                            )
                            .values(status="failed", error=error, finished_at=run.failed_at)
                            .execution_options(synchronize_session=False)
                        ),
                    )
                    if closed.rowcount:
                        return "closed as failed"
                other = session.scalar(
                    select(ScrapeRun.id)
                    .where(
                        ScrapeRun.provider == run.provider, ScrapeRun.slot == run.slot, ScrapeRun.attempt >= run.attempt
                    )
                    .limit(1)
                )
                if other is not None:
                    return "already in the ledger (another worker claimed it)"
                session.add(
                    ScrapeRun(
                        provider=run.provider,
                        slot=run.slot,
                        attempt=run.attempt,
                        source=run.source,
                        status="failed",
                        started_at=run.started_at,
                        finished_at=run.failed_at,
                        error=error,
                        parser_version=run.parser_version,
                    )
                )
        except IntegrityError:
            return "already in the ledger (another worker claimed it)"
        return "recorded as failed"

    # -- scheduler job targets: never raise (APScheduler would only log it) --

    def run_provider(self, name: str) -> SlotOutcome | None:
        try:
            (outcome,) = self.run_providers([name])
            log.info(
                "scrape %s slot %s: %s%s",
                name,
                outcome.slot.isoformat(),
                outcome.status,
                f" ({outcome.error})" if outcome.error else "",
            )
            return outcome
        except Exception:
            log.exception("scrape job for %s failed", name)
            return None

    def sweep(self) -> EvaluationReport:
        # The sweep runs every minute whatever the cadences: the soonest a backlog from an outage
        # reaches the ledger once the database is back.
        self.record_unrecorded()
        try:
            return evaluate_rules(self.engine, self.settings, now=self.clock(), cost_model=self.cost_model)
        except Exception:
            log.exception("alert sweep failed")
            return EvaluationReport(errors=1)

    def deliver(self) -> dict[str, int]:
        try:
            return dict(self.deliverer.deliver_due())
        except Exception:
            log.exception("alert delivery pass failed")
            return {}

    def update_rates(self, only_if_due: bool = False) -> RatesReport | None:
        """Fetch the exchange rates (the ECB's, daily; offline modes replay its cassette). A job target:
        never raises, and a failed fetch keeps the stored rates (`tracker.pipeline.rates`)."""
        try:
            if only_if_due and not rates_due(self.engine, self.clock()):
                return None
            recorded = self.replay_dir / "fx_ecb.json" if self.replay_dir else None  # else the bundled one
            cassette = Cassette.load(recorded) if recorded and recorded.is_file() else None
            return update_rates_sync(self.engine, self.settings, mode=self.source, cassette=cassette, clock=self.clock)
        except Exception:
            log.exception("exchange-rate update failed")
            return None

    def run_once(self) -> CycleReport:
        """One cycle: the day's exchange rates if not fetched yet (before the offers quoted in them), every
        due provider once (concurrently), an alert sweep, one delivery pass."""
        report = CycleReport()
        report.rates = self.update_rates(only_if_due=True)
        report.runs = self.run_providers(self.due())
        report.alerts = self.sweep()
        report.deliveries = self.deliver()
        return report

    # -- scheduling --

    def schedule(self, scheduler: BaseScheduler) -> None:
        for name in self.providers:
            # The current slot right away (if nobody has run it), then each slot's start + jitter.
            scheduler.add_job(
                self.run_provider,
                SlotTrigger(self.interval(name), self.settings.worker_jitter_s),
                args=[name],
                id=f"scrape:{name}",
                name=f"scrape {name}",
                replace_existing=True,
            )
        # Exchange rates: the current slot at start, then once a day (ECB reference rates are daily).
        scheduler.add_job(
            self.update_rates,
            SlotTrigger(timedelta(days=1), self.settings.worker_jitter_s),
            id="fx:rates",
            name="exchange rates",
            replace_existing=True,
        )
        if self.settings.export_dir:  # the install's own open dataset, daily (tracker.history.export)
            scheduler.add_job(scheduled_export, SlotTrigger(timedelta(days=1), self.settings.worker_jitter_s),
                              args=[self.engine, self.settings, self.clock], id="history:export",
                              name="dataset export", replace_existing=True)  # fmt: skip
        scheduler.add_job(
            self.sweep,
            IntervalTrigger(seconds=self.settings.alert_sweep_s, timezone=UTC),
            id="alerts:sweep",
            name="alert sweep",
            replace_existing=True,
        )
        scheduler.add_job(
            self.deliver,
            IntervalTrigger(seconds=self.settings.alert_deliver_s, timezone=UTC),
            id="alerts:deliver",
            name="alert delivery",
            replace_existing=True,
        )


def scheduler_options(settings: Settings) -> dict[str, Any]:
    return {
        "timezone": UTC,
        "executors": {"default": ThreadPoolExecutor(max_workers=settings.worker_threads)},
        # misfire_grace_time must be a job default (a scheduler kwarg is ignored in 3.x).
        "job_defaults": {"coalesce": True, "max_instances": 1, "misfire_grace_time": settings.worker_misfire_grace_s},
    }


def blocking_scheduler(settings: Settings) -> Any:
    """The scheduler `gpu-tracker worker` runs in the foreground (APScheduler stays inside the pipeline)."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    return BlockingScheduler(**scheduler_options(settings))


def start_background_worker(
    engine: Engine, settings: Settings, *, demo: bool = False, providers: Sequence[str] | None = None
) -> BackgroundScheduler:
    """Run the worker inside another process (`gpu-tracker up`): returns the started scheduler.

    A BackgroundScheduler runs jobs on its own threads, so it never touches the API server's event
    loop. Stop it with `scheduler.shutdown(wait=False)` when the server exits.
    """
    worker = Worker(engine, settings, source="demo" if demo else "live", providers=providers)
    scheduler = BackgroundScheduler(**scheduler_options(settings))
    worker.schedule(scheduler)
    scheduler.start()
    return scheduler

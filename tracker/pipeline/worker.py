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
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine, select, text, update

from providers.cassette import Cassette, CassetteError, bundled_cassette
from providers.contract import Provider, ProviderKind
from providers.registry import all_providers, get_provider
from tracker.alerts.deliver import Deliverer
from tracker.alerts.evaluate import EvaluationReport, evaluate_after_ingest, evaluate_rules
from tracker.alerts.job_cost import CostModel
from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.ingest.batch import IngestReport
from tracker.market import freshness
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.pipeline.slots import SlotTrigger, slot_start
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

log = logging.getLogger(__name__)

_local_locks: dict[tuple[str, str], threading.Lock] = {}
_local_locks_guard = threading.Lock()


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
        with engine.connect() as conn, conn.begin():
            got = bool(conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": lock_key(provider)}).scalar())
            yield got
        return
    with _local_locks_guard:
        lock = _local_locks.setdefault((str(engine.url), provider), threading.Lock())
    got = lock.acquire(blocking=False)
    try:
        yield got
    finally:
        if got:
            lock.release()


@dataclass
class SlotOutcome:
    provider: str
    slot: datetime
    status: str  # ok | failed | quarantined | skipped | locked | slot_taken | timeout
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

    def as_dict(self) -> dict[str, Any]:
        return {
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

    def interval(self, name: str) -> timedelta:
        return interval_for(self.providers[name], self.settings)

    def _job(self, name: str, slot: datetime) -> ScrapeJob:
        source = "live" if self.source == "live" else self.source
        return ScrapeJob(self.providers[name], source, self.cassettes.get(name), slot)

    def _slot_taken(self, name: str, slot: datetime) -> bool:
        with session_scope(self.engine) as session:
            return (
                session.scalar(select(ScrapeRun.id).where(ScrapeRun.provider == name, ScrapeRun.slot == slot).limit(1))
                is not None
            )

    def due(self, now: datetime | None = None) -> list[str]:
        """Providers whose current slot has no run yet."""
        now = now or self.clock()
        return [n for n in self.providers if not self._slot_taken(n, slot_start(now, self.interval(n)))]

    def run_providers(self, names: Sequence[str]) -> list[SlotOutcome]:
        """Scrape `names` for their current slots (concurrently), then evaluate the alerts they touch."""
        now = self.clock()
        slots = {n: slot_start(now, self.interval(n)) for n in names}
        outcomes: list[SlotOutcome] = []
        with ExitStack() as stack:
            jobs = []
            for name in names:
                if self._slot_taken(name, slots[name]):
                    outcomes.append(SlotOutcome(name, slots[name], "slot_taken", "another worker ran this slot"))
                    continue
                if not stack.enter_context(provider_lock(self.engine, name)):
                    outcomes.append(SlotOutcome(name, slots[name], "locked", "another worker is scraping it"))
                    continue
                jobs.append(self._job(name, slots[name]))
            if jobs:
                outcomes.extend(self._scrape(jobs))
        for outcome in outcomes:
            if outcome.status in ("locked", "slot_taken"):
                continue  # the worker that ran it evaluates
            try:
                evaluate_after_ingest(
                    self.engine, self.settings, outcome.provider, self.clock(), cost_model=self.cost_model
                )
            except Exception:
                log.exception("alert evaluation after %s failed", outcome.provider)
        return outcomes

    def _scrape(self, jobs: list[ScrapeJob]) -> list[SlotOutcome]:
        async def go() -> list[IngestReport]:
            return await asyncio.wait_for(
                run_scrape(jobs, self.engine, self.settings, clock=self.clock), timeout=self.job_timeout_s
            )

        try:
            reports = asyncio.run(go())
        except TimeoutError:
            return [self._timed_out(job) for job in jobs]
        out = []
        for job, report in zip(jobs, reports, strict=True):
            assert job.slot is not None
            status = report.status
            if status == "skipped" and report.run_id is None:
                status = "slot_taken"  # lost the ledger race after all: the unique slot did its job
            out.append(SlotOutcome(job.provider.name, job.slot, status, report.error, report))
        return out

    def _timed_out(self, job: ScrapeJob) -> SlotOutcome:
        error = f"worker timeout after {self.job_timeout_s:.0f}s"
        with session_scope(self.engine) as session:
            session.execute(
                update(ScrapeRun)
                .where(
                    ScrapeRun.provider == job.provider.name, ScrapeRun.slot == job.slot, ScrapeRun.status == "running"
                )
                .values(status="failed", error=error, finished_at=self.clock())
            )
        assert job.slot is not None
        return SlotOutcome(job.provider.name, job.slot, "timeout", error)

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

    def run_once(self) -> CycleReport:
        """One cycle: every due provider once (concurrently), an alert sweep, one delivery pass."""
        report = CycleReport()
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

"""The worker: scrape every provider on its own cadence, evaluate alerts, deliver notifications.

Scheduling uses APScheduler 3.x (one in-memory job store per process; job stores are never shared).
Each provider's cadence is cut into slots, `floor(now / interval)`; a run belongs to the slot it
started in, and the run ledger's unique (provider, slot) admits one run per slot however many
workers race for it (`tracker.storage.ledger`). Before claiming the slot a worker also takes the
provider's lock (`tracker.storage.locks`: a Postgres advisory lock, a process-local one on SQLite)
and holds it for the whole run, so two workers never even fetch concurrently.

Every run has a timeout on top of the fetch timeout, so a hung provider cannot block its next slot
(`max_instances=1` would otherwise skip it forever). Misfired runs are coalesced into one, with a
generous grace time (APScheduler's default of 1 s would silently drop runs on a busy host).

A claim outlives its holder only as a `running` row, and is reclaimable (`tracker.pipeline.claims`):
the dead run is closed `failed` with the reason, and the slot is scraped again as the next `attempt`.
A run the database was unreachable for is kept in memory and written once it answers
(`tracker.pipeline.backlog`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

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
from tracker.pipeline.backlog import Backlog, short_error, unreachable_error
from tracker.pipeline.claims import (
    ClaimState,
    claim_lease_s,
    job_timeout_s,
    mark_in_flight,
    reclaim,
    unmark_in_flight,
)
from tracker.pipeline.rates import RatesReport, rates_due, update_rates_sync
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.pipeline.slots import SlotTrigger, slot_start
from tracker.storage.ledger import RunStatus, UnrecordedRun, fail_if_running, slot_done
from tracker.storage.locks import provider_locks
from tracker.storage.partitions import ensure_partitions

log = logging.getLogger(__name__)


def interval_for(provider: type[Provider], settings: Settings) -> timedelta:
    return freshness.scrape_interval(provider.name, settings, default=provider.default_interval)


class SlotStatus(StrEnum):
    """What a worker's job did with a slot: the run's own status, or why there was no run."""

    ok = "ok"
    failed = "failed"
    quarantined = "quarantined"
    skipped = "skipped"
    locked = "locked"  # another worker holds the provider's lock, or a live claim on the slot
    slot_taken = "slot_taken"  # the slot already has a finished run
    timeout = "timeout"  # the job ran past the worker's timeout
    db_unreachable = "db_unreachable"  # kept in the backlog until the database answers


# Outcomes of a slot another worker ran, or that the database could not be asked about: no alerts follow.
NOT_RUN_HERE = frozenset({SlotStatus.locked, SlotStatus.slot_taken, SlotStatus.db_unreachable})


@dataclass
class SlotOutcome:
    provider: str
    slot: datetime
    status: SlotStatus
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
        self.backlog = Backlog(engine)
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
        return job_timeout_s(self.settings)

    @property
    def claim_lease_s(self) -> float:
        return claim_lease_s(self.settings)

    def interval(self, name: str) -> timedelta:
        return interval_for(self.providers[name], self.settings)

    def _job(self, name: str, slot: datetime, attempt: int = 0) -> ScrapeJob:
        source = "live" if self.source == "live" else self.source
        return ScrapeJob(self.providers[name], source, self.cassettes.get(name), slot, attempt)

    def _slot_taken(self, name: str, slot: datetime) -> bool:
        """The slot has a run and none still `running` (a running one may be a dead claim: see `_claim_slot`)."""
        return slot_done(self.engine, name, slot)

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
                jobs = self._claim_slots(stack, names, slots, now, outcomes)
                if jobs:
                    outcomes.extend(self._scrape(jobs))
        finally:
            for job in jobs:
                unmark_in_flight(self.engine, job.provider.name, job.slot)
        for outcome in outcomes:
            if outcome.status in NOT_RUN_HERE:
                continue  # the worker that ran it evaluates; or the database cannot answer anyway
            try:
                evaluate_after_ingest(
                    self.engine, self.settings, outcome.provider, self.clock(), cost_model=self.cost_model
                )
            except Exception:
                log.exception("alert evaluation after %s failed", outcome.provider)
        return outcomes

    def _claim_slots(
        self,
        stack: ExitStack,
        names: Sequence[str],
        slots: dict[str, datetime],
        now: datetime,
        outcomes: list[SlotOutcome],
    ) -> list[ScrapeJob]:
        """Jobs for the slots this worker may run, their providers' locks held until `stack` exits; why
        not for the others (appended to `outcomes`).

        The locks are taken together, on one connection (`provider_locks`): one connection each would
        exhaust the engine's pool once more providers are due than it holds (pool_size + max_overflow),
        and every provider past that limit would come back `db_unreachable`. A provider whose lock was
        taken but whose slot turned out done keeps its lock until the batch ends (a transaction-level
        advisory lock cannot be released alone); another worker has nothing to run for it anyway."""
        free: list[str] = []
        for name in names:
            try:
                taken = self._slot_taken(name, slots[name])
            except SQLAlchemyError as exc:
                outcomes.append(self._unreachable(name, slots[name], 0, now, exc))
                continue
            if taken:
                outcomes.append(SlotOutcome(name, slots[name], SlotStatus.slot_taken, "another worker ran this slot"))
            else:
                free.append(name)
        try:
            held = stack.enter_context(provider_locks(self.engine, free))
        except SQLAlchemyError as exc:
            outcomes.extend(self._unreachable(name, slots[name], 0, now, exc) for name in free)
            return []
        jobs: list[ScrapeJob] = []
        for name in free:
            if name not in held:
                outcomes.append(SlotOutcome(name, slots[name], SlotStatus.locked, "another worker is scraping it"))
                continue
            try:
                claimed = self._claim_slot(name, slots[name])
            except SQLAlchemyError as exc:
                outcomes.append(self._unreachable(name, slots[name], 0, now, exc))
                continue
            if isinstance(claimed, SlotOutcome):
                outcomes.append(claimed)
            else:
                jobs.append(claimed)
        return jobs

    def _claim_slot(self, name: str, slot: datetime) -> SlotOutcome | ScrapeJob:
        """A job for this slot, whose provider's lock the caller holds; or why not."""
        # Under the lock: close dead claims (this slot's, older ones, unscheduled runs'), then decide.
        claim = reclaim(self.engine, name, slot, self.clock(), self.claim_lease_s)
        if claim.state == ClaimState.taken:
            return SlotOutcome(name, slot, SlotStatus.slot_taken, "another worker ran this slot")
        if claim.state == ClaimState.locked:
            holder = claim.holder or "(unknown)"
            return SlotOutcome(name, slot, SlotStatus.locked, f"claim held by live worker {holder}")
        mark_in_flight(self.engine, name, slot)
        return self._job(name, slot, claim.attempt)

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
            log.warning("scrape batch aborted: %s", short_error(exc))
            out = []
            for job in jobs:
                if job.provider.name in done:
                    out.append(self._outcome(job, done[job.provider.name]))
                else:
                    assert job.slot is not None
                    out.append(self._unreachable(job.provider.name, job.slot, job.attempt, started, exc))
            if not unreachable_error(exc):
                self.record_unrecorded()  # the database may well be fine: write them now
            return out
        return [self._outcome(job, report) for job, report in zip(jobs, reports, strict=True)]

    def _outcome(self, job: ScrapeJob, report: IngestReport) -> SlotOutcome:
        assert job.slot is not None
        status = SlotStatus(report.status)
        if status == SlotStatus.skipped and report.run_id is None:
            status = SlotStatus.slot_taken  # lost the ledger race after all: the unique slot did its job
        return SlotOutcome(job.provider.name, job.slot, status, report.error, report)

    def _timed_out(self, job: ScrapeJob) -> SlotOutcome:
        assert job.slot is not None
        name, slot, now = job.provider.name, job.slot, self.clock()
        error = f"worker timeout after {self.job_timeout_s:.0f}s"
        try:
            status = fail_if_running(self.engine, name, slot, job.attempt, error, now)
        except SQLAlchemyError as exc:
            self._remember(name, slot, job.attempt, self.clock(), f"{error}; {short_error(exc)}")
            return SlotOutcome(name, slot, SlotStatus.timeout, f"{error} (not yet in the ledger)")
        if status is not None and status != RunStatus.failed:  # it finished after all
            return SlotOutcome(name, slot, SlotStatus(status), None)
        return SlotOutcome(name, slot, SlotStatus.timeout, error)

    # -- runs the database could not be told about (tracker.pipeline.backlog) --

    def _unreachable(
        self, name: str, slot: datetime, attempt: int, started_at: datetime, exc: BaseException
    ) -> SlotOutcome:
        if unreachable_error(exc):
            kind = "database unreachable"
        else:
            kind = "database error" if isinstance(exc, SQLAlchemyError) else "worker error"
        error = f"{kind}: {short_error(exc)}"
        self._remember(name, slot, attempt, started_at, error)
        log.warning("scrape %s slot %s: %s (kept to record once the database answers)", name, slot.isoformat(), error)
        return SlotOutcome(name, slot, SlotStatus.db_unreachable, error)

    def _remember(self, name: str, slot: datetime, attempt: int, started_at: datetime, error: str) -> None:
        self.backlog.remember(
            UnrecordedRun(
                provider=name,
                slot=slot,
                attempt=attempt,
                source="live" if self.source == "live" else self.source,
                parser_version=self.providers[name].parser_version,
                started_at=started_at,
                failed_at=self.clock(),
                error=error,
            )
        )

    @property
    def unrecorded(self) -> list[UnrecordedRun]:
        """Failed runs waiting for the database, oldest slot first."""
        return self.backlog.runs

    def record_unrecorded(self) -> SQLAlchemyError | None:
        """Write the backlog to the ledger; the database's error if it still cannot be reached."""
        return self.backlog.flush()

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

    def ensure_partitions(self) -> list[str]:
        """Create the coming months' history partitions (Postgres; tracker.storage.partitions) well before
        rows need them. A job target: never raises (a row with no partition lands in DEFAULT meanwhile)."""
        try:
            return ensure_partitions(self.engine, self.clock())
        except Exception:
            log.exception("history partition upkeep failed")
            return []

    def run_once(self) -> CycleReport:
        """One cycle: the day's exchange rates if not fetched yet (before the offers quoted in them), every
        due provider once (concurrently), an alert sweep, one delivery pass."""
        report = CycleReport()
        self.ensure_partitions()  # a worker run from cron (`--once`) keeps the partitions too
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
        # History partitions: at start, then daily (three months ahead, so a missed day costs nothing).
        scheduler.add_job(
            self.ensure_partitions,
            SlotTrigger(timedelta(days=1), self.settings.worker_jitter_s),
            id="history:partitions",
            name="history partitions",
            replace_existing=True,
        )
        if self.settings.export_dir:  # the install's own open dataset, daily (tracker.history.export)
            scheduler.add_job(
                scheduled_export,
                SlotTrigger(timedelta(days=1), self.settings.worker_jitter_s),
                args=[self.engine, self.settings, self.clock],
                id="history:export",
                name="dataset export",
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

"""Run providers and ingest what they return: concurrently, each isolated from the others.

Every provider gets its own ledger row, its own HTTP client (live, or replaying a cassette) and its own
ingest transaction. A provider that times out, errors or returns garbage ends `failed` with a readable
reason and stores nothing; the others carry on. Fetches share one bound on open connections; ingest
runs in a worker thread so a slow database write never stalls another provider's fetch.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
from sqlalchemy import Engine

from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import (
    FetchContext,
    MissingCredentials,
    Provider,
    ProviderError,
    ProviderKind,
    ProviderUnreachable,
    ScrapeResult,
)
from providers.fetching import fetch_offers
from providers.registry import all_providers, get_provider
from providers.schema import Capture, capture_json
from tracker.catalog.gpus import get_catalog
from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.ingest.batch import IngestReport, ingest
from tracker.pipeline import drift
from tracker.pipeline.claims import unscheduled_claims
from tracker.pipeline.credentials import credentials_of
from tracker.pipeline.rates import ensure_offline_rates, ensure_rates_for
from tracker.storage.engine import session_scope
from tracker.storage.ledger import RunStatus, finish_run, start_run
from tracker.storage.tables import ScrapeRun

log = logging.getLogger(__name__)


# An unscheduled run whose provider another process is scraping now (it holds the provider's lock).
BUSY = "another process is scraping it now; its run records the prices"


class _DryRunRollback(Exception):
    pass


class _ReleaseOnClose(httpx.AsyncByteStream):
    """A response body that gives its connection slot back when it is closed (read or not)."""

    def __init__(self, inner: httpx.AsyncByteStream, gate: asyncio.Semaphore) -> None:
        self.inner, self.gate, self.released = inner, gate, False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if not self.released:
                self.released = True
                self.gate.release()


class _BoundedTransport(httpx.AsyncBaseTransport):
    """Shares one limit on in-flight requests across every provider's client.

    The slot is held until the body is closed, not until it is read into memory here: the provider
    layer streams bodies under its own size caps (providers.http), so a huge or endless answer stops
    at the cap instead of being buffered whole.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, gate: asyncio.Semaphore) -> None:
        self.inner, self.gate = inner, gate

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await self.gate.acquire()
        try:
            response = await self.inner.handle_async_request(request)
        except BaseException:
            self.gate.release()
            raise
        if not isinstance(response.stream, httpx.AsyncByteStream):  # pragma: no cover - httpx always streams
            await response.aread()
            self.gate.release()
            return response
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_ReleaseOnClose(response.stream, self.gate),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class ScrapeJob:
    provider: type[Provider]
    source: str = "live"  # live | replay | demo
    cassette: Cassette | None = None
    slot: datetime | None = None
    attempt: int = 0  # > 0 only for a slot reclaimed from a dead worker (tracker.pipeline.worker)


def plan(
    names: Sequence[str], *, replay: Path | None = None, demo: bool = False, only_keyless: bool = False
) -> list[ScrapeJob]:
    """Which providers to run and from where. Raises KeyError/CassetteError with readable messages."""
    if replay is not None:
        cassette = Cassette.load(replay)
        if not names and cassette.provider:
            names = [cassette.provider]
        if len(names) != 1:
            raise ValueError("--replay takes exactly one provider (or a cassette naming its provider)")
        return [ScrapeJob(get_provider(names[0]), "replay", cassette)]
    chosen = [get_provider(n) for n in names] if names else list(all_providers().values())
    if demo:
        jobs = []
        for p in chosen:
            sample = None if p.kind == ProviderKind.static_sheet else Cassette.load(bundled_cassette(p.name))
            jobs.append(ScrapeJob(p, "demo", sample))
        return jobs
    return [ScrapeJob(p) for p in chosen]


def _start_run(engine: Engine, job: ScrapeJob, clock: Clock) -> int | None:
    """Claim the ledger row; None when another worker already holds this provider's slot."""
    return start_run(
        engine,
        provider=job.provider.name,
        slot=job.slot,
        attempt=job.attempt,
        source=job.source,
        parser_version=job.provider.parser_version,
        started_at=clock(),
    )


def _ingest(
    engine: Engine,
    job: ScrapeJob,
    run_id: int | None,
    result: ScrapeResult,
    settings: Settings,
    observed_at: datetime,
    clock: Clock,
    schema_warnings: list[dict[str, str]] | None = None,
) -> IngestReport:
    """Ingest in one transaction; a dry run (no run_id) does the same work and rolls it all back."""
    dry_run = run_id is None
    report: IngestReport | None = None
    try:
        with session_scope(engine) as session:
            if run_id is None:
                run = ScrapeRun(
                    provider=job.provider.name,
                    source=job.source,
                    status=RunStatus.running,
                    started_at=observed_at,
                    parser_version=job.provider.parser_version,
                )
                session.add(run)
                session.flush()
            else:
                run = session.get_one(ScrapeRun, run_id)
            report = ingest(session, run, result, catalog=get_catalog(), settings=settings, observed_at=observed_at)
            run.schema_warnings = schema_warnings
            run.finished_at = clock()
            if dry_run:
                raise _DryRunRollback
    except _DryRunRollback:
        pass
    assert report is not None
    return report


async def _run_one(
    job: ScrapeJob,
    engine: Engine,
    settings: Settings,
    gate: asyncio.Semaphore,
    clock: Clock,
    run_id: int | None,
) -> IngestReport:
    provider = job.provider
    name = provider.name

    warnings: list[dict[str, str]] | None = None

    def fail(status: RunStatus, error: str) -> IngestReport:
        if run_id is not None:
            finish_run(engine, run_id, status, error, clock(), warnings)
        return IngestReport(provider=name, run_id=run_id, status=status, error=error, schema_warnings=warnings or [])

    if job.source == "live":
        credentials, missing = credentials_of(provider, settings)
        if missing:
            return fail(RunStatus.skipped, f"no credentials: set {', '.join(missing)}")
        inner: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport(retries=0)
    else:
        credentials = {c: provider.demo_credentials.get(c, "replay") for c in provider.credentials}
        inner = ReplayTransport(job.cassette) if job.cassette else httpx.MockTransport(_no_network)

    transport = _BoundedTransport(inner, gate)
    async with httpx.AsyncClient(
        transport=transport,
        timeout=settings.http_timeout_s,
        follow_redirects=False,
        headers={"user-agent": "gpu-price-tracker/0.1 (+https://github.com/gpu-price-tracker)"},
    ) as client:
        ctx = FetchContext(
            client=client,
            credentials=credentials,
            retries=settings.http_retries,
            backoff_base_s=0.0 if job.source != "live" else 0.5,
        )
        seen: Capture | None = None
        try:
            try:
                with capture_json() as seen:
                    result = await asyncio.wait_for(fetch_offers(provider, ctx), timeout=settings.scrape_timeout_s)
            finally:
                # After the capture has ended (the baseline replays a cassette of its own), and also after
                # a failure: the bodies decoded before it often say why.
                if seen is not None:
                    warnings = await _schema_warnings(provider, seen)
        except MissingCredentials as exc:
            return fail(RunStatus.skipped, str(exc))
        except ProviderUnreachable as exc:
            # Said once for the whole batch by run_scrape (no network is one problem, not sixty).
            log.info("provider %s unreachable: %s", name, exc)
            return fail(RunStatus.failed, f"{UNREACHABLE}{exc}")
        except TimeoutError:
            return fail(RunStatus.failed, f"timed out after {settings.scrape_timeout_s:.0f}s")
        except ProviderError as exc:
            log.warning("provider %s failed: %s", name, exc)
            return fail(RunStatus.failed, str(exc))
        except Exception as exc:  # a parser bug too stays contained to its own run
            log.exception("provider %s raised unexpectedly", name)
            return fail(RunStatus.failed, f"{type(exc).__name__}: {exc}")
    if run_id is not None:  # a dry run stores nothing, rates included
        await ensure_rates_for(engine, settings, {o.currency for o in result.offers}, source=job.source, clock=clock)
    observed_at = clock()
    try:
        report = await asyncio.to_thread(_ingest, engine, job, run_id, result, settings, observed_at, clock, warnings)
        report.schema_warnings = warnings or []
        return report
    except Exception as exc:
        log.exception("ingest for %s failed", name)
        return fail(RunStatus.failed, f"ingest error: {type(exc).__name__}: {exc}")


async def _schema_warnings(provider: type[Provider], seen: Capture) -> list[dict[str, str]] | None:
    """The fetch's response shapes against the fields the parser reads from its bundled cassette; logged,
    and kept with the run. None when nothing was compared (a static sheet, a CSV price list)."""
    if provider.kind == ProviderKind.static_sheet or not seen.shapes:
        return None
    try:
        baseline = await drift.baseline_for(provider)
    except Exception:  # a broken baseline must never fail a scrape; doctor reports it
        log.exception("provider %s: no schema baseline", provider.name)
        return None
    issues = drift.schema_warnings(baseline, seen)
    for issue in issues:
        (log.warning if issue.drift else log.info)("provider %s: %s", provider.name, issue)
    return [issue.as_dict() for issue in issues]


def _no_network(request: httpx.Request) -> httpx.Response:
    raise RuntimeError(f"no cassette for {request.url.host}: offline run cannot reach the network")


async def run_scrape(
    jobs: Sequence[ScrapeJob],
    engine: Engine,
    settings: Settings,
    *,
    clock: Clock = utcnow,
    dry_run: bool = False,
    on_done: Callable[[IngestReport], None] | None = None,
) -> list[IngestReport]:
    gate = asyncio.Semaphore(settings.max_connections)
    if not dry_run and any(j.source == "demo" for j in jobs):
        # Demo offers quoted in EUR need a rate: the bundled reference rates, when none is stored yet.
        await ensure_offline_rates(engine, settings, clock)

    async def one(job: ScrapeJob, claimed: set[str]) -> IngestReport:
        if dry_run:
            report = await _run_one(job, engine, settings, gate, clock, None)
        elif job.slot is None and job.provider.name not in claimed:
            report = IngestReport(provider=job.provider.name, run_id=None, status=RunStatus.skipped, error=BUSY)
        else:  # claimed here, or (a slot) by the worker, which holds the provider's lock
            report = await _run_claimed(job, engine, settings, gate, clock)
        if on_done:
            on_done(report)
        return report

    # A run outside the schedule claims its provider like a worker's run (tracker.pipeline.claims), so
    # a killed `gpu-tracker scrape` leaves a `running` row that is reclaimed like a dead worker's.
    unscheduled = [] if dry_run else [j.provider.name for j in jobs if j.slot is None]
    stack = ExitStack()
    try:
        claims = unscheduled_claims(engine, unscheduled, settings, clock())
        claimed = await asyncio.to_thread(stack.enter_context, claims)
        reports = list(await asyncio.gather(*(one(j, claimed) for j in jobs)))
        NETWORK.record(reports)
        return reports
    finally:
        await asyncio.to_thread(stack.close)  # the claims' locks: a connection to end on Postgres


UNREACHABLE = "unreachable: "
NO_NETWORK_AFTER = 3  # providers in a row that could not be reached before the likely cause is said


class _NetworkNotice:
    """ "No network?" said once, not once per provider: the worker scrapes each provider as its own job, so a
    machine without network would otherwise log sixty failures. Each unreachable provider is logged at
    INFO; after NO_NETWORK_AFTER in a row with no provider reached, one warning names them and the way to
    see data offline; the first provider reached again ends the outage (and says so)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: list[str] = []
        self._said = False

    def record(self, reports: Sequence[IngestReport]) -> None:
        with self._lock:
            for report in reports:
                if (report.error or "").startswith(UNREACHABLE):
                    self._down.append(report.provider)
                elif report.status == RunStatus.ok and get_provider(report.provider).kind != ProviderKind.static_sheet:
                    if self._said:
                        log.warning("providers reachable again (%s answered)", report.provider)
                    self._down, self._said = [], False
            if not self._said and len(self._down) >= NO_NETWORK_AFTER:
                self._said = True
                log.warning(
                    "providers unreachable (%s): no network? `make up DEMO=1` (gpu-tracker up --demo) shows "
                    "the bundled samples offline; each further failure is logged at INFO",
                    ", ".join(self._down),
                )


NETWORK = _NetworkNotice()


async def _run_claimed(
    job: ScrapeJob, engine: Engine, settings: Settings, gate: asyncio.Semaphore, clock: Clock
) -> IngestReport:
    """Write the run's ledger row, then run it; a slot whose row another worker wrote first is skipped."""
    run_id = await asyncio.to_thread(_start_run, engine, job, clock)
    if run_id is None:
        return IngestReport(
            provider=job.provider.name,
            run_id=None,
            status=RunStatus.skipped,
            error="slot already taken by another worker",
        )
    return await _run_one(job, engine, settings, gate, clock, run_id)

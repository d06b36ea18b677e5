"""The run ledger (`scrape_runs`): one row per provider scrape attempt, whatever its outcome.

A `running` row is a claim on its provider (and, for a scheduled run, its slot): the unique
(provider, slot, attempt) admits one run per slot however many workers race for it. The claim protocol
that decides whether a `running` row's holder is still alive is the pipeline's
(`tracker.pipeline.claims`); the reads and writes it needs are here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.storage.claims import holder_id
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun

__all__ = [
    "RunStatus",
    "UnrecordedRun",
    "claims_to_judge",
    "close_claim",
    "fail_if_running",
    "finish_run",
    "record_unrecorded",
    "slot_done",
    "start_run",
]


class RunStatus(StrEnum):
    """A ledger row's `status`. A StrEnum, so the stored values are these plain strings."""

    running = "running"  # a claim: its holder is at work, or died (then reclaimable)
    ok = "ok"
    failed = "failed"
    quarantined = "quarantined"  # fetched, but the batch looked broken: nothing applied
    skipped = "skipped"  # not attempted (no credentials)


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


def start_run(
    engine: Engine,
    *,
    provider: str,
    slot: datetime | None,
    attempt: int,
    source: str,
    parser_version: str,
    started_at: datetime,
) -> int | None:
    """Write the run's `running` row (its claim); None when another worker already holds this slot."""
    try:
        with session_scope(engine) as session:
            run = ScrapeRun(
                provider=provider,
                slot=slot,
                attempt=attempt,
                source=source,
                status=RunStatus.running,
                started_at=started_at,
                parser_version=parser_version,
            )
            session.add(run)
            session.flush()
            return run.id
    except IntegrityError:
        return None


def finish_run(
    engine: Engine,
    run_id: int,
    status: RunStatus,
    error: str | None,
    finished_at: datetime,
    schema_warnings: list[dict[str, str]] | None = None,
) -> None:
    with session_scope(engine) as session:
        run = session.get_one(ScrapeRun, run_id)
        run.status, run.error, run.finished_at = status, error, finished_at
        run.schema_warnings = schema_warnings


def slot_done(engine: Engine, provider: str, slot: datetime) -> bool:
    """The slot has a run and none still `running` (a running one may be a dead claim)."""
    with session_scope(engine) as session:
        statuses = session.scalars(
            select(ScrapeRun.status).where(ScrapeRun.provider == provider, ScrapeRun.slot == slot)
        ).all()
    return bool(statuses) and RunStatus.running not in statuses


def claims_to_judge(session: Session, provider: str, slot: datetime | None) -> Sequence[ScrapeRun]:
    """The provider's `running` rows, scheduled or not, and every row of `slot` (if given), oldest first."""
    running = ScrapeRun.status == RunStatus.running
    return session.scalars(
        select(ScrapeRun)
        .where(ScrapeRun.provider == provider, or_(ScrapeRun.slot == slot, running) if slot is not None else running)
        .order_by(ScrapeRun.slot.is_(None), ScrapeRun.slot, ScrapeRun.attempt, ScrapeRun.id)
    ).all()


def close_claim(session: Session, run_id: int, reason: str, at: datetime) -> bool:
    """Close a dead holder's `running` row as failed; False when someone else closed it first."""
    result = cast(
        CursorResult[Any],
        session.execute(
            update(ScrapeRun)
            .where(ScrapeRun.id == run_id, ScrapeRun.status == RunStatus.running)
            .values(status=RunStatus.failed, error=reason, finished_at=at)
            .execution_options(synchronize_session=False)
        ),
    )
    return result.rowcount == 1


def fail_if_running(
    engine: Engine, provider: str, slot: datetime, attempt: int, error: str, at: datetime
) -> RunStatus | None:
    """Close this run `failed` unless it finished already; returns the status the ledger now holds."""
    this_run = (ScrapeRun.provider == provider, ScrapeRun.slot == slot, ScrapeRun.attempt == attempt)
    with session_scope(engine) as session:
        session.execute(
            update(ScrapeRun)
            .where(*this_run, ScrapeRun.status == RunStatus.running)
            .values(status=RunStatus.failed, error=error, finished_at=at)
        )
        # An ingest already under way finishes (its thread cannot be stopped) and may have recorded
        # its own outcome: what the ledger says, not a timeout that did not stick.
        status = session.scalar(select(ScrapeRun.status).where(*this_run))
    return RunStatus(status) if status is not None else None


def record_unrecorded(engine: Engine, run: UnrecordedRun, *, close_own_claim: bool) -> str:
    """Write a run the database was unreachable for as `failed`, once it answers again; how it went.

    `close_own_claim`: this process's own `running` row for the run, left when the database went away
    mid-run, is closed (only when no thread of this process still runs it). Another worker's row for
    the slot wins: the slot is in the ledger already."""
    error = run.error if run.tries == 1 else f"{run.error} ({run.tries} jobs found it unreachable)"
    error = f"{error}; recorded once the database answered again"
    this_slot = (ScrapeRun.provider == run.provider, ScrapeRun.slot == run.slot)
    try:
        with session_scope(engine) as session:
            if close_own_claim:
                closed = cast(
                    CursorResult[Any],
                    session.execute(
                        update(ScrapeRun)
                        .where(
                            *this_slot,
                            ScrapeRun.attempt == run.attempt,
                            ScrapeRun.status == RunStatus.running,
                            ScrapeRun.claimed_by == holder_id(),
                        )
                        .values(status=RunStatus.failed, error=error, finished_at=run.failed_at)
                        .execution_options(synchronize_session=False)
                    ),
                )
                if closed.rowcount:
                    return "closed as failed"
            other = session.scalar(select(ScrapeRun.id).where(*this_slot, ScrapeRun.attempt >= run.attempt).limit(1))
            if other is not None:
                return "already in the ledger (another worker claimed it)"
            session.add(
                ScrapeRun(
                    provider=run.provider,
                    slot=run.slot,
                    attempt=run.attempt,
                    source=run.source,
                    status=RunStatus.failed,
                    started_at=run.started_at,
                    finished_at=run.failed_at,
                    error=error,
                    parser_version=run.parser_version,
                )
            )
    except IntegrityError:
        return "already in the ledger (another worker claimed it)"
    return "recorded as failed"

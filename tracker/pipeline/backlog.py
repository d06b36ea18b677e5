"""The outage backlog: runs the database was unreachable for, written to the ledger once it answers.

A run the database was unreachable for cannot be written to the ledger when it happens: it is kept in
memory (one entry per slot, with how many jobs hit the outage) and written as a `failed` row once the
database answers again (at the next scrape job or alert sweep), unless another worker has meanwhile
recorded that slot, so no slot vanishes from the ledger. Every database wait is bounded
(tracker.storage.engine), so during an outage each job fails within seconds instead of hanging.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tracker.pipeline.claims import is_in_flight
from tracker.storage.ledger import UnrecordedRun, record_unrecorded

log = logging.getLogger(__name__)


def unreachable_error(exc: BaseException) -> bool:
    """A database that cannot be reached or cannot take writes now (vs. a bug or a schema problem):
    connect/ping/statement timeouts, a lost connection, an exhausted pool, SQLite's "database is locked"."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError | PoolTimeout | DisconnectionError)


def short_error(exc: BaseException) -> str:
    """The driver's message, first line: readable in the ledger, without SQL or SQLAlchemy's links."""
    inner = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = str(inner).strip().splitlines()
    message = lines[0] if lines else ""
    return f"{type(inner).__name__}: {message}"[:300]


class Backlog:
    """One worker's unrecorded runs, by (provider, slot). Thread-safe: scrape jobs and sweeps share it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._runs: dict[tuple[str, object], UnrecordedRun] = {}
        self._guard = threading.Lock()

    def remember(self, run: UnrecordedRun) -> None:
        with self._guard:
            earlier = self._runs.get(run.key)
            # One row per slot: the first failure's times and reason, and how many jobs hit the outage.
            self._runs[run.key] = replace(earlier, tries=earlier.tries + 1) if earlier else run

    @property
    def runs(self) -> list[UnrecordedRun]:
        """Failed runs waiting for the database, oldest slot first."""
        with self._guard:
            return sorted(self._runs.values(), key=lambda r: (r.slot, r.provider))

    def flush(self) -> SQLAlchemyError | None:
        """Write the backlog to the ledger; the database's error if it still cannot be reached."""
        for run in self.runs:
            try:
                # Our own claim, left `running` when the database went away mid-run, is closed, unless
                # a thread of this process still runs it.
                own = not is_in_flight(self.engine, run.provider, run.slot)
                written = record_unrecorded(self.engine, run, close_own_claim=own)
            except SQLAlchemyError as exc:
                if unreachable_error(exc):
                    log.info("ledger backlog: %d run(s) still unrecorded: %s", len(self.runs), short_error(exc))
                    return exc
                # Not an outage: keep the run (nothing is dropped) and let the others through.
                log.exception("ledger backlog: cannot record %s slot %s", run.provider, run.slot.isoformat())
                continue
            with self._guard:
                if self._runs.get(run.key) is run:
                    del self._runs[run.key]
            log.info("ledger backlog: %s slot %s %s", run.provider, run.slot.isoformat(), written)
        return None

"""The worker under faults: a database that stops answering, and workers that die holding a claim.

An outage is real on both backends. On Postgres every worker connection goes through a loopback proxy
that black-holes traffic (a silent partition: nothing is closed, only client timeouts end a wait); on
SQLite another connection holds the write lock past the busy timeout, which is how an embedded
database becomes unavailable. Either way the worker's run must end within the configured bounds and
appear in the ledger as `failed`, with the reason, once the database answers again.

A dead holder is a real process killed with SIGKILL mid-run (both backends), or a `running` row
written the way such a process leaves it. A live holder must still be respected.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from providers.cassette import bundled_cassette
from tests.factories.alerts import local
from tests.factories.network import BlackholeProxy
from tracker.config import Settings
from tracker.pipeline.slots import slot_start
from tracker.pipeline.worker import Worker
from tracker.storage.engine import make_engine, session_scope
from tracker.storage.locks import provider_lock
from tracker.storage.tables import ScrapeRun

REPO = Path(__file__).resolve().parents[3]
FIVE_MIN = timedelta(minutes=5)
MARGIN_S = 3.0  # scheduling slack on a shared two-core machine


@pytest.fixture
def settings(settings):
    return local(settings, intervals={"vastai": 300})


@pytest.fixture
def replay_dir(tmp_path: Path) -> Path:
    d = tmp_path / "cassettes"
    d.mkdir()
    shutil.copy(bundled_cassette("vastai"), d / "vastai.json")
    return d


def make_worker(engine: Engine, settings: Settings, clock, replay_dir: Path) -> Worker:
    return Worker(engine, settings, clock=clock, source="replay", replay_dir=replay_dir, providers=["vastai"])


def ledger(engine: Engine, provider: str = "vastai") -> list[tuple[datetime | None, int, str, str | None]]:
    with session_scope(engine) as s:
        rows = s.execute(
            select(ScrapeRun.slot, ScrapeRun.attempt, ScrapeRun.status, ScrapeRun.error)
            .where(ScrapeRun.provider == provider)
            .order_by(ScrapeRun.slot, ScrapeRun.attempt)
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


def within(limit_s: float, fn: Callable[[], Any]) -> Any:
    """fn() run in a thread; fails if it has not returned after limit_s (a hang must fail, not block)."""
    out: dict[str, Any] = {}

    def go() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=go, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"the worker was still waiting on the database after {limit_s:.1f}s"
    if "error" in out:
        raise out["error"]
    out["elapsed"] = time.monotonic() - started
    return out["value"]


# --------------------------------------------------------------------------------- database outage


@dataclass
class Outage:
    engine: Engine  # the worker's: every one of its connections is cut off by start()
    settings: Settings
    start: Callable[[], None]
    end: Callable[[], None]
    bound_s: float  # the longest one failing database call may take, from the settings


@pytest.fixture
def outage(request, engine: Engine, settings: Settings, tmp_path: Path) -> Iterator[Outage]:
    fast: dict[str, Any] = {"db_connect_timeout_s": 2, "db_ping_timeout_s": 0.5, "db_pool_timeout_s": 1.0}
    if engine.dialect.name == "postgresql":
        pg_url = request.getfixturevalue("pg_url")  # bare: the fixture engine's URL carries default timeouts
        with BlackholeProxy() as proxy:
            url = make_url(pg_url).set(port=proxy.port).render_as_string(hide_password=False)
            s = settings.model_copy(update=fast | {"database_url": url, "db_statement_timeout_s": 5.0})
            worker_engine = make_engine(url, s)
            yield Outage(worker_engine, s, proxy.partition, proxy.heal, s.db_ping_timeout_s + s.db_connect_timeout_s)
            proxy.heal()
            worker_engine.dispose()
        return
    url = engine.url.render_as_string(hide_password=False)
    s = settings.model_copy(update=fast | {"database_url": url, "db_statement_timeout_s": 0.5})
    worker_engine = make_engine(url, s)
    holder: list[Any] = []

    def start() -> None:  # another process's long write transaction
        import sqlite3

        conn = sqlite3.connect(make_url(url).database or "", isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")
        holder.append(conn)

    def end() -> None:
        while holder:
            conn = holder.pop()
            conn.execute("ROLLBACK")
            conn.close()

    yield Outage(worker_engine, s, start, end, s.db_statement_timeout_s)
    end()
    worker_engine.dispose()


def test_a_run_the_database_was_unreachable_for_is_recorded_failed_once_it_is_back(engine, outage, clock, replay_dir):
    worker = make_worker(outage.engine, outage.settings, clock, replay_dir)
    slot = slot_start(clock(), FIVE_MIN)
    outage.start()
    # Two database calls at most (the claim, then recording its failure would be one more: none is
    # attempted while down): the job ends within the bound instead of hanging the scheduler thread.
    outcome = within(2 * outage.bound_s + MARGIN_S, lambda: worker.run_provider("vastai"))
    assert outcome is not None and outcome.status == "db_unreachable"
    assert "database unreachable" in (outcome.error or "")
    assert [r.slot for r in worker.unrecorded] == [slot]
    outage.end()
    assert ledger(engine) == []  # nothing could be written during the outage
    worker.sweep()  # the next job of any kind writes the backlog
    ((row_slot, attempt, status, error),) = ledger(engine)
    assert (row_slot, attempt, status) == (slot, 0, "failed")
    assert "database unreachable" in (error or "") and "recorded once the database answered again" in (error or "")
    assert worker.unrecorded == []
    assert worker.due() == []  # the slot is accounted for, not silently free or silently skipped
    clock.advance(minutes=5)
    assert worker.run_providers(["vastai"])[0].status == "ok"  # and the next slot runs as usual


def test_a_run_cut_off_mid_scrape_leaves_no_running_row_behind(engine, outage, clock, replay_dir):
    worker = make_worker(outage.engine, outage.settings, clock, replay_dir)
    base = worker.providers["vastai"]

    class CutOff(base):  # type: ignore[valid-type, misc]
        async def fetch(self, ctx):  # type: ignore[no-untyped-def]
            result = await super().fetch(ctx)
            outage.start()  # after the ledger row was claimed, before ingest
            return result

    worker.providers["vastai"] = CutOff
    # ingest, its failure, the lock's release: each bounded.
    outcome = within(3 * outage.bound_s + MARGIN_S, lambda: worker.run_provider("vastai"))
    assert outcome is not None and outcome.status == "db_unreachable"
    outage.end()
    ((_, attempt, status, _),) = ledger(engine)
    assert (attempt, status) == (0, "running")  # what the outage left: until now, for good
    worker.sweep()
    ((_, attempt, status, error),) = ledger(engine)
    assert (attempt, status) == (0, "failed") and "database unreachable" in (error or "")


def test_a_backlogged_run_yields_to_another_workers_record_of_the_slot(engine, outage, clock, replay_dir):
    worker = make_worker(outage.engine, outage.settings, clock, replay_dir)
    outage.start()
    assert within(2 * outage.bound_s + MARGIN_S, lambda: worker.run_provider("vastai")).status == "db_unreachable"
    outage.end()
    other = make_worker(engine, outage.settings, clock, replay_dir)  # reached the database all along
    assert other.run_providers(["vastai"])[0].status == "ok"
    worker.sweep()
    assert [(a, s) for _, a, s, _ in ledger(engine)] == [(0, "ok")]  # one run for the slot, not two
    assert worker.unrecorded == []


# --------------------------------------------------------------------------------- dead claims


def insert_claim(engine: Engine, slot: datetime, started_at: datetime, holder: str) -> None:
    with session_scope(engine) as s:
        s.add(
            ScrapeRun(
                provider="vastai",
                slot=slot,
                source="replay",
                status="running",
                started_at=started_at,
                claimed_by=holder,
            )
        )


def dead_local_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names no process now
    return proc.pid


def reclaimed_reason(holder: str) -> str:
    me = f"{socket.gethostname()}:{os.getpid()}"  # this test process reclaims
    return f"worker died mid-run (claim reclaimed by {me}; holder {holder})"


def test_a_claim_past_its_lease_is_reclaimed_and_its_slot_scraped(engine, settings, clock, replay_dir):
    worker = make_worker(engine, settings, clock, replay_dir)
    slot = slot_start(clock(), FIVE_MIN)
    long_ago = clock() - timedelta(days=1)  # far past any lease (the default is job timeout + 60 s)
    insert_claim(engine, slot - FIVE_MIN, long_ago, "elsewhere:4242")  # an older slot's, left behind too
    insert_claim(engine, slot, long_ago, "elsewhere:4242")
    assert worker.due() == ["vastai"]
    (outcome,) = worker.run_providers(["vastai"])
    assert outcome.status == "ok"
    assert ledger(engine) == [
        (slot - FIVE_MIN, 0, "failed", reclaimed_reason("elsewhere:4242")),
        (slot, 0, "failed", reclaimed_reason("elsewhere:4242")),
        (slot, 1, "ok", None),
    ]
    assert worker.due() == []


def test_a_claim_whose_process_is_gone_is_reclaimed_at_once(engine, settings, clock, replay_dir):
    worker = make_worker(engine, settings, clock, replay_dir)
    slot = slot_start(clock(), FIVE_MIN)
    holder = f"{socket.gethostname()}:{dead_local_pid()}"
    insert_claim(engine, slot, clock(), holder)  # fresh: no lease has expired
    assert worker.run_providers(["vastai"])[0].status == "ok"
    assert [(a, s, e) for _, a, s, e in ledger(engine)] == [(0, "failed", reclaimed_reason(holder)), (1, "ok", None)]


def test_a_fresh_claim_from_another_host(engine, settings, clock, replay_dir):
    """Postgres knows: nobody holds the advisory lock, so the holder is dead. SQLite cannot tell a
    remote holder's fate, and respects the claim until its lease ends."""
    worker = make_worker(engine, settings, clock, replay_dir)
    slot = slot_start(clock(), FIVE_MIN)
    insert_claim(engine, slot, clock(), "elsewhere:4242")
    (outcome,) = worker.run_providers(["vastai"])
    if engine.dialect.name == "postgresql":
        assert outcome.status == "ok"
        assert [(a, s) for _, a, s, _ in ledger(engine)] == [(0, "failed"), (1, "ok")]
        return
    assert (outcome.status, outcome.error) == ("locked", "claim held by live worker elsewhere:4242")
    assert [(a, s) for _, a, s, _ in ledger(engine)] == [(0, "running")]
    clock.advance(seconds=(settings.worker_claim_lease_s or worker.job_timeout_s + 60) + 1)  # the lease ends
    assert worker.run_providers(["vastai"])[0].status == "ok"
    assert [(row_slot == slot, a, s) for row_slot, a, s, _ in ledger(engine)] == [
        (True, 0, "failed"),  # closed with the reason, not left running for ever
        (False, 0, "ok"),
    ]


CHILD = r"""
import asyncio, sys
from datetime import datetime
from pathlib import Path

from providers.registry import get_provider
from tracker.config import Settings
from tracker.pipeline.worker import Worker
from tracker.storage.engine import make_engine

url, now, replay_dir, data_dir = sys.argv[1:5]
settings = Settings(data_dir=data_dir, database_url=url, intervals={"vastai": 300})
worker = Worker(make_engine(url, settings), settings, clock=lambda: datetime.fromisoformat(now),
                source="replay", replay_dir=Path(replay_dir), providers=["vastai"])


class Stuck(get_provider("vastai")):
    async def fetch(self, ctx):  # claimed: the ledger row is written before the fetch
        await asyncio.Event().wait()


worker.providers["vastai"] = Stuck
worker.run_providers(["vastai"])
"""


def test_a_worker_killed_mid_run_is_respected_while_alive_and_reclaimed_once_dead(
    engine, settings, clock, replay_dir, tmp_path
):
    url = engine.url.render_as_string(hide_password=False)
    slot = slot_start(clock(), FIVE_MIN)
    with open(tmp_path / "child.err", "w") as err:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, clock().isoformat(), str(replay_dir), str(tmp_path)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=os.environ | {"TRACKER_DATA_DIR": str(tmp_path)},
        )
    holder = f"{socket.gethostname()}:{child.pid}"
    try:
        deadline = time.monotonic() + 60
        while ledger(engine) != [(slot, 0, "running", None)]:
            assert child.poll() is None, (tmp_path / "child.err").read_text()
            assert time.monotonic() < deadline, "the child worker never claimed its slot"
            time.sleep(0.1)
        with session_scope(engine) as s:
            assert s.scalar(select(ScrapeRun.claimed_by)) == holder
        worker = make_worker(engine, settings, clock, replay_dir)

        # Alive (and, on Postgres, holding the advisory lock): its claim stands, no second scrape.
        (outcome,) = worker.run_providers(["vastai"])
        assert outcome.status == "locked"
        assert ledger(engine) == [(slot, 0, "running", None)]

        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        if engine.dialect.name == "postgresql":  # the server notices the dead connection promptly
            deadline = time.monotonic() + 10
            while True:
                with provider_lock(engine, "vastai") as free:
                    if free:
                        break
                assert time.monotonic() < deadline, "the killed worker's advisory lock was never released"
                time.sleep(0.1)

        (outcome,) = worker.run_providers(["vastai"])
        assert outcome.status == "ok"
        assert ledger(engine) == [(slot, 0, "failed", reclaimed_reason(holder)), (slot, 1, "ok", None)]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

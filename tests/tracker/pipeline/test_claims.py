"""Every run claims its provider the same way: a `gpu-tracker scrape` run killed mid-run leaves a
`running` row that is reclaimed like a dead worker's (by the next scrape or by a worker), while a live
one is respected. Both backends; a dead run is the row such a process leaves behind."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from providers.cassette import bundled_cassette
from tests.factories.alerts import local
from tracker.clock import utcnow
from tracker.pipeline.claims import (
    ClaimState,
    claim_lease_s,
    is_in_flight,
    mark_in_flight,
    reclaim,
    unmark_in_flight,
    unscheduled_claims,
)
from tracker.pipeline.scraping import BUSY, plan, run_scrape
from tracker.pipeline.slots import slot_start
from tracker.pipeline.worker import Worker
from tracker.storage.engine import session_scope
from tracker.storage.ledger import RunStatus, start_run
from tracker.storage.locks import provider_lock
from tracker.storage.tables import ScrapeRun

FIVE_MIN = timedelta(minutes=5)
ME = f"{socket.gethostname()}:{os.getpid()}"  # this test process reclaims


@pytest.fixture
def settings(settings):
    return local(settings, intervals={"vastai": 300})


@pytest.fixture
def replay_dir(tmp_path: Path) -> Path:
    d = tmp_path / "cassettes"
    d.mkdir()
    shutil.copy(bundled_cassette("vastai"), d / "vastai.json")
    return d


def left_running(engine: Engine, started_at: datetime, holder: str, provider: str = "vastai") -> int:
    """The row a `gpu-tracker scrape` process leaves when it is killed mid-run: no slot, `running`."""
    with session_scope(engine) as s:
        run = ScrapeRun(
            provider=provider,
            slot=None,
            source="live",
            status="running",
            started_at=started_at,
            claimed_by=holder,
            parser_version="1",
        )
        s.add(run)
        s.flush()
        return run.id


def ledger(engine: Engine, provider: str = "vastai") -> list[tuple[int, datetime | None, str, str | None]]:
    with session_scope(engine) as s:
        rows = s.execute(
            select(ScrapeRun.id, ScrapeRun.slot, ScrapeRun.status, ScrapeRun.error)
            .where(ScrapeRun.provider == provider)
            .order_by(ScrapeRun.id)
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def scrape_vastai(engine, settings, clock):
    return asyncio.run(run_scrape(plan(["vastai"], replay=bundled_cassette("vastai")), engine, settings, clock=clock))


def reason(holder: str) -> str:
    return f"scrape died mid-run (claim reclaimed by {ME}; holder {holder})"


def dead_local_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names no process now
    return proc.pid


def test_a_killed_scrape_past_its_lease_is_reclaimed_by_the_next_scrape(engine, settings, clock):
    dead = left_running(engine, clock() - timedelta(days=1), "elsewhere:4242")
    (report,) = scrape_vastai(engine, settings, clock)
    assert report.status == RunStatus.ok
    assert [(i, slot, status, error) for i, slot, status, error in ledger(engine)] == [
        (dead, None, "failed", reason("elsewhere:4242")),
        (report.run_id, None, "ok", None),
    ]


def test_a_killed_scrape_past_its_lease_is_reclaimed_by_a_worker(engine, settings, clock, replay_dir):
    dead = left_running(engine, clock() - timedelta(days=1), "elsewhere:4242")
    worker = Worker(engine, settings, clock=clock, source="replay", replay_dir=replay_dir, providers=["vastai"])
    (outcome,) = worker.run_providers(["vastai"])
    assert outcome.status == "ok"
    slot = slot_start(clock(), FIVE_MIN)
    assert [(slot_, status, error) for i, slot_, status, error in ledger(engine) if i == dead] == [
        (None, "failed", reason("elsewhere:4242"))
    ]
    assert [(slot_, status) for i, slot_, status, _ in ledger(engine) if i != dead] == [(slot, "ok")]


def test_a_killed_scrape_whose_process_is_gone_is_reclaimed_at_once(engine, settings, clock):
    holder = f"{socket.gethostname()}:{dead_local_pid()}"
    dead = left_running(engine, clock(), holder)  # fresh: no lease has expired
    (report,) = scrape_vastai(engine, settings, clock)
    assert report.status == RunStatus.ok
    first, *_ = ledger(engine)
    assert first == (dead, None, "failed", reason(holder))


def test_a_fresh_scrape_run_from_another_host(engine, settings, clock):
    """Postgres knows: nobody holds the provider's advisory lock, so the holder is dead. SQLite cannot
    tell a remote holder's fate, and respects the run until its lease ends."""
    other = left_running(engine, clock(), "elsewhere:4242")
    scrape_vastai(engine, settings, clock)
    statuses = {i: status for i, _, status, _ in ledger(engine)}
    if engine.dialect.name == "postgresql":
        assert statuses[other] == "failed"
        return
    assert statuses[other] == "running"  # another host's live scrape runs concurrently, as before
    clock.advance(seconds=claim_lease_s(settings) + 1)  # the lease ends
    scrape_vastai(engine, settings, clock)
    assert {i: status for i, _, status, _ in ledger(engine)}[other] == "failed"


def test_a_scrape_while_another_process_holds_the_provider_skips_it(engine, settings, clock):
    """A worker (or another scrape) is running the provider now: its run records the prices; this one
    writes nothing and touches nothing of it. Other providers in the same scrape run as usual."""
    other = left_running(engine, clock(), ME)  # the holder's own row; it holds the lock
    with provider_lock(engine, "vastai") as held:
        assert held
        reports = asyncio.run(run_scrape(plan(["vastai", "reference"]), engine, settings, clock=clock))
    by_provider = {r.provider: r for r in reports}
    assert (by_provider["vastai"].status, by_provider["vastai"].error, by_provider["vastai"].run_id) == (
        "skipped",
        BUSY,
        None,
    )
    assert by_provider["reference"].status == "ok"
    assert [(i, status) for i, _, status, _ in ledger(engine)] == [(other, "running")]


def test_a_live_scrape_in_this_process_is_never_reclaimed(engine, settings, clock):
    now = clock()
    with unscheduled_claims(engine, ["vastai"], settings, now) as claimed:
        assert claimed == {"vastai"}
        run_id = start_run(
            engine,
            provider="vastai",
            slot=None,
            attempt=0,
            source="live",
            parser_version="1",
            started_at=now - timedelta(days=1),
        )
        # A worker of this process judging the provider's claims (its lock is ours already).
        reclaim(engine, "vastai", slot_start(now, FIVE_MIN), now, claim_lease_s(settings))
        assert [(i, status) for i, _, status, _ in ledger(engine)] == [(run_id, "running")]
    # The block is over, the row still `running`: this process no longer runs it, so it is dead.
    scrape_vastai(engine, settings, clock)
    first, *_ = ledger(engine)
    assert first[::2] == (run_id, "failed")


def test_a_live_row_stays_alive_while_another_job_of_this_process_holds_its_slot(engine, settings, clock):
    # Two jobs of one process on one slot (two workers whose locks did not keep them apart: the worker tests'
    # "ledger alone" race): the first to finish must not make the other's running row look dead, or a third
    # worker reclaims it and scrapes the slot again (CI once saw two runs in one slot that way).
    now = clock()
    slot = slot_start(now, FIVE_MIN)
    mark_in_flight(engine, "vastai", slot)
    mark_in_flight(engine, "vastai", slot)
    try:
        run_id = start_run(
            engine, provider="vastai", slot=slot, attempt=0, source="live", parser_version="1", started_at=now
        )
        unmark_in_flight(engine, "vastai", slot)  # the first job is done; the second is still at work
        assert is_in_flight(engine, "vastai", slot)
        assert reclaim(engine, "vastai", slot, now, claim_lease_s(settings)).state == ClaimState.locked
        assert [(i, status) for i, _, status, _ in ledger(engine)] == [(run_id, "running")]
    finally:
        unmark_in_flight(engine, "vastai", slot)
    assert not is_in_flight(engine, "vastai", slot)
    unmark_in_flight(engine, "vastai", slot)  # once more than marked: harmless, never below none
    mark_in_flight(engine, "vastai", slot)
    assert is_in_flight(engine, "vastai", slot)
    unmark_in_flight(engine, "vastai", slot)
    assert not is_in_flight(engine, "vastai", slot)


def test_the_cli_reclaims_a_killed_scrape(cli, engine):
    dead = left_running(engine, utcnow() - timedelta(days=1), "elsewhere:4242", provider="reference")
    result = cli("scrape", "reference", "--json")
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["status"] == "ok"
    assert ledger(engine, "reference") == [
        (dead, None, "failed", reason("elsewhere:4242")),
        (report["run_id"], None, "ok", None),
    ]

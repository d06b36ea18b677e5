"""The worker: one run per provider per slot however many workers race (threads and processes, SQLite and
Postgres), timeouts that free the next slot, scheduler settings, and `gpu-tracker worker --once`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import event, func, select

import tracker.cli  # noqa: F401  (registers every command)
import tracker.pipeline.worker as worker_module
from providers.cassette import bundled_cassette
from providers.contract import FetchContext, Provider, ProviderKind, ScrapeResult
from providers.registry import all_providers
from tests.factories.alerts import Receiver, local, rule_state
from tracker.config import Settings, get_settings
from tracker.pipeline.slots import SlotTrigger, slot_start
from tracker.pipeline.worker import (
    SlotStatus,
    Worker,
    scheduler_options,
    start_background_worker,
)
from tracker.storage.engine import make_engine, session_scope
from tracker.storage.locks import lock_key, provider_lock
from tracker.storage.tables import ScrapeRun


@pytest.fixture
def settings(settings):
    """The shared settings with vastai every five minutes and webhooks allowed to the local receiver."""
    return local(settings, intervals={"vastai": 300})


@pytest.fixture
def replay_dir(tmp_path: Path) -> Path:
    d = tmp_path / "cassettes"
    d.mkdir()
    shutil.copy(bundled_cassette("vastai"), d / "vastai.json")
    return d


def make_worker(engine, settings, clock, replay_dir, **kw) -> Worker:
    return Worker(
        engine,
        settings,
        clock=clock,
        source="replay",
        replay_dir=replay_dir,
        providers=kw.pop("providers", ["vastai", "reference"]),
        **kw,
    )


def runs_per_slot(engine) -> Counter[tuple[str, datetime | None]]:
    with session_scope(engine) as s:
        rows = s.execute(
            select(ScrapeRun.provider, ScrapeRun.slot, func.count()).group_by(ScrapeRun.provider, ScrapeRun.slot)
        )
        return Counter({(p, slot): n for p, slot, n in rows})


def test_slots_are_epoch_aligned_floors():
    t = datetime(2026, 11, 1, 12, 7, 31, tzinfo=UTC)
    assert slot_start(t, timedelta(minutes=5)) == datetime(2026, 11, 1, 12, 5, tzinfo=UTC)
    assert slot_start(t, timedelta(hours=1)) == datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert slot_start(t, timedelta(days=1)) == datetime(2026, 11, 1, tzinfo=UTC)
    edge = datetime(2026, 11, 1, 12, 5, tzinfo=UTC)
    assert slot_start(edge, timedelta(minutes=5)) == edge


@pytest.mark.parametrize("jitter", [0.0, 1.0])  # fraction of the maximum delay, every time
def test_slot_trigger_fires_once_per_slot_without_drift(jitter):
    interval = timedelta(minutes=5)
    trigger = SlotTrigger(interval, jitter_s=600, rand=lambda lo, hi: lo + jitter * (hi - lo))
    now = datetime(2026, 11, 1, 12, 3, 10, tzinfo=UTC)
    fire = trigger.get_next_fire_time(None, now)
    assert fire == now  # the current slot at once
    slots = [slot_start(fire, interval)]
    for _ in range(1000):
        fire = trigger.get_next_fire_time(fire, fire)
        slots.append(slot_start(fire, interval))
        assert fire - slots[-1] <= timedelta(seconds=75)
    assert slots == [slots[0] + i * interval for i in range(1001)]  # every slot, none skipped


def test_lock_key_is_stable_across_processes():
    code = "from tracker.storage.locks import lock_key; print(lock_key('vastai'))"
    keys = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ | {"PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert keys == {str(lock_key("vastai"))}
    assert -(2**63) <= lock_key("vastai") < 2**63 and lock_key("vastai") != lock_key("aws")


def test_provider_lock_excludes_a_second_holder(engine):
    with provider_lock(engine, "vastai") as first:
        assert first
        seen: list[bool] = []

        def other() -> None:  # another thread: on Postgres another connection, i.e. another session
            with provider_lock(engine, "vastai") as got:
                seen.append(got)
            with provider_lock(engine, "aws") as got:
                seen.append(got)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [False, True]
    with provider_lock(engine, "vastai") as again:  # released at the end of the block
        assert again


def _race(workers: list[Worker]) -> list:
    barrier = threading.Barrier(len(workers))
    results: list = [None] * len(workers)
    errors: list[BaseException] = []

    def go(i: int) -> None:
        try:
            barrier.wait()
            results[i] = workers[i].run_once()
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_two_workers_record_one_run_per_provider_per_slot(engine, settings, clock, replay_dir):
    workers = [make_worker(engine, settings, clock, replay_dir) for _ in range(2)]
    outcomes: Counter[str] = Counter()
    for _ in range(4):
        for cycle in _race(workers):
            outcomes.update(r.status for r in cycle.runs)
        clock.advance(minutes=5)
    per_slot = runs_per_slot(engine)
    assert set(per_slot.values()) == {1}
    assert sorted(p for p, _ in per_slot) == ["reference"] + ["vastai"] * 4  # the sheet is daily
    assert outcomes["ok"] == 5 and set(outcomes) <= {"ok", "locked", "slot_taken"}


def test_the_ledger_alone_stops_duplicates_when_locks_do_not(engine, settings, clock, replay_dir, monkeypatch):
    @contextmanager
    def no_lock(engine, providers):
        yield set(providers)

    monkeypatch.setattr(worker_module, "provider_locks", no_lock)
    monkeypatch.setattr(Worker, "_slot_taken", lambda self, name, slot: False)  # both think the slot is free
    workers = [make_worker(engine, settings, clock, replay_dir, providers=["vastai"]) for _ in range(3)]
    for _ in range(3):
        _race(workers)
        clock.advance(minutes=5)
    per_slot = runs_per_slot(engine)
    assert len(per_slot) == 3 and set(per_slot.values()) == {1}


def test_a_later_worker_skips_a_slot_already_run(engine, settings, clock, replay_dir):
    first = make_worker(engine, settings, clock, replay_dir).run_once()
    assert {r.provider: r.status for r in first.runs} == {"vastai": "ok", "reference": "ok"}
    second = make_worker(engine, settings, clock, replay_dir)
    assert second.due() == []
    assert second.run_providers(["vastai"])[0].status == "slot_taken"
    clock.advance(minutes=5)
    assert second.due() == ["vastai"]


class Hang(Provider):
    name = "hang"
    title = "never answers"
    kind = ProviderKind.marketplace

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_hung_provider_times_out_and_does_not_block_its_next_slot(engine, settings, clock, replay_dir):
    ws = settings.model_copy(update={"worker_job_timeout_s": 0.2})
    worker = make_worker(engine, ws, clock, replay_dir, providers=["vastai"])
    worker.providers["hang"], worker.cassettes["hang"] = Hang, None
    for _ in range(2):
        (outcome,) = worker.run_providers(["hang"])
        assert outcome.status == "timeout"
        clock.advance(hours=1)  # the next slot of an hourly provider
    with session_scope(engine) as s:
        rows = s.scalars(select(ScrapeRun).where(ScrapeRun.provider == "hang").order_by(ScrapeRun.id)).all()
        assert [(r.status, "worker timeout" in (r.error or "")) for r in rows] == [("failed", True)] * 2
        assert rows[0].slot != rows[1].slot


def test_scheduler_jobs_have_intervals_jitter_grace_coalescing_and_one_instance(engine, settings, clock, replay_dir):
    ws = settings.model_copy(update={"worker_jitter_s": 600.0, "worker_misfire_grace_s": 900})
    worker = make_worker(engine, ws, clock, replay_dir)
    scheduler = BackgroundScheduler(**scheduler_options(ws))
    worker.schedule(scheduler)
    scheduler.start(paused=True)  # jobs get their defaults, nothing runs
    try:
        jobs = {j.id: j for j in scheduler.get_jobs()}
        assert set(jobs) == {
            "scrape:vastai",
            "scrape:reference",
            "fx:rates",
            "history:partitions",
            "alerts:sweep",
            "alerts:deliver",
        }
        vast, sheet = jobs["scrape:vastai"], jobs["scrape:reference"]
        assert vast.trigger.interval == timedelta(minutes=5) and sheet.trigger.interval == timedelta(days=1)
        assert vast.trigger.jitter_s == 75  # capped at a quarter of the interval: fire times stay in the slot
        assert sheet.trigger.jitter_s == 600
        for job in jobs.values():
            assert (job.misfire_grace_time, job.coalesce, job.max_instances) == (900, True, 1)
    finally:
        scheduler.shutdown(wait=False)


def test_unknown_provider_in_intervals_is_refused(engine, settings, clock, replay_dir):
    with pytest.raises(ValueError, match="nosuchcloud"):
        make_worker(engine, settings.model_copy(update={"intervals": {"nosuchcloud": 60}}), clock, replay_dir)
    with pytest.raises(ValueError, match="minimum"):
        Settings(intervals={"vastai": 1})


def test_offline_modes_only_schedule_providers_they_can_replay(engine, settings, clock, replay_dir):
    worker = Worker(engine, settings, clock=clock, source="replay", replay_dir=replay_dir)
    assert set(worker.providers) == {"vastai"} | {
        n for n, p in all_providers().items() if p.kind == ProviderKind.static_sheet
    }


# ------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def cli(cli, monkeypatch):
    """The shared CLI fixture, with the local webhook receiver allowed past the SSRF guard."""
    monkeypatch.setenv("TRACKER_WEBHOOK_ALLOW", "127.0.0.1/32")
    get_settings.cache_clear()
    return cli


def test_worker_once_replays_evaluates_and_delivers(cli, engine, replay_dir):
    receiver = Receiver().start()
    try:
        added = cli(
            "alerts",
            "add",
            "--gpu",
            "H100-SXM-80GB",
            "--below",
            "2.00",
            "--provider",
            "vastai",
            "--webhook",
            receiver.url,
            "--json",
        )
        assert added.exit_code == 0, added.output
        rule_id = json.loads(added.stdout)["id"]
        result = cli("worker", "--once", "--replay-dir", str(replay_dir), "--json", "vastai", "reference")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert {r["provider"]: r["status"] for r in report["runs"]} == {"vastai": "ok", "reference": "ok"}
        assert report["deliveries"] == {"delivered": 1}
        assert rule_state(engine, rule_id) == "firing"
        (msg,) = receiver.requests
        assert msg.json["data"]["value"] == "1.900138"  # 8× H100 SXM at $15.2011/h in the cassette
        again = json.loads(cli("worker", "--once", "--replay-dir", str(replay_dir), "--json", "reference").stdout)
        assert again["runs"] == []  # the daily sheet's slot is done: nothing due
    finally:
        receiver.stop()


def test_worker_bad_input_is_a_clear_error(cli, tmp_path, monkeypatch):
    missing = cli("worker", "--once", "--replay-dir", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "not a directory" in missing.output
    both = cli("worker", "--once", "--demo", "--replay-dir", str(tmp_path))
    assert both.exit_code == 2 and "exclusive" in both.output
    unknown = cli("worker", "--once", "--demo", "nosuchcloud")
    assert unknown.exit_code == 2 and "unknown provider" in unknown.output
    empty = cli("worker", "--once", "--replay-dir", str(tmp_path), "vastai")
    assert empty.exit_code == 2 and "no provider" in empty.output
    monkeypatch.setenv("TRACKER_INTERVALS", '{"vastai": 5}')
    get_settings.cache_clear()  # the CLI reads the environment once per process
    bad = cli("worker", "--once", "--demo")
    assert bad.exit_code == 2 and "minimum" in bad.output and "Traceback" not in bad.output


def test_two_worker_processes_against_one_database(engine, replay_dir, tmp_path):
    """Real processes, real clock: whatever slot they land in, never two runs of one provider in it."""
    url = engine.url.render_as_string(hide_password=False)
    env = os.environ | {"TRACKER_DATA_DIR": str(tmp_path), "TRACKER_INTERVALS": '{"vastai": 300}'}
    cmd = [
        sys.executable,
        "-c",
        "from tracker.cli import main; main()",
        "--database-url",
        url,
        "worker",
        "--once",
        "--replay-dir",
        str(replay_dir),
        "--json",
        "vastai",
        "reference",
    ]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    statuses = Counter(r["status"] for out, _ in outputs for r in json.loads(out)["runs"])
    assert statuses["ok"] >= 2 and set(statuses) <= {"ok", "locked", "slot_taken"}, statuses
    per_slot = runs_per_slot(engine)
    assert per_slot and set(per_slot.values()) == {1}


def test_live_mode_leaves_out_providers_without_credentials(engine, settings, clock, monkeypatch):
    keyed = [p for p in all_providers().values() if p.credentials]
    assert keyed  # e.g. lambdalabs
    for p in keyed:
        for c in p.credentials:
            monkeypatch.delenv(f"TRACKER_{c.upper()}", raising=False)
            monkeypatch.delenv(f"TRACKER_{c.upper()}_FILE", raising=False)
    worker = Worker(engine, settings, clock=clock)
    assert keyed[0].name not in worker.providers and "no credentials" in worker.unscheduled[keyed[0].name]
    assert "reference" in worker.providers


def test_in_process_worker_starts_and_stops(engine, settings):
    scheduler = start_background_worker(engine, settings, demo=True, providers=["reference"])
    try:
        assert scheduler.running
        jobs = {j.id for j in scheduler.get_jobs()}
        assert jobs == {"scrape:reference", "fx:rates", "history:partitions", "alerts:sweep", "alerts:deliver"}
    finally:
        scheduler.shutdown(wait=True)
    assert not scheduler.running


class Quick(Provider):
    """A provider that answers at once with nothing: the cycle's cost is the worker's own connections."""

    title = "answers at once"
    kind = ProviderKind.marketplace

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return ScrapeResult()


def test_sixty_due_providers_fit_the_engine_pool(engine, settings, clock, replay_dir, pg_url):
    """Sixty providers due at once on Postgres: their locks share one connection, so none is left
    `db_unreachable` for want of a pooled connection (one connection each would need 60 > 10 + 20)."""
    if engine.dialect.name != "postgresql":
        pytest.skip("the advisory locks that need connections are Postgres's")
    quick = settings.model_copy(update={"db_pool_timeout_s": 0.5})  # a starved pool fails fast, not in 5 s
    pooled = make_engine(pg_url, quick)
    peak = {"now": 0, "max": 0}

    def out(*_):
        peak["now"] += 1
        peak["max"] = max(peak["max"], peak["now"])

    def back(*_):
        peak["now"] -= 1

    event.listen(pooled.pool, "checkout", out)
    event.listen(pooled.pool, "checkin", back)
    try:
        worker = make_worker(pooled, quick, clock, replay_dir, providers=["vastai"])
        names = [f"quick{i:02d}" for i in range(60)]
        for name in names:
            worker.providers[name] = type(name, (Quick,), {"name": name})
            worker.cassettes[name] = None
        outcomes = worker.run_providers(names)
    finally:
        pooled.dispose()
    statuses = Counter(o.status for o in outcomes)
    assert statuses[SlotStatus.db_unreachable] == 0 and statuses[SlotStatus.locked] == 0, statuses
    assert len(outcomes) == 60 and sum(runs_per_slot(engine).values()) == 60
    # The locks' one connection plus the ingest threads' own: well inside pool_size + max_overflow.
    assert peak["max"] <= quick.db_pool_size + quick.db_max_overflow

"""The worker's optional daily export (TRACKER_EXPORT_DIR): the whole dataset, swapped in whole."""

from __future__ import annotations

from apscheduler.schedulers.background import BackgroundScheduler

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.history.dataset import read_manifest
from tracker.history.export import scheduled_export
from tracker.pipeline.worker import Worker


def test_scheduled_export_writes_and_replaces_the_dataset(engine, settings, tmp_path):
    assert scheduled_export(engine, settings) is None  # off unless TRACKER_EXPORT_DIR is set
    clock = FakeClock()
    do_ingest(engine, settings, clock, batch(offer("a", "2.00")))
    on = settings.model_copy(update={"export_dir": tmp_path / "dataset"})
    first = scheduled_export(engine, on, clock)
    assert first is not None and read_manifest(tmp_path / "dataset")["files"] == first["files"]
    clock.advance(days=1)
    do_ingest(engine, settings, clock, batch(offer("a", "2.10")))
    second = scheduled_export(engine, on, clock)
    assert second is not None and len(second["files"]) > len(first["files"])
    assert read_manifest(tmp_path / "dataset")["generated_at"] == clock().isoformat()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset"]  # no half-written sibling left


def test_a_failing_export_never_raises(engine, settings, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert scheduled_export(engine, settings.model_copy(update={"export_dir": blocker / "dataset"})) is None


def test_the_worker_schedules_it_only_when_configured(engine, settings, tmp_path):
    for export_dir, expected in ((None, False), (tmp_path / "d", True)):
        worker = Worker(
            engine, settings.model_copy(update={"export_dir": export_dir}), source="demo", providers=["reference"]
        )
        scheduler = BackgroundScheduler()
        worker.schedule(scheduler)
        assert any(j.id == "history:export" for j in scheduler.get_jobs()) is expected

"""The batch ingest runs with the cyclic garbage collector paused (tracker.ingest.batch.gc_paused): its
per-offer objects live until the batch ends, so collections during it only walk them."""

from __future__ import annotations

import gc
import threading

import tracker.ingest.batch as batch_module
from tests.factories.offers import batch, do_ingest, offer
from tracker.ingest.batch import gc_paused
from tracker.ingest.diff import diff


def test_ingest_pauses_the_collector_and_enables_it_again(engine, settings, clock, monkeypatch):
    enabled_during: list[bool] = []
    real = diff

    def spy(*args, **kwargs):
        enabled_during.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(batch_module, "diff", spy)
    assert gc.isenabled()
    report = do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00")))
    assert report.status == "ok"
    assert enabled_during == [False]
    assert gc.isenabled()


def test_a_failing_ingest_enables_the_collector_again():
    try:
        with gc_paused():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.isenabled()


def test_a_caller_that_disabled_the_collector_keeps_it_disabled():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_ingests_enable_the_collector_when_the_last_one_ends():
    first_in, second_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_done.wait(5)
            seen.append(gc.isenabled())  # the second ingest ended, this one still runs

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with gc_paused():
        assert not gc.isenabled()
    second_done.set()
    thread.join(5)
    assert seen == [False]
    assert gc.isenabled()

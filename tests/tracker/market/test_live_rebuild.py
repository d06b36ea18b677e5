"""The live table rebuilt off the request path (tracker.market.live, issue #29 item 1): with `background`, a
request that finds a large table out of date is answered from the previous version while the new one, with
its warmed derived values, is built on a thread and swapped in whole; a small table, or a cache without
`background` (the worker's, the CLI's), is always exact. Both backends."""

from __future__ import annotations

import threading

import pytest

import tracker.market.live as live_module
from api.app import create_app
from tests.factories.offers import batch, do_ingest, offer
from tracker.market.live import LiveOffers, data_version
from tracker.market.service import warm_cost_terms, warm_statistics
from tracker.storage.engine import session_scope


def _ingest(engine, settings, clock, n: int, price: str = "2.00") -> None:
    do_ingest(engine, settings, clock, batch(*(offer(f"o{i}", price) for i in range(n))))


class _SlowLoad:
    """`_load` held until released, so a test sees what readers get while a rebuild is under way."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release, self.started, self.calls = threading.Event(), threading.Event(), 0
        real = live_module._load

        def load(session):  # type: ignore[no-untyped-def]
            self.calls += 1
            self.started.set()
            assert self.release.wait(10), "the test never released the load"
            return real(session)

        monkeypatch.setattr(live_module, "_load", load)


def _frame(table: LiveOffers, engine):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        return table.frame(engine, session)


def _wait_for(table: LiveOffers, engine, version: int) -> None:
    for _ in range(500):
        if _frame(table, engine)[0] == version:
            return
        threading.Event().wait(0.02)
    raise AssertionError(f"version {version} never swapped in")


def test_a_large_table_is_rebuilt_in_the_background_and_readers_keep_the_previous_version(
    engine, settings, clock, monkeypatch
):
    _ingest(engine, settings, clock, 3)
    warmed: list[int] = []

    def warmer(session, version, table):  # type: ignore[no-untyped-def]
        warmed.append(version)
        return [(("warm",), len(table))]

    table = LiveOffers(background=True, warmers=[warmer], sync_rows=2, wait_s=0.01)
    v1, first = _frame(table, engine)
    assert len(first) == 3 and warmed == [v1]
    table.memo(engine, v1, ("answer",), lambda: "old")

    clock.advance(minutes=5)
    _ingest(engine, settings, clock, 4, price="1.50")  # a new version, one more offer
    with session_scope(engine) as session:
        v2 = data_version(session)
    assert v2 > v1
    slow = _SlowLoad(monkeypatch)
    try:
        version, during = _frame(table, engine)  # does not wait for the load (held) beyond wait_s
        assert (version, during) == (v1, first)
        assert slow.started.wait(5)
        assert table.served(engine, v2) == v1  # the API keys its memo by what it answers from
        assert table.memo(engine, v1, ("answer",), lambda: "recomputed") == "old"  # still valid meanwhile
        assert slow.calls == 1  # requests arriving during the rebuild share it
    finally:
        slow.release.set()
    _wait_for(table, engine, v2)
    _, after = _frame(table, engine)
    assert len(after) == 4
    assert warmed == [v1, v2]  # built with the table, before readers could see it
    assert table.peek(engine, v2, ("warm",)) == 4
    assert table.peek(engine, v1, ("answer",)) is None  # older answers dropped at the swap
    assert table.served(engine, v2) == v2


def test_an_answer_computed_on_a_replaced_table_is_not_kept(engine, settings, clock):
    _ingest(engine, settings, clock, 3)
    table = LiveOffers(background=True, sync_rows=2)
    v1, _ = _frame(table, engine)
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, 4)
    with session_scope(engine) as session:
        v2 = data_version(session)
    _wait_for(table, engine, v2)
    table.memo(engine, v1, ("late",), lambda: "computed on v1")  # a request that began before the swap
    assert table.peek(engine, v1, ("late",)) is None


def test_a_failed_rebuild_keeps_the_previous_table_and_is_tried_again(engine, settings, clock, monkeypatch, caplog):
    _ingest(engine, settings, clock, 3)
    table = LiveOffers(background=True, sync_rows=2, wait_s=1.0)
    v1, first = _frame(table, engine)
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, 4)
    real = live_module._load

    def broken(session):  # type: ignore[no-untyped-def]
        raise RuntimeError("database went away")

    monkeypatch.setattr(live_module, "_load", broken)
    assert _frame(table, engine) == (v1, first)  # waited for the build, which failed
    assert table.rebuild_errors == 1
    assert "rebuilding the live offers" in caplog.text
    monkeypatch.setattr(live_module, "_load", real)
    with session_scope(engine) as session:
        v2 = data_version(session)
    _wait_for(table, engine, v2)
    assert len(_frame(table, engine)[1]) == 4


@pytest.mark.parametrize("background", [False, True])
def test_a_small_table_or_an_exact_cache_reads_what_was_just_written(engine, settings, clock, background):
    # The worker evaluates alerts right after its ingest, and the CLI is one call: neither may see the past.
    _ingest(engine, settings, clock, 3)
    table = LiveOffers(background=background, sync_rows=2 if not background else 10_000)
    v1, _ = _frame(table, engine)
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, 4)
    v2, after = _frame(table, engine)
    assert v2 > v1 and len(after) == 4


def test_the_api_builds_its_table_in_the_background_with_the_cost_terms(engine, settings):
    live = create_app(settings, engine).state.live
    assert live.background and warm_cost_terms in live.warmers and warm_statistics in live.warmers
    assert not live_module.LIVE.background  # the worker's and the CLI's: exact


def test_the_warmed_cost_terms_are_those_a_ranking_computes(engine, settings, clock):
    from tracker.market.service import cost_terms

    _ingest(engine, settings, clock, 3)
    table = LiveOffers(background=True, warmers=[warm_cost_terms])
    with session_scope(engine) as session:
        version, _ = table.frame(engine, session)
        warmed = table.peek(engine, version, ("cost-terms",))
        assert warmed is not None
        fresh = LiveOffers()
        v, f = fresh.frame(engine, session)
        computed = cost_terms(engine, session, fresh, v, f)
    assert type(warmed) is type(computed)
    assert repr(warmed) == repr(computed)


def test_the_statistics_view_is_built_with_the_table(engine, settings, clock):
    _ingest(engine, settings, clock, 3)
    table = LiveOffers(background=True, warmers=[warm_statistics])
    _, frame = _frame(table, engine)
    assert frame._frame is not None and len(frame._frame) == 3

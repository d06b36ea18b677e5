"""The live table kept on disk between command-line calls (tracker.market.spill, issue #29 item 5): read back
exactly, only for the same database at the same version, never from a file someone else could have
written, and a broken file is no file. Both backends."""

from __future__ import annotations

import json
import os
import time
from decimal import Decimal

import numpy as np
import pytest

import tracker.market.live as live_module
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.waiting import until
from tracker.market import spill
from tracker.market.live import LiveOffers
from tracker.market.service import COST_TERMS, KEPT_WITH_TABLE, cost_terms, warm_cost_terms
from tracker.market.table import OfferTable
from tracker.storage.engine import session_scope


def _ingest(engine, settings, clock, *prices: str) -> None:
    do_ingest(engine, settings, clock, batch(*(offer(f"o{i}", p) for i, p in enumerate(prices))))


def _kept(engine, directory) -> LiveOffers:  # type: ignore[no-untyped-def]
    """A process's table: loaded from the database, its cost terms computed, written to disk."""
    table = LiveOffers(spill_dir=directory, spill_keys=(COST_TERMS,))
    with session_scope(engine) as session:
        version, frame = table.frame(engine, session)
        cost_terms(engine, session, table, version, frame)
        frame.codes("provider")  # something derived from the whole table, as a ranking derives it
    table.keep(engine)
    return table


def _no_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(session):  # type: ignore[no-untyped-def]
        raise AssertionError("loaded from the database")

    monkeypatch.setattr(live_module, "_load", refuse)


def _same(a: OfferTable, b: OfferTable) -> None:
    assert a.providers == b.providers and set(a.columns) == set(b.columns)
    for name, col in a.columns.items():
        other = b.columns[name]
        assert col.dtype == other.dtype, name
        if col.dtype == object:
            assert [(type(x), repr(x)) for x in col] == [(type(x), repr(x)) for x in other], name
        else:
            np.testing.assert_array_equal(col, other, err_msg=name)


def test_the_next_process_reads_the_table_and_its_cost_terms_back_exactly(
    engine, settings, clock, tmp_path, monkeypatch
):
    _ingest(engine, settings, clock, "2.00", "2.50", "1.25")
    first = _kept(engine, tmp_path)
    (path,) = tmp_path.glob("live-*.pickle")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    _no_load(monkeypatch)
    second = LiveOffers(spill_dir=tmp_path, spill_keys=(COST_TERMS,))
    with session_scope(engine) as session:
        v2, frame2 = second.frame(engine, session)
    v1, frame1 = first._frames[next(iter(first._frames))]
    assert v1 == v2
    _same(frame1, frame2)
    warmed = second.peek(engine, v2, COST_TERMS)
    assert warmed is not None and repr(warmed) == repr(first.peek(engine, v1, COST_TERMS))
    # What was derived from the table comes back with it, not derived again.
    assert repr(frame2._derived["codes:provider"]) == repr(frame1._derived["codes:provider"])


def test_values_equal_but_not_the_same_stay_apart():
    # 1 == 1.0 == True and Decimal("2.5") == Decimal("2.50"), but they print and type differently.
    values = np.empty(6, dtype=object)
    values[:] = [1, 1.0, True, Decimal("2.5"), Decimal("2.50"), None]
    back = spill.decode(*spill.encode(values))
    assert [(type(x), repr(x)) for x in back] == [(type(x), repr(x)) for x in values]


def test_a_new_version_does_not_read_the_old_file(engine, settings, clock, tmp_path):
    _ingest(engine, settings, clock, "2.00")
    _kept(engine, tmp_path)
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, "1.00", "3.00")
    table = LiveOffers(spill_dir=tmp_path)
    with session_scope(engine) as session:
        _, frame = table.frame(engine, session)
    assert sorted(frame["price_per_hour_f"].tolist()) == [1.0, 3.0]


def test_a_file_for_another_database_or_a_recreated_one_is_not_read(tmp_path):
    table = OfferTable({"id": np.array([1], dtype=np.int64)}, ["vastai"])
    path = tmp_path / "t.pickle"
    spill.write(path, "sqlite:///a.db", (3, "2026-12-01T00:00:00+00:00", 7), table, {})
    assert spill.read(path, "sqlite:///a.db", (3, "2026-12-01T00:00:00+00:00", 7)) is not None
    assert spill.read(path, "sqlite:///b.db", (3, "2026-12-01T00:00:00+00:00", 7)) is None
    assert spill.read(path, "sqlite:///a.db", (3, "2026-12-02T00:00:00+00:00", 1)) is None  # counter started over
    assert "a.db" not in path.read_bytes().decode("latin-1")  # the URL (it may hold a password) is not kept


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "writable by others"])
def test_a_broken_or_untrusted_file_is_no_file(engine, settings, clock, tmp_path, damage, caplog):
    _ingest(engine, settings, clock, "2.00", "2.50")
    _kept(engine, tmp_path)
    (path,) = tmp_path.glob("live-*.pickle")
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x80\x05not a pickle at all")
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        os.chmod(path, 0o666)
    table = LiveOffers(spill_dir=tmp_path)
    with session_scope(engine) as session:
        _, frame = table.frame(engine, session)  # rebuilt from the database, no crash
    assert len(frame) == 2


def test_cheapest_twice_answers_the_same_and_the_second_reads_the_file(
    cli, engine, settings, clock, monkeypatch, tmp_path
):
    _ingest(engine, settings, clock, "2.00", "2.50", "9.00")
    args = ["cheapest", "--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M", "--json"]
    first = cli(*args)
    assert first.exit_code == 0, first.output
    kept = list((tmp_path / "cache").glob("live-*.pickle"))
    assert len(kept) == 1
    monkeypatch.setattr(live_module, "LIVE", LiveOffers())  # a new process: nothing in memory
    _no_load(monkeypatch)
    second = cli(*args)
    assert second.exit_code == 0, second.output
    strip = [{k: v for k, v in r.items() if k != "price_age_s"} for r in json.loads(first.stdout)]
    assert strip == [{k: v for k, v in r.items() if k != "price_age_s"} for r in json.loads(second.stdout)]


def test_codes_are_by_value_whether_the_objects_are_shared_or_not():
    """Encoding tells objects apart by identity first, then merges equal values held as different objects:
    a column of shared objects and one of copies encode to the same codes and read back equal."""
    shared = [Decimal("1.50"), "us-east", None, 8]
    copies = np.empty(8, dtype=object)
    copies[:] = [Decimal("1.50"), "us-" + "east", None, 8, Decimal("1.50"), "".join(["us-", "east"]), None, 8]
    same = np.empty(8, dtype=object)
    same[:] = shared + shared
    for values in (copies, same):
        codes, distinct = spill.encode(values)
        c = codes.tolist()
        assert c[4:] == c[:4] and len(set(c)) == len(distinct) == 4
        back = spill.decode(codes, distinct)
        assert [(type(x), repr(x)) for x in back] == [(type(x), repr(x)) for x in values]
    empty = np.empty(0, dtype=object)
    assert spill.decode(*spill.encode(empty)).tolist() == []


def _keeping(engine, settings, sync_rows: int = 2) -> LiveOffers:  # type: ignore[no-untyped-def]
    """A table as the API makes its own (api.app): rebuilt in the background, its cost terms warmed, kept on
    disk whenever it is loaded from the database; `sync_rows` lowered so that a few offers count as many."""
    return LiveOffers(
        background=True,
        warmers=[warm_cost_terms],
        sync_rows=sync_rows,
        wait_s=5.0,
        spill_dir=spill.directory(settings.data_dir),
        spill_keys=KEPT_WITH_TABLE,
        keep_loaded=True,
    )


def _files(settings):  # type: ignore[no-untyped-def]
    return list(spill.directory(settings.data_dir).glob("live-*.pickle"))


def test_a_table_the_api_loads_is_kept_and_a_restarted_process_reads_it(engine, settings, clock, monkeypatch):
    _ingest(engine, settings, clock, "2.00", "2.50", "1.25")
    api = _keeping(engine, settings)
    with session_scope(engine) as session:
        version, loaded = api.frame(engine, session)  # a cold process: loaded, then written off the request path
    assert until(lambda: len(_files(settings)) == 1 and not api._unkept)
    _no_load(monkeypatch)
    restarted = _keeping(engine, settings)
    with session_scope(engine) as session:
        again, frame = restarted.frame(engine, session)
    assert again == version
    _same(loaded, frame)
    assert restarted.peek(engine, again, COST_TERMS) is not None  # the cost terms came with it
    assert not restarted._unkept  # read back from disk: not written again


def test_the_background_rebuild_after_an_ingest_keeps_the_new_version(engine, settings, clock, monkeypatch):
    _ingest(engine, settings, clock, "2.00", "2.50", "1.25")
    api = _keeping(engine, settings)
    with session_scope(engine) as session:
        first, _ = api.frame(engine, session)
    assert until(lambda: not api._unkept)
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, "1.00", "3.00", "4.00")
    with session_scope(engine) as session:
        api.frame(engine, session)  # finds its table old: rebuilt in the background, then kept
    key = next(iter(api._frames))
    assert until(lambda: api._frames[key][0] > first and not api._unkept and not api._rebuilds)
    _no_load(monkeypatch)
    with session_scope(engine) as session:
        version, frame = LiveOffers(spill_dir=spill.directory(settings.data_dir)).frame(engine, session)
    assert version == api._frames[key][0]
    assert sorted(frame["price_per_hour_f"].tolist()) == [1.0, 3.0, 4.0]


def test_a_small_table_is_not_written(engine, settings, clock):
    _ingest(engine, settings, clock, "2.00", "2.50")
    api = _keeping(engine, settings, sync_rows=1000)  # rebuilt on a request in no time: not worth a file
    with session_scope(engine) as session:
        api.frame(engine, session)
    time.sleep(0.2)
    assert not _files(settings)


def test_a_directory_that_refuses_the_file_is_said_once_and_answers_go_on(engine, settings, clock, caplog):
    _ingest(engine, settings, clock, "2.00", "2.50", "1.25")
    spill.directory(settings.data_dir).parent.mkdir(parents=True, exist_ok=True)
    spill.directory(settings.data_dir).write_text("a file where the cache directory would be")  # mkdir fails
    api = _keeping(engine, settings)
    with caplog.at_level("WARNING", logger="tracker.market"), session_scope(engine) as session:
        version, frame = api.frame(engine, session)
        assert until(lambda: not api.keep_loaded)  # the write failed: this process stops trying
    assert len(frame) == 3
    refused = [r for r in caplog.records if "not keeping live tables" in r.getMessage()]
    assert len(refused) == 1
    clock.advance(minutes=5)
    _ingest(engine, settings, clock, "1.00", "3.00", "4.00")
    with session_scope(engine) as session:
        api.frame(engine, session)  # rebuilt in the background; no second attempt, no second warning
    key = next(iter(api._frames))
    assert until(lambda: api._frames[key][0] > version and not api._rebuilds)
    assert len([r for r in caplog.records if "not keeping live tables" in r.getMessage()]) == 1

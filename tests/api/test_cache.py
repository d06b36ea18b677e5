"""Cached API answers (api.cached): computed once per data version, parameters and minute; invalidated by
ingest; byte for byte what the uncached implementation answered; bounded in memory. Both backends."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any
from unittest.mock import ANY

import numpy as np
import pandas as pd
import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

import api.routes.market as market_routes
import api.routes.offers as offers_routes
import api.routes.rank as rank_routes
from api.app import create_app
from api.cached import STAND_IN_S, StandIns, data_version, encode, with_field
from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.waiting import until
from tracker.catalog.gpus import get_catalog
from tracker.costs import plan_for
from tracker.estimate import JobInput, make_job, prepare
from tracker.market.live import LiveOffers, fresh_mask
from tracker.market.offers import OfferListing, current_offers, listed_rows
from tracker.market.rank import RankFilters, RankOptions, _mark_within_band, _row, filter_mask, rank
from tracker.market.service import market_history, market_snapshot, rank_history, rank_offers
from tracker.storage.engine import session_scope

JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M", "assumptions": "seed"}
JOB_70B = {"model": "llama-3.1-70b", "method": "lora", "tokens": "8M", "assumptions": "seed"}


def _market(engine, settings, clock, *, h100: str = "2.00") -> None:
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("h1", h100, region="us-texas"),
            offer("h2", "2.50", region="us-oregon"),
            offer("h8", "15.20", count=8, region="eu-west", instance_type="8x"),
            offer("hs", "0.90", pricing=Pricing.spot, region="us-texas", available=True),
            offer("a1", "1.20", gpu="A100 SXM4", gpu_memory_gb=Decimal("80"), region="us-texas", available=False),
            offer("a2", "2.40", gpu="A100 SXM4", count=2, gpu_memory_gb=Decimal("80")),
            offer(
                "mig", "0.45", gpu="A100 SXM4 80GB", count=Decimal("0.5"), gpu_memory_gb=Decimal("40"), region="us-utah"
            ),
            offer("l4", "0.60", gpu="L40S", region="ca-toronto", reserved_term="1y", pricing=Pricing.reserved),
        ),
    )


@pytest.fixture
def client(engine, settings, clock):
    _market(engine, settings, clock)
    clock.advance(minutes=3, seconds=7, microseconds=5)  # requests come a little after the scrape
    # The app's own live table: its answers never come from what a direct call in the test memoised.
    with TestClient(create_app(settings, engine, clock=clock), raise_server_exceptions=False) as c:
        yield c


def _counting(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


REQUESTS = [
    ("get", "/v1/market", {"params": {"gpu": "H100"}}, market_routes, "market_snapshot"),
    ("get", "/v1/offers", {"params": {"gpu": "H100", "limit": 3}}, offers_routes, "current_offers"),
    ("get", "/v1/market/history", {"params": {"gpu": "H100 SXM", "interval": "1h"}}, market_routes, "market_history"),
    ("get", "/v1/market/history", {"params": {"gpu": "H100", "format": "csv"}}, market_routes, "market_history"),
    ("post", "/v1/rank", {"json": JOB}, rank_routes, "rank_offers"),
    ("post", "/v1/rank/history", {"json": JOB | {"gpu": "H100", "days": 7}}, rank_routes, "rank_history"),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "module", "name"), REQUESTS)
def test_second_identical_request_is_not_recomputed(client, clock, monkeypatch, method, path, kwargs, module, name):
    calls = _counting(monkeypatch, module, name)
    first = getattr(client, method)(path, **kwargs)
    clock.advance(seconds=20)  # same minute
    second = getattr(client, method)(path, **kwargs)
    assert first.status_code == second.status_code == 200
    assert len(calls) == 1
    if first.headers["content-type"].startswith("application/json"):
        a, b = first.json(), second.json()
        if "as_of" in a:  # each request's own time, exact; everything else is the cached answer
            assert (a.pop("as_of"), b.pop("as_of")) == (
                (clock.now - timedelta(seconds=20)).isoformat(),
                clock.now.isoformat(),
            )
        assert a == b
    else:
        assert first.content == second.content and first.headers == second.headers


@pytest.mark.parametrize(("method", "path", "kwargs", "module", "name"), REQUESTS)
def test_ingest_and_the_minute_invalidate(
    engine, settings, client, clock, monkeypatch, method, path, kwargs, module, name
):
    calls = _counting(monkeypatch, module, name)
    getattr(client, method)(path, **kwargs)
    _market(engine, settings, clock, h100="1.50")
    getattr(client, method)(path, **kwargs)
    assert len(calls) == 2
    clock.advance(minutes=1)
    getattr(client, method)(path, **kwargs)
    # Everything is recomputed once a minute (offer pages too: each row says whether it is live now).
    assert len(calls) == 3


def test_answers_reflect_the_new_prices_after_ingest(engine, settings, client, clock):
    def h1_prices() -> tuple[Any, ...]:
        offers = client.get("/v1/offers", params={"gpu": "H100 SXM"}).json()["offers"]
        cards = client.get("/v1/market", params={"gpu": "H100 SXM"}).json()["cards"]
        ranked = client.post("/v1/rank", json=JOB | {"gpu": "H100 SXM", "pricing": ["on_demand"]}).json()["rows"]
        return (
            next(o["price_per_hour"] for o in offers if o["offer_key"] == "h1"),
            next(c["min"] for c in cards if c["pricing"] == "on_demand"),
            next(r["price_per_hour"] for r in ranked if r["offer_key"] == "h1"),
        )

    version = data_version(engine)
    assert h1_prices() == (2.0, 1.9, 2.0)  # the 8-GPU machine is $1.90 per GPU-hour
    _market(engine, settings, clock, h100="1.50")
    assert data_version(engine) == version + 1
    assert h1_prices() == (1.5, 1.5, 1.5)


def test_errors_are_unchanged_and_never_cached(client, monkeypatch):
    calls = _counting(monkeypatch, rank_routes, "rank_offers")
    for _ in range(2):
        unknown = client.get("/v1/offers", params={"gpu": "H100 SXX"})
        assert unknown.status_code == 404 and unknown.json()["suggestions"]
        assert client.get("/v1/market", params={"gpu": "H100 SXX"}).status_code == 404
        bad_gpu = client.post("/v1/rank", json=JOB | {"gpu": "RTX 4O90"})
        assert bad_gpu.status_code == 404 and bad_gpu.json()["field"] == "gpu"
        # Both wrong: the model is reported first, as it always was.
        both = client.post("/v1/rank", json=JOB | {"model": "llama-9", "gpu": "RTX 4O90"})
        assert both.status_code == 404 and both.json()["field"] == "model"
    assert calls == []


# ------------------------------------------------------------------------- same bytes as before the cache


def _json_bytes(content: Any) -> bytes:
    """What the routes sent before: FastAPI's jsonable_encoder, then JSONResponse."""
    return bytes(JSONResponse(jsonable_encoder(content)).body)


def test_bytes_equal_the_uncached_implementation(engine, settings, client, clock):
    now = clock.now
    with session_scope(engine) as s:
        market = market_snapshot(
            engine,
            s,
            settings,
            now,
            gpu_ids=["H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"],
            pricing=["on_demand", "spot"],
        )
        filters = OfferListing(gpu="A100", regions=["us"], sort="price_per_hour", limit=2, offset=1)
        rows = listed_rows(current_offers(s, filters), now, settings)
        prepared = prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed")
        plan = plan_for(JobInput(**JOB_70B), prepared.job)  # the whole run's cost, as the API ranks (tracker.costs)
        ranked = rank_offers(
            engine, s, settings, now, prepared, RankFilters(), RankOptions(include_unfit=True), plan=plan
        )
        prepared_8b = prepare(make_job("llama-3.1-8b", "qlora", tokens="22.5M"), "seed")
        history = market_history(
            s,
            settings,
            now,
            gpu_ids=["H100-SXM-80GB"],
            pricing="on_demand",
            interval="1h",
            start=now - timedelta(days=1),
            end=now,
        )
        trend = rank_history(
            s,
            settings,
            now,
            prepared_8b,
            gpu_ids=["A100-SXM-80GB"],
            pricing="on_demand",
            statistic="median",
            start=now - timedelta(days=7),
            end=now,
            plan=plan_for(JobInput(**JOB), prepared_8b.job),
        )
    got = client.get("/v1/market", params={"gpu": "H100", "pricing": ["on_demand", "spot"]})
    assert got.content == _json_bytes(market)
    got = client.get(
        "/v1/offers", params={"gpu": "A100", "region": "us", "sort": "price_per_hour", "limit": 2, "offset": 1}
    )
    assert got.content == _json_bytes({"offers": rows, "count": len(rows), "limit": 2, "offset": 1})
    assert got.json()["offers"] and isinstance(got.json()["offers"][0]["price_per_hour"], float)
    got = client.post("/v1/rank", json=JOB_70B | {"include_unfit": True})
    assert got.content == _json_bytes(ranked)
    end = now.isoformat()
    got = client.get(
        "/v1/market/history",
        params={"gpu": "H100 SXM", "interval": "1h", "end": end, "start": (now - timedelta(days=1)).isoformat()},
    )
    assert got.content == _json_bytes(
        {
            "gpu": "H100 SXM",
            "gpu_ids": ["H100-SXM-80GB"],
            "pricing": "on_demand",
            "reserved_term": None,
            "interval": "1h",
            "start": now - timedelta(days=1),
            "end": now,
            "buckets": history,
        }
    )
    got = client.post("/v1/rank/history", json=JOB | {"gpu": "A100 SXM4 80GB", "days": 7})
    assert got.content == _json_bytes(trend)


def test_encoder_matches_jsonable_encoder(clock):
    content = {
        "a": Decimal("1.500000"),
        "b": Decimal("3"),
        "c": clock.now,
        "d": clock.now.date(),
        "e": [None, True],
        "f": Pricing.spot,
        "g": ("x", 1.25),
        "h": "ünïcode",
        # Money's six places take the encoder's fast path; every other exponent goes through
        # decimal_encoder, and both must send what jsonable_encoder does.
        "i": [Decimal("0.000001"), Decimal("-2.000000"), Decimal("0E-6"), Decimal("1.0"), Decimal("1E+2")],
        "j": [Decimal("12345678901234.123456"), Decimal("2.5000000"), Decimal("-0")],
    }
    assert encode(content) == _json_bytes(content)
    for first in (True, False):
        full = {"as_of": clock.now, **content} if first else {**content, "as_of": clock.now}
        assert with_field(encode(content), "as_of", clock.now, first=first) == _json_bytes(full)
    assert with_field(b"{}", "as_of", 1, first=True) == b'{"as_of":1}'


def _previous_rank(frame, fresh, prepared, filters, options, now) -> dict[str, Any]:
    """The ranking as it was before it worked on narrow arrays (pandas merge and sort of whole frames)."""
    offers = frame.frame[filter_mask(frame, fresh, filters)]
    if offers.empty:
        return {"considered": 0, "fitting": 0, "rows": []}
    slice_mem = offers["gpu_memory_gb_f"].where(offers["gpu_count_f"] < 1)
    combos = pd.DataFrame({"gpu_id": offers["gpu_id"], "gpus": offers["gpu_count_f"], "slice_gb": slice_mem})
    combos = combos.drop_duplicates().reset_index(drop=True)
    est_rows = []
    for gpu_id, gpus, slice_gb in combos.itertuples(index=False):
        e = prepared.on(get_catalog().get(gpu_id), gpus, memory_gb=None if pd.isna(slice_gb) else float(slice_gb))
        est_rows.append(
            (
                e.tokens_per_second,
                e.hours,
                e.vram_gb,
                e.memory_gb,
                e.fits,
                e.efficiency,
                e.multi_gpu_efficiency,
                e.band.low if e.band else None,
                e.band.high if e.band else None,
            )
        )
    cols = [
        "tokens_per_second",
        "hours",
        "vram_gb",
        "card_memory_gb",
        "fits",
        "efficiency",
        "multi_gpu_efficiency",
        "band_low",
        "band_high",
    ]
    combos = pd.concat([combos, pd.DataFrame(est_rows, columns=cols)], axis=1)
    joined = offers.assign(slice_gb=slice_mem).merge(
        combos, left_on=["gpu_id", "gpu_count_f", "slice_gb"], right_on=["gpu_id", "gpus", "slice_gb"], how="left"
    )
    price_h, hours = joined["price_per_hour_f"].to_numpy(), joined["hours"].to_numpy()
    joined["cost_per_run"] = price_h * hours
    joined["usd_per_mtok"] = price_h / (joined["tokens_per_second"].to_numpy() * 3600.0 / 1e6)
    joined["age_s"] = (pd.Timestamp(now) - joined["last_seen"]).dt.total_seconds()
    keep = joined["fits"].to_numpy(dtype=bool) | options.include_unfit
    if filters.max_hours is not None:
        keep &= hours <= filters.max_hours
    # Offers the provider says are sold out rank after every other fitting one (tracker.market.rank._order).
    joined["sold_out"] = [a is False for a in joined["available"]]
    ranked = joined[keep].sort_values(
        ["fits", "sold_out", options.sort_by, "price_per_hour_f", "id"],
        ascending=[False, True, True, True, True],
        kind="stable",
    )
    if options.best_per_card:
        ranked = ranked.drop_duplicates("gpu_id", keep="first")
    top = ranked.head(options.limit).astype(object)
    top = top.where(top.notna(), None)
    rows = [_row(r._asdict() | {"last_seen": r.last_seen.to_pydatetime()}) for r in top.itertuples(index=False)]
    for r in rows:  # added since: no sheet is past its age in this market
        r["stale_sheet"] = False
    _mark_within_band(rows, options.sort_by)
    return {"considered": len(offers), "fitting": int(joined["fits"].sum()), "rows": rows}


@pytest.mark.parametrize(
    ("filters", "options"),
    [
        (RankFilters(), RankOptions()),
        (RankFilters(), RankOptions(include_unfit=True, limit=3)),
        (RankFilters(regions=["us"], pricing=["on_demand", "spot"]), RankOptions(sort_by="hours")),
        (RankFilters(min_gpus=0.5, max_gpus=2, available_only=True), RankOptions(sort_by="usd_per_mtok")),
        (RankFilters(max_hours=2.0), RankOptions(best_per_card=True, include_unfit=True)),
        (RankFilters(gpu_ids=["L40S-48GB"], include_reference=False), RankOptions()),
        (RankFilters(providers=["nobody"]), RankOptions()),
    ],
)
def test_rank_equals_the_previous_implementation(engine, settings, clock, filters, options, live):
    _market(engine, settings, clock)
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            *[
                offer(f"v{i}", f"{1 + (i % 7) * 0.25:.2f}", count=1 + i % 3, region=("us-texas", "eu-west", "")[i % 3])
                for i in range(30)
            ]
        ),
        provider="runpod",
    )
    now = clock.advance(minutes=5)
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    fresh = fresh_mask(frame, now, settings)
    for job in (
        prepare(make_job("llama-3.1-8b", "qlora", tokens="22.5M"), "seed"),
        prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed"),
    ):
        expected = _previous_rank(frame, fresh, job, filters, options, now)
        cache: dict = {}
        for _ in range(2):  # with and then from the shared estimates
            got = rank(frame, fresh, job, filters, options, now, estimates=cache)
            assert got == expected
            assert [[type(v) for v in r.values()] for r in got["rows"]] == [
                [type(v) for v in r.values()] for r in expected["rows"]
            ]
        # A frame without the live frame's card codes ranks the same.
        assert rank(frame.without("gpu_code"), fresh, job, filters, options, now) == expected


# -------------------------------------------------------------------------------------------- bounded


def test_memo_is_bounded(client, monkeypatch):
    table = client.app.state.live
    monkeypatch.setattr(table, "max_entries", 5)
    for offset in range(12):
        assert client.get("/v1/offers", params={"offset": offset}).status_code == 200
    entries, held = table.memo_size()
    assert entries <= 5
    monkeypatch.setattr(table, "max_entries", 1000)
    monkeypatch.setattr(table, "max_bytes", 3000)
    for limit in range(1, 12):
        client.get("/v1/offers", params={"limit": limit})
    entries, held = table.memo_size()
    assert 0 < held <= 3000
    # An answer bigger than the whole budget is served but not kept.
    big = client.get("/v1/offers", params={"limit": 1000})
    assert big.status_code == 200 and len(big.content) > 3000
    assert table.memo_size()[1] <= 3000


def test_a_new_version_drops_older_answers(engine, settings, client, clock):
    table = client.app.state.live
    for offset in range(5):
        client.get("/v1/offers", params={"offset": offset})
    before = table.memo_size()[0]
    assert before >= 5
    _market(engine, settings, clock, h100="1.75")
    client.get("/v1/offers", params={"offset": 0})
    assert table.memo_size()[0] < before


def test_concurrent_misses_compute_once(engine, live):
    calls: list[int] = []

    def slow() -> bytes:
        calls.append(1)
        time.sleep(0.1)
        return b"{}"

    results: list[bytes] = []
    threads = [threading.Thread(target=lambda: results.append(live.memo(engine, 1, ("k",), slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [b"{}"] * 8 and len(calls) == 1

    def boom() -> bytes:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        live.memo(engine, 1, ("boom",), boom)
    assert live.memo(engine, 1, ("boom",), lambda: b"ok") == b"ok"  # a failure is not cached


def test_numpy_values_never_reach_the_encoder(client):
    rows = client.post("/v1/rank", json=JOB | {"include_unfit": True, "limit": 1000}).json()["rows"]
    assert rows and all(isinstance(r["available"], bool | None) for r in rows)
    assert np.all([isinstance(r["gpus"], float) for r in rows])


class _HeldLoad:
    """The live table's load held until released: what a request gets while a rebuild is under way."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import tracker.market.live as live_module

        self.release, self.started = threading.Event(), threading.Event()
        real = live_module._load

        def load(session):  # type: ignore[no-untyped-def]
            self.started.set()
            assert self.release.wait(10), "the test never released the load"
            return real(session)

        monkeypatch.setattr(live_module, "_load", load)


def _without_as_of(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "as_of"}


@pytest.mark.parametrize("max_age_s", [STAND_IN_S, 0.0])
def test_while_the_table_is_rebuilt_a_recent_answer_stands_in_for_a_new_minute(
    engine, settings, clock, monkeypatch, max_age_s
):
    # Issue #29: the first request after an ingest of a large table must not compute on the table being
    # replaced (seconds at 200,000 offers, against the rebuild). A stand-in older than the bound is not used.
    _market(engine, settings, clock)
    live = LiveOffers(background=True, sync_rows=2, wait_s=0.01)
    app = create_app(settings, engine, clock=clock, live=live)
    with TestClient(app, raise_server_exceptions=False) as c:
        first = c.get("/v1/market").json()
        app.state.stand_ins = StandIns(max_age_s=max_age_s)
        assert c.get("/v1/market").json()["data_version"] == first["data_version"]  # a hit: nothing kept
        clock.advance(minutes=1)
        c.get("/v1/market")  # this minute's answer, computed and kept as the stand-in
        clock.advance(minutes=2)
        _market(engine, settings, clock, h100="1.00")  # a new version: the table is out of date
        held = _HeldLoad(monkeypatch)
        try:
            clock.advance(minutes=1)  # a minute nobody has asked for yet
            during = c.get("/v1/market")
            assert held.started.wait(5)
            assert during.status_code == 200
            body = during.json()
            assert body["data_version"] == first["data_version"]  # answered from the table being served
            assert app.state.stand_ins.served == (1 if max_age_s else 0)
            if max_age_s:
                assert _without_as_of(body) == _without_as_of(c.get("/v1/market").json())
        finally:
            held.release.set()
        for _ in range(500):
            after = c.get("/v1/market").json()
            if after["data_version"] > first["data_version"]:
                break
            time.sleep(0.02)
        assert after["data_version"] > first["data_version"]
        served = app.state.stand_ins.served
        assert c.get("/v1/market").json() == c.get("/v1/market").json() | {"as_of": ANY}
        assert app.state.stand_ins.served == served  # the table matches the database: no stand-in
        h100 = [card for card in after["cards"] if card["gpu"].startswith("H100") and card["pricing"] == "on_demand"]
        assert [Decimal(str(card["min"])) for card in h100] == [Decimal("1.00")]  # the new version's prices


def test_stand_ins_are_bounded_and_never_go_back_to_an_older_table():
    answers = StandIns(entries=2, max_bytes=10)
    answers.put("a", 2, b"new")
    answers.put("a", 1, b"old")  # computed on a table since replaced
    assert answers.get("a", 2) == b"new"
    assert answers.get("a", 1) is None  # newer than the table a request is answered from
    answers.put("b", 2, b"bbbb")
    answers.put("c", 2, b"cccc")  # three entries: the least recent goes
    assert answers.get("a", 2) is None and answers.get("c", 2) == b"cccc"
    answers.put("d", 2, b"dddddddd")  # over the bytes: all but the newest go
    assert answers.get("b", 2) is None and answers.get("c", 2) is None and answers.bytes == 8


@pytest.mark.parametrize("configured", [None, 1, 3])
def test_answers_are_computed_a_few_at_a_time(engine, settings, clock, monkeypatch, configured):
    # Issue #29: 64 connections asking for 64 different rankings ran 40 computations at once (2 GiB of
    # arrays at 200,000 offers, each one slower); past the slots, requests wait without a thread. The slots
    # are the module's default unless TRACKER_API_COMPUTE_SLOTS says otherwise.
    import api.cached as cached

    _market(engine, settings, clock)
    monkeypatch.setattr(cached, "COMPUTE_SLOTS", 2)
    settings = settings.model_copy(update={"api_compute_slots": configured})
    running, peak, lock = 0, 0, threading.Lock()
    real = rank_offers  # what the route calls (tracker.market.service)

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            time.sleep(0.05)
            return real(*args, **kwargs)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(rank_routes, "rank_offers", counting)
    with TestClient(create_app(settings, engine, clock=clock), raise_server_exceptions=False) as c:
        jobs = [{**JOB, "tokens": f"{20 + i}M"} for i in range(8)]
        results: list[int] = []

        def ask(job: dict[str, str]) -> None:
            results.append(c.post("/v1/rank", json=job).status_code)

        threads = [threading.Thread(target=ask, args=(job,)) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert results == [200] * len(jobs)
    assert peak == (configured or 2)


def test_a_restarted_api_answers_from_the_table_its_predecessor_kept(engine, settings, clock, monkeypatch):
    # Issue #29: a cold API process at 200,000 offers rebuilt its table on the first request (11.5 s on
    # Postgres). The API keeps each table it loads on disk (tracker.market.spill), so the next process at the
    # same data version reads it back; the answer is the same. Small tables count as large here (sync_rows).
    _market(engine, settings, clock)
    first_app = create_app(settings, engine, clock=clock)
    first_app.state.live.sync_rows = 2
    with TestClient(first_app) as c:
        before = c.get("/v1/market").json()
        ranked = c.post("/v1/rank", json=JOB).json()
    assert until(lambda: not first_app.state.live._unkept), "the table was not kept"

    def refuse(session):  # type: ignore[no-untyped-def]
        raise AssertionError("the restarted API loaded its table from the database")

    monkeypatch.setattr("tracker.market.live._load", refuse)
    second_app = create_app(settings, engine, clock=clock)
    second_app.state.live.sync_rows = 2
    with TestClient(second_app) as c:
        assert _without_as_of(c.get("/v1/market").json()) == _without_as_of(before)
        assert _without_as_of(c.post("/v1/rank", json=JOB).json()) == _without_as_of(ranked)

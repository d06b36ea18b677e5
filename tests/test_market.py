"""Market statistics, history buckets and ranking, computed by hand and checked on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.test_history import batch, do_ingest, offer
from tracker.db import session_scope
from tracker.estimate import make_job, prepare
from tracker.live import LIVE, fresh_mask
from tracker.market import weighted_quantiles
from tracker.offers import Pricing
from tracker.rank import RankFilters, RankOptions, rank
from tracker.views import market_history, market_snapshot, rank_history

T0 = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
T2 = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_cache():
    LIVE.clear()
    yield
    LIVE.clear()


def test_weighted_quantiles_inverted_cdf():
    import numpy as np

    q = weighted_quantiles(np.array([4.0, 1.0, 3.0, 2.0]), np.ones(4))
    assert q == {"p25": 1.0, "median": 2.0, "p75": 3.0}
    q = weighted_quantiles(np.array([1.0, 2.0]), np.array([1.0, 3.0]))
    assert q["median"] == 2.0 and q["p25"] == 1.0


def _three_instants(engine, settings, clock):
    clock.now = T0
    do_ingest(engine, settings, clock, batch(offer("a", "2.00"), offer("b", "3.00"), offer("c", "4.00")))
    clock.now = T1
    do_ingest(engine, settings, clock, batch(offer("a", "1.00"), offer("b", "3.00")))  # a drops, c delisted
    clock.now = T2
    do_ingest(engine, settings, clock, batch(offer("a", "1.00"), offer("b", "2.00"), offer("c", "4.00")))


def test_history_buckets_are_exact(engine, settings, clock):
    _three_instants(engine, settings, clock)
    with session_scope(engine) as s:
        rows = market_history(s, settings, NOW, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", interval="1d",
                              start=T0, end=NOW)  # fmt: skip
    # Day 1: a 2.00 for 12h then 1.00 for 12h; b 3.00 for 24h; c 4.00 for 12h (then delisted).
    #   weights 1.00:12 2.00:12 3.00:24 4.00:12 (total 60) → p25 at 15 → 2.00, median at 30 → 3.00.
    # Day 2: open prices hold until last seen (T2) + the 6 h freshness window = 12:00.
    #   a 1.00 for 12h; b 3.00 for 6h then 2.00 for 6h; c 4.00 for 6h (relisted at T2): total 30,
    #   median at 15 → 2.00 (cumulative 12, 18), p25 at 7.5 → 1.00, p75 at 22.5 → 3.00.
    assert [(r["bucket"], r["min"], r["p25"], r["median"], r["p75"], r["max"], r["offers"]) for r in rows] == [
        (T0, Decimal("1.000000"), Decimal("2.000000"), Decimal("3.000000"), Decimal("3.000000"),
         Decimal("4.000000"), 3),
        (datetime(2026, 11, 2, tzinfo=UTC), Decimal("1.000000"), Decimal("1.000000"), Decimal("2.000000"),
         Decimal("3.000000"), Decimal("4.000000"), 3),
    ]  # fmt: skip


def test_hourly_history_sees_the_delisting(engine, settings, clock):
    _three_instants(engine, settings, clock)
    with session_scope(engine) as s:
        rows = market_history(s, settings, NOW, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", interval="1h",
                              start=T0, end=T2)  # fmt: skip
    by_hour = {r["bucket"]: r for r in rows}
    assert len(rows) == 30
    assert by_hour[T0]["offers"] == 3 and by_hour[T0]["median"] == Decimal("3.000000")
    at_noon = by_hour[T1]
    assert (at_noon["offers"], at_noon["min"], at_noon["max"]) == (2, Decimal("1.000000"), Decimal("3.000000"))


def test_snapshot_counts_only_fresh_offers_and_labels_reference(engine, settings, clock):
    _three_instants(engine, settings, clock)
    with session_scope(engine) as s:
        fresh = market_snapshot(engine, s, settings, T2)["cards"]
        stale = market_snapshot(engine, s, settings, NOW)["cards"]
    (card,) = fresh
    assert (card["gpu"], card["pricing"], card["offers"], card["min"], card["median"]) == (
        "H100-SXM-80GB", "on_demand", 3, Decimal("1.000000"), Decimal("2.000000"))  # fmt: skip
    assert card["reference_only"] is False
    assert stale == []  # last seen 18 h before NOW: beyond vastai's freshness window


def _seed_job_8b():
    return prepare(make_job("llama-3.1-8b", "qlora", examples=5000, tokens_per_example=1500, epochs=3), "seed")


SEED_8B_COSTS = {  # seed 000, "Cost per fine-tune run" (22.5M tokens)
    "RTX4090-24GB": 2.68, "H100-SXM-80GB": 2.73, "A100-SXM-40GB": 3.83, "L40S-48GB": 3.30,
    "A100-SXM-80GB": 5.12, "H200-SXM-141GB": 3.44,
}  # fmt: skip


def _reference(engine, settings, clock):
    import asyncio

    from providers.reference import ReferenceRates
    from tracker.scraping import ScrapeJob, run_scrape

    asyncio.run(run_scrape([ScrapeJob(ReferenceRates)], engine, settings, clock=clock))


def test_rank_reference_reproduces_seed_cost_table(engine, settings, clock):
    _reference(engine, settings, clock)
    with session_scope(engine) as s:
        _, frame = LIVE.frame(engine, s)
    result = rank(frame, fresh_mask(frame, clock(), settings.stale_after), _seed_job_8b(), RankFilters(),
                  RankOptions(), clock())  # fmt: skip
    rows = [r for r in result["rows"] if r["gpu"] in SEED_8B_COSTS]
    assert rows[0]["gpu"] == "RTX4090-24GB" and rows[-1]["gpu"] == "A100-SXM-80GB"
    costs = [float(r["cost_per_run"]) for r in result["rows"]]
    assert costs == sorted(costs)
    for r in rows:
        assert float(r["cost_per_run"]) == pytest.approx(SEED_8B_COSTS[r["gpu"]], rel=0.005), r["gpu"]


def test_rank_70b_qlora_leaves_out_cards_it_does_not_fit(engine, settings, clock):
    _reference(engine, settings, clock)
    job = prepare(make_job("llama-3.1-70b", "qlora", examples=2000, tokens_per_example=2000, epochs=2), "seed")
    with session_scope(engine) as s:
        _, frame = LIVE.frame(engine, s)
    fresh = fresh_mask(frame, clock(), settings.stale_after)
    fitting = rank(frame, fresh, job, RankFilters(), RankOptions(), clock())
    gpus = {r["gpu"] for r in fitting["rows"]}
    assert {"RTX4090-24GB", "A100-SXM-40GB"}.isdisjoint(gpus)
    assert {"H100-SXM-80GB", "L40S-48GB", "H200-SXM-141GB", "A100-SXM-80GB"} <= gpus
    h100 = next(r for r in fitting["rows"] if r["gpu"] == "H100-SXM-80GB")
    assert float(h100["cost_per_run"]) == pytest.approx(8.53, rel=0.005)
    everything = rank(frame, fresh, job, RankFilters(), RankOptions(include_unfit=True), clock())
    unfit = [r for r in everything["rows"] if not r["fits"]]
    assert {r["gpu"] for r in unfit} == {"RTX4090-24GB", "A100-SXM-40GB"}
    assert all("needs" in r["reason"] for r in unfit)
    assert everything["rows"][-1]["fits"] is False  # unfit offers sort last


def test_rank_multi_gpu_offer_fits_70b_bf16_lora(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(offer("one-h200", "3.50", gpu="H200 SXM"),
                                             offer("two-h100", "5.00", gpu="H100 SXM", count=2)))  # fmt: skip
    job = prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed")
    with session_scope(engine) as s:
        _, frame = LIVE.frame(engine, s)
    result = rank(frame, fresh_mask(frame, clock(), settings.stale_after), job, RankFilters(),
                  RankOptions(include_unfit=True), clock())  # fmt: skip
    by_key = {r["offer_key"]: r for r in result["rows"]}
    assert by_key["two-h100"]["fits"] is True and by_key["one-h200"]["fits"] is False


def test_rank_filters_and_best_per_card(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(
        offer("us1", "2.00", region="us-texas"), offer("us2", "2.50", region="us-oregon"),
        offer("eu1", "1.50", region="eu-west"), offer("spot", "0.90", pricing=Pricing.spot, region="us-texas"),
        offer("a100", "1.20", gpu="A100 SXM4", gpu_memory_gb=Decimal("80"), region="us-texas"),
    ))  # fmt: skip
    with session_scope(engine) as s:
        _, frame = LIVE.frame(engine, s)
    fresh = fresh_mask(frame, clock(), settings.stale_after)
    us = rank(frame, fresh, _seed_job_8b(), RankFilters(regions=["us"], pricing=["on_demand"]), RankOptions(),
              clock())  # fmt: skip
    # H100 at $2.50/h (1.01 h) still beats the A100 at $1.20/h (3.22 h) per run.
    assert [r["offer_key"] for r in us["rows"]] == ["us1", "us2", "a100"]
    best = rank(frame, fresh, _seed_job_8b(), RankFilters(), RankOptions(best_per_card=True), clock())
    assert [r["offer_key"] for r in best["rows"]] == ["spot", "a100"]
    fast = rank(frame, fresh, _seed_job_8b(), RankFilters(max_hours=1.5), RankOptions(), clock())
    assert all(r["gpu"] == "H100-SXM-80GB" for r in fast["rows"])


def test_rank_history_uses_daily_statistic(engine, settings, clock):
    _three_instants(engine, settings, clock)
    job = _seed_job_8b()
    with session_scope(engine) as s:
        result = rank_history(s, settings, NOW, job, gpu_ids=["H100-SXM-80GB"], pricing="on_demand",
                              statistic="median", start=T0, end=NOW)  # fmt: skip
    (series,) = result["series"]
    hours = series["hours"]
    assert [p["price_per_gpu_hour"] for p in series["points"]] == [Decimal("3.000000"), Decimal("2.000000")]
    assert float(series["points"][0]["cost_per_run"]) == pytest.approx(3.0 * hours, abs=0.01)

"""Market statistics, history buckets and ranking, computed by hand and checked on both backends."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from sqlalchemy import select

from providers.contract import Pricing
from providers.registry import reference_providers
from tests.factories.offers import batch, do_ingest, offer
from tracker.estimate import make_job, prepare
from tracker.market import freshness
from tracker.market.live import fresh_mask
from tracker.market.rank import RankFilters, RankOptions, rank
from tracker.market.service import market_history, market_snapshot, rank_history
from tracker.market.statistics import INTERVALS, weighted_quantiles
from tracker.storage.engine import session_scope
from tracker.storage.sql import epoch_us
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun

T0 = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
T2 = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)


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
        rows = market_history(
            s, settings, NOW, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", interval="1d", start=T0, end=NOW
        )
    # Day 1: a 2.00 for 12h then 1.00 for 12h; b 3.00 for 24h; c 4.00 for 12h (then delisted).
    #   weights 1.00:12 2.00:12 3.00:24 4.00:12 (total 60) → p25 at 15 → 2.00, median at 30 → 3.00.
    # Day 2: open prices hold until last seen (T2) + the 6 h freshness window = 12:00.
    #   a 1.00 for 12h; b 3.00 for 6h then 2.00 for 6h; c 4.00 for 6h (relisted at T2): total 30,
    #   median at 15 → 2.00 (cumulative 12, 18), p25 at 7.5 → 1.00, p75 at 22.5 → 3.00.
    assert [(r["bucket"], r["min"], r["p25"], r["median"], r["p75"], r["max"], r["offers"]) for r in rows] == [
        (
            T0,
            Decimal("1.000000"),
            Decimal("2.000000"),
            Decimal("3.000000"),
            Decimal("3.000000"),
            Decimal("4.000000"),
            3,
        ),
        (
            datetime(2026, 11, 2, tzinfo=UTC),
            Decimal("1.000000"),
            Decimal("1.000000"),
            Decimal("2.000000"),
            Decimal("3.000000"),
            Decimal("4.000000"),
            3,
        ),
    ]


def test_history_counts_rows_of_an_offer_listed_as_another_card_since(engine, settings, clock):
    """A price row keeps the card it was priced as; its offer, read apart from the rows (by the card's own
    offers first), is still found when it is listed as another card now."""
    _three_instants(engine, settings, clock)

    def history() -> list[dict[str, Any]]:
        with session_scope(engine) as s:
            return market_history(
                s, settings, NOW, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", interval="1d", start=T0, end=NOW
            )

    before = history()
    with session_scope(engine) as s:
        moved = s.execute(select(Offer).where(Offer.offer_key == "b")).scalar_one()
        moved.gpu_id = "A100-SXM4-80GB"
    assert history() == before and before[0]["offers"] == 3


def test_hourly_history_sees_the_delisting(engine, settings, clock):
    _three_instants(engine, settings, clock)
    with session_scope(engine) as s:
        rows = market_history(
            s, settings, NOW, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", interval="1h", start=T0, end=T2
        )
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
        "H100-SXM-80GB",
        "on_demand",
        3,
        Decimal("1.000000"),
        Decimal("2.000000"),
    )
    assert card["reference_only"] is False
    assert stale == []  # last seen 18 h before NOW: beyond vastai's freshness window


def _seed_job_8b():
    return prepare(make_job("llama-3.1-8b", "qlora", examples=5000, tokens_per_example=1500, epochs=3), "seed")


SEED_8B_COSTS = {  # seed 000, "Cost per fine-tune run" (22.5M tokens)
    "RTX4090-24GB": 2.68,
    "H100-SXM-80GB": 2.73,
    "A100-SXM-40GB": 3.83,
    "L40S-48GB": 3.30,
    "A100-SXM-80GB": 5.12,
    "H200-SXM-141GB": 3.44,
}


def _reference(engine, settings, clock):
    import asyncio

    from providers.adapters.reference import ReferenceRates
    from tracker.pipeline.scraping import ScrapeJob, run_scrape

    asyncio.run(run_scrape([ScrapeJob(ReferenceRates)], engine, settings, clock=clock))


def test_rank_reference_reproduces_seed_cost_table(engine, settings, clock, live):
    _reference(engine, settings, clock)
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    result = rank(frame, fresh_mask(frame, clock(), settings), _seed_job_8b(), RankFilters(), RankOptions(), clock())
    rows = [r for r in result["rows"] if r["gpu"] in SEED_8B_COSTS]
    assert rows[0]["gpu"] == "RTX4090-24GB" and rows[-1]["gpu"] == "A100-SXM-80GB"
    costs = [float(r["cost_per_run"]) for r in result["rows"]]
    assert costs == sorted(costs)
    for r in rows:
        assert float(r["cost_per_run"]) == pytest.approx(SEED_8B_COSTS[r["gpu"]], rel=0.005), r["gpu"]


def test_jobs_of_another_size_share_the_estimates_and_rank_as_their_own(engine, settings, clock, live):
    """A job's size (tokens) is not part of what its per-card estimates are kept under (estimates_key): a
    ranking that finds another size's estimates gives exactly what it computes alone."""
    from tracker.market.rank import estimates_key

    _reference(engine, settings, clock)
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    fresh = fresh_mask(frame, clock(), settings)
    small, large = (prepare(make_job("llama-3.1-8b", "qlora", tokens=t), "hf-peft") for t in ("7.0137M", "931M"))
    assert estimates_key(small) == estimates_key(large) and small.job != large.job
    shared: dict = {}
    options = RankOptions(include_unfit=True, limit=1000)
    first = rank(frame, fresh, large, RankFilters(), options, clock(), estimates=shared)
    assert shared  # filled by the first job
    again = rank(frame, fresh, small, RankFilters(), options, clock(), estimates=shared)
    alone = rank(frame, fresh, small, RankFilters(), options, clock())
    assert again == alone and again["rows"] and again["rows"][0]["hours"] < first["rows"][0]["hours"]


def test_rank_70b_qlora_leaves_out_cards_it_does_not_fit(engine, settings, clock, live):
    _reference(engine, settings, clock)
    job = prepare(make_job("llama-3.1-70b", "qlora", examples=2000, tokens_per_example=2000, epochs=2), "seed")
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    fresh = fresh_mask(frame, clock(), settings)
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


def test_rank_multi_gpu_offer_fits_70b_bf16_lora(engine, settings, clock, live):
    do_ingest(
        engine,
        settings,
        clock,
        batch(offer("one-h200", "3.50", gpu="H200 SXM"), offer("two-h100", "5.00", gpu="H100 SXM", count=2)),
    )
    job = prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed")
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    result = rank(
        frame, fresh_mask(frame, clock(), settings), job, RankFilters(), RankOptions(include_unfit=True), clock()
    )
    by_key = {r["offer_key"]: r for r in result["rows"]}
    assert by_key["two-h100"]["fits"] is True and by_key["one-h200"]["fits"] is False


def test_rank_filters_and_best_per_card(engine, settings, clock, live):
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("us1", "2.00", region="us-texas"),
            offer("us2", "2.50", region="us-oregon"),
            offer("eu1", "1.50", region="eu-west"),
            offer("spot", "0.90", pricing=Pricing.spot, region="us-texas"),
            offer("a100", "1.20", gpu="A100 SXM4", gpu_memory_gb=Decimal("80"), region="us-texas"),
        ),
    )
    with session_scope(engine) as s:
        _, frame = live.frame(engine, s)
    fresh = fresh_mask(frame, clock(), settings)
    us = rank(frame, fresh, _seed_job_8b(), RankFilters(regions=["us"], pricing=["on_demand"]), RankOptions(), clock())
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
        result = rank_history(
            s, settings, NOW, job, gpu_ids=["H100-SXM-80GB"], pricing="on_demand", statistic="median", start=T0, end=NOW
        )
    (series,) = result["series"]
    hours = series["hours"]
    assert [p["price_per_gpu_hour"] for p in series["points"]] == [Decimal("3.000000"), Decimal("2.000000")]
    assert float(series["points"][0]["cost_per_run"]) == pytest.approx(3.0 * hours, abs=0.01)


# ------------------------------------------------------------------ history against a reference, random data

RANDOM_T0 = datetime(2026, 9, 30, 7, 13, 27, 481_516, tzinfo=UTC)
RANDOM_END = RANDOM_T0 + timedelta(days=20)
QUIET_AT = RANDOM_T0 + timedelta(days=12, hours=3)  # lambdalabs stops answering here
US = timedelta(microseconds=1)
PRICE_CHOICES = [Decimal(p) for p in ("1.50", "1.75", "2.00", "2.25", "2.50", "3.00", "3.49", "2.123457", "1.999999")]


def _random_history(engine, seed: int = 7, n_offers: int = 40) -> None:
    """Offers of several providers with random price changes, delistings and relistings.

    Half the offers change at random microsecond instants; the other half on whole hours, so that weights
    tie and a bucket's cumulative weight often lands exactly on q·total (where inverted-CDF picks the lower price).
    """
    rng = random.Random(seed)
    hour0, hour = RANDOM_T0.replace(minute=0, second=0, microsecond=0), timedelta(hours=1)
    plans = []
    for i in range(n_offers):
        grain = 1 if i % 2 else 3_600_000_000  # microseconds per tick

        def draw(lo_us: int, hi_us: int, grain: int = grain) -> timedelta:
            return rng.randrange(max(lo_us // grain, 1), hi_us // grain) * grain * US

        provider = rng.choice(["vastai", "runpod", "crusoe", "lambdalabs"])  # crusoe: a reference sheet, 3 d window
        gpu = "A100-SXM-80GB" if rng.random() < 0.15 else "H100-SXM-80GB"
        pricing = "spot" if rng.random() < 0.15 else "on_demand"
        horizon = QUIET_AT if provider == "lambdalabs" else RANDOM_END
        t = (RANDOM_T0 if grain == 1 else hour0) + draw(0, 2 * 86_400_000_000)
        segments: list[tuple[datetime, datetime | None, Decimal]] = []  # (valid_from, valid_to, price)
        price, last_seen, delisted_at = rng.choice(PRICE_CHOICES), None, None
        while True:
            stop = t + draw(600_000_000, 3 * 86_400_000_000)
            if stop >= horizon:  # still listed: the open row, seen last a little (or a long) while ago
                behind = draw(0, 7_200_000_000) if rng.random() < 0.7 else draw(0, 4 * 86_400_000_000)
                last_seen = horizon - behind
                if grain > 1:
                    last_seen = hour0 + (last_seen - hour0) // hour * hour
                last_seen = max(t, last_seen)
                segments.append((t, None, price))
                break
            segments.append((t, stop, price))
            price = rng.choice([p for p in PRICE_CHOICES if p != price])
            if rng.random() < 0.2:  # delisted, maybe back later
                t = stop + draw(60_000_000, 2 * 86_400_000_000)
                if t >= horizon:
                    last_seen = delisted_at = stop
                    break
            else:
                t = stop
        plans.append((i, provider, gpu, pricing, segments, last_seen, delisted_at))
    with session_scope(engine) as s:
        for i, provider, gpu, pricing, segments, last_seen, delisted_at in plans:
            last_price = segments[-1][2]
            row = Offer(
                provider=provider,
                offer_key=f"o{i}",
                gpu_id=gpu,
                gpu_family=gpu.split("-")[0],
                raw_gpu_name=gpu,
                gpu_count=Decimal(1),
                form_factor="SXM",
                pricing=pricing,
                region="us",
                first_seen=segments[0][0],
                last_seen=last_seen,
                delisted_at=delisted_at,
                price_per_hour=last_price,
                price_per_gpu_hour=last_price,
            )
            s.add(row)
            s.flush()
            s.add_all(
                OfferPrice(
                    offer_id=row.id,
                    gpu_id=gpu,
                    pricing=pricing,
                    valid_from=lo,
                    valid_to=hi,
                    price_per_hour=p,
                    price_per_gpu_hour=p,
                )
                for lo, hi, p in segments
            )


def _reference_history(engine, *, gpu_ids, pricing, interval, start, end, now, settings, include_reference=True):
    """market.history by definition: every bucket, every interval's overlap, exact weighted inverted-CDF quantiles."""
    step = INTERVALS[interval]
    origin = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "1w":
        origin -= timedelta(days=origin.weekday())
    first = origin + (start - origin) // step * step
    end = min(end, now)
    refs = reference_providers()
    intervals = []
    with session_scope(engine) as s:
        for p, o in s.execute(select(OfferPrice, Offer).join(Offer, Offer.id == OfferPrice.offer_id)).all():
            if p.gpu_id not in gpu_ids or p.pricing != pricing or (not include_reference and o.provider in refs):
                continue
            stop = p.valid_to
            if stop is None:  # the live price: until last seen + the provider's freshness window, at most `end`
                stop = min(o.last_seen + freshness.window(o.provider, settings), end)
            intervals.append((p.valid_from, stop, p.price_per_gpu_hour, o.id, o.provider))
    quantiles = {"p25": Fraction(1, 4), "median": Fraction(1, 2), "p75": Fraction(3, 4)}
    out, b = [], first
    while b < end:
        b_stop = min(b + step, end)
        pieces = sorted(
            (price, w, offer_id, provider)
            for lo, hi, price, offer_id, provider in intervals
            if (w := (min(hi, b_stop) - max(lo, b)) // US) > 0
        )
        if pieces:
            total = sum(w for _, w, _, _ in pieces)
            row = {"bucket": b, "min": pieces[0][0], "max": pieces[-1][0]}
            for name, q in quantiles.items():
                need, cum = q * total - Fraction(total, 10**9), 0  # weighted_quantiles' tolerance, exactly
                for price, w, _, _ in pieces:
                    cum += w
                    if cum >= need:
                        row[name] = price
                        break
            row = {k: v.quantize(Decimal("0.000001")) for k, v in row.items() if k != "bucket"} | {"bucket": b}
            row["offers"] = len({x[2] for x in pieces})
            row["providers"] = len({x[3] for x in pieces})
            out.append(row)
        b += step
    return out


HISTORY_CASES = [
    # (interval, start, end, now, gpu_ids, pricing, include_reference)
    (
        "1h",
        RANDOM_T0 + timedelta(days=9, hours=5, minutes=17),
        RANDOM_T0 + timedelta(days=14),
        RANDOM_END,
        ["H100-SXM-80GB"],
        "on_demand",
        True,
    ),
    ("1h", RANDOM_T0, RANDOM_END + timedelta(days=1), RANDOM_END, ["H100-SXM-80GB"], "on_demand", True),
    (
        "1h",
        RANDOM_T0 + timedelta(days=3),
        RANDOM_END,
        RANDOM_T0 + timedelta(days=10, seconds=7.25),
        ["H100-SXM-80GB"],
        "on_demand",
        True,
    ),  # a past "now": later rows and open prices are cut there
    (
        "1d",
        RANDOM_T0 - timedelta(days=2, hours=3),
        RANDOM_END + timedelta(days=3),
        RANDOM_END,
        ["H100-SXM-80GB"],
        "on_demand",
        True,
    ),
    ("1d", RANDOM_T0, RANDOM_END, RANDOM_END, ["H100-SXM-80GB", "A100-SXM-80GB"], "on_demand", False),
    ("1d", RANDOM_T0, RANDOM_END, RANDOM_END, ["H100-SXM-80GB", "A100-SXM-80GB"], "spot", True),
    (
        "1w",
        RANDOM_T0 - timedelta(days=1),
        RANDOM_END + timedelta(days=9),
        RANDOM_END + timedelta(days=9),
        ["H100-SXM-80GB"],
        "on_demand",
        True,
    ),
]


def test_history_matches_reference_on_random_history(engine, settings):
    _random_history(engine)
    seen_delisted_gap = False
    for interval, start, end, now, gpu_ids, pricing, include_reference in HISTORY_CASES:
        query: dict[str, Any] = {
            "gpu_ids": gpu_ids,
            "pricing": pricing,
            "interval": interval,
            "start": start,
            "end": end,
            "include_reference": include_reference,
        }
        with session_scope(engine) as s:
            got = market_history(s, settings, now, **query)
        want = _reference_history(engine, now=now, settings=settings, **query)
        case = (interval, start, end, now, gpu_ids, pricing, include_reference)
        assert want, case
        assert got == want, case
        assert all(r["bucket"].utcoffset() == timedelta(0) for r in got)
        seen_delisted_gap |= len({r["offers"] for r in got}) > 1
    assert seen_delisted_gap  # offers come and go, so buckets differ in how many they count
    hourly = _reference_history(
        engine,
        gpu_ids=["H100-SXM-80GB"],
        pricing="on_demand",
        interval="1h",
        start=RANDOM_T0,
        end=RANDOM_END,
        now=RANDOM_END,
        settings=settings,
    )
    assert len(hourly) >= 470 and max(r["providers"] for r in hourly) >= 3
    assert any(r["p25"] != r["min"] and r["p75"] != r["max"] for r in hourly)


def test_epoch_us_is_exact_on_both_backends(engine):
    at = datetime(2026, 11, 1, 23, 59, 59, 999_999, tzinfo=UTC)
    with session_scope(engine) as s:
        s.add(
            ScrapeRun(
                provider="vastai", status="ok", started_at=at, finished_at=at - timedelta(seconds=1.5), source="live"
            )
        )
    with session_scope(engine) as s:
        got = s.execute(select(epoch_us(ScrapeRun.started_at), epoch_us(ScrapeRun.finished_at))).one()
    assert tuple(got) == (
        (at - datetime(1970, 1, 1, tzinfo=UTC)) // US,
        (at - timedelta(seconds=1.5) - datetime(1970, 1, 1, tzinfo=UTC)) // US,
    )


@pytest.mark.parametrize("spread", [1, 10**9])  # ids close together (a table) and far apart (a search)
@pytest.mark.parametrize("order", [[0, 1, 2, 3], [2, 0, 3, 1]])  # sorted or not
def test_offer_positions_are_found_either_way(spread, order):
    import numpy as np

    from tracker.market.table import positions

    ids = (np.array([3, 5, 9, 12], dtype=np.int64) * spread)[order]
    wanted = np.array([5, 3, 4, 12, 13, -1, 9, 100], dtype=np.int64) * spread
    pos, found = positions(ids, wanted)
    assert found.tolist() == [True, True, False, True, False, False, True, False]
    assert ids[pos[found]].tolist() == [5 * spread, 3 * spread, 12 * spread, 9 * spread]
    empty_pos, empty_found = positions(ids[:0], wanted)
    assert not empty_found.any() and len(empty_pos) == len(wanted)

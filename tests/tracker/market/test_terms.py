"""Terms are never blended: the history of reserved prices, the ranking over time and the term curve read
one reservation term each, and ingest stores every term in the one spelling.

Each offer below is listed for the whole day, so a day's statistic is plain arithmetic: the 1-day offers
at $4/GPU-h and the 3-year one at $2/GPU-h must never meet in one distribution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import select

from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer
from tracker.estimate import make_job, prepare
from tracker.market import terms
from tracker.market.service import market_history, market_terms, rank_history
from tracker.market.statistics import TermError, commitment
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer

DAY = datetime(2026, 11, 2, tzinfo=UTC)
NOW = DAY + timedelta(days=1)
H100 = "H100-SXM-80GB"


def _ingest(engine, settings, clock):
    """Two 1-day offers ($4, $4.40), one 3-year offer ($2) and one on-demand ($3) of the H100, seen all day;
    re-observed every hour so none goes stale."""
    offers = batch(
        offer("od", "3.00"),
        offer("d1", "4.00", pricing=Pricing.reserved, reserved_term="1d"),
        offer("d1b", "4.40", pricing=Pricing.reserved, reserved_term="1 day"),
        offer("y3", "2.00", pricing=Pricing.reserved, reserved_term="36 months"),
    )
    for h in range(25):
        clock.now = DAY + timedelta(hours=h)
        do_ingest(engine, settings, clock, offers, provider="aws")


def test_ingest_stores_every_term_in_the_one_spelling(engine, settings, clock):
    _ingest(engine, settings, clock)
    with session_scope(engine) as s:
        stored = dict(s.execute(select(Offer.offer_key, Offer.reserved_term)).all())
    assert stored == {"od": None, "d1": "1d", "d1b": "1d", "y3": "3y"}


def test_an_unreadable_term_is_set_aside(engine, settings, clock):
    clock.now = DAY
    bad = offer("x", "2.00", pricing=Pricing.reserved, reserved_term="forever")
    report = do_ingest(engine, settings, clock, batch(offer("od", "3.00"), bad))
    assert report.offers_valid == 1
    assert len(report.invalid) == 1 and "forever" in report.invalid[0]


def test_market_history_of_reserved_prices_is_per_term(engine, settings, clock):
    _ingest(engine, settings, clock)
    with session_scope(engine) as s:

        def day(term):
            (b,) = market_history(
                s,
                settings,
                NOW,
                gpu_ids=[H100],
                pricing="reserved",
                reserved_term=term,
                interval="1d",
                start=DAY,
                end=NOW,
            )
            return b["offers"], b["min"], b["max"]

        assert day("3y") == (1, Decimal("2.000000"), Decimal("2.000000"))  # blended: 3 offers, $2.00 to $4.40
        assert day("36mo") == day("3y")  # the term is read in the one spelling
        assert day("1d") == (2, Decimal("4.000000"), Decimal("4.400000"))
        with pytest.raises(TermError):  # a reserved history without its term would mix them
            market_history(s, settings, NOW, gpu_ids=[H100], pricing="reserved", interval="1d", start=DAY, end=NOW)


def test_rank_history_of_reserved_prices_is_per_term(engine, settings, clock):
    _ingest(engine, settings, clock)
    job = prepare(make_job("llama-3.1-8b", "qlora", examples=5000, tokens_per_example=1500, epochs=3), "seed")
    with session_scope(engine) as s:
        result = rank_history(
            s, settings, NOW, job, gpu_ids=[H100], pricing="reserved", reserved_term="3y", statistic="median",
            start=DAY, end=NOW,
        )  # fmt: skip
    (series,) = result["series"]
    assert result["reserved_term"] == "3y"
    assert [p["price_per_gpu_hour"] for p in series["points"]] == [Decimal("2.000000")]


def test_commitment_names_the_field():
    assert commitment("reserved", "12mo") == "1y"
    assert commitment("on_demand", None) is None
    for pricing, term in (("reserved", None), ("reserved", "soon"), ("spot", "1y")):
        with pytest.raises(TermError) as err:
            commitment(pricing, term, "term")
        assert err.value.field == "term"


def test_the_term_curve_now_and_per_day(engine, settings, clock):
    _ingest(engine, settings, clock)
    with session_scope(engine) as s:
        answer = market_terms(engine, s, settings, NOW, gpu_ids=[H100, "H100-PCIE-80GB"], days=1)
    (card,) = answer["cards"]  # the PCIe card has no offers: no curve
    got = {p["label"]: (p["offers"], p["min"], p["median"], p["commitment_hours"]) for p in card["terms"]}
    assert list(got) == ["on_demand", "spot", "1d", "7d", "1mo", "3mo", "1y", "3y"]  # by commitment length
    assert got["on_demand"] == (1, Decimal("3.000000"), Decimal("3.000000"), Decimal(0))
    assert got["spot"] == (0, None, None, None)
    assert got["1d"] == (2, Decimal("4.000000"), Decimal("4.000000"), Decimal(24))
    assert got["1y"][0] == 0
    assert got["3y"] == (1, Decimal("2.000000"), Decimal("2.000000"), Decimal(26280))
    history = {s["label"]: [(d["offers"], d["median"]) for d in s["days"]] for s in card["history"]}
    assert history["1d"] == [(2, Decimal("4.000000"))]
    assert history["3y"] == [(1, Decimal("2.000000"))]
    assert history["1y"] == []


def test_points_list_other_terms_in_order():
    got = terms.points([("reserved", "6mo"), ("reserved", "2y"), ("on_demand", None)])
    assert [terms.label(p, t) for p, t in got] == [
        "on_demand",
        "spot",
        "1d",
        "7d",
        "1mo",
        "3mo",
        "6mo",
        "1y",
        "2y",
        "3y",
    ]


def test_overview_sparklines_of_reserved_rows_are_per_term(engine, settings, clock):
    from tracker.market.overview import market_overview

    _ingest(engine, settings, clock)
    with session_scope(engine) as s:
        cards = market_overview(engine, s, settings, NOW)["cards"]
    spark = {c["reserved_term"]: [p["min"] for p in c["sparkline"]] for c in cards if c["pricing"] == "reserved"}
    assert spark["3y"][-1] == Decimal("2.000000")  # a blend's minimum would be the 3-year $2.00 on both rows
    assert spark["1d"][-1] == Decimal("4.000000")

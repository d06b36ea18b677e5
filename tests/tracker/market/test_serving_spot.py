"""Serving on spot, when asked for, is priced at its uptime (tracker.costs.serving): an interrupted replica
serves nothing until a new machine has booted, downloaded the model and started, so its $/Mtok and the copies
a monthly load needs count only the hours it serves. On-demand rows are as before and say nothing of it."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from providers.contract import Pricing
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker import money
from tracker.clock import utcnow
from tracker.estimate import JobInput
from tracker.estimate.serving import prepare_serving
from tracker.market.rank import RankFilters, RankOptions
from tracker.market.service import rank_offers
from tracker.storage.engine import session_scope

JOB = JobInput(kind="inference", model="llama-3.1-8b", precision="bf16", concurrency=32)
MONTHLY = JobInput(kind="inference", model="llama-3.1-8b", precision="bf16", concurrency=32, tokens_per_month="20B")


def _rank(engine, settings, now, job: JobInput, **filters):
    with session_scope(engine) as s:
        return rank_offers(
            engine, s, settings, now, prepare_serving(job.serving_spec()), RankFilters(**filters), RankOptions(limit=50)
        )


@pytest.fixture
def same_price(engine, settings):
    """One H100 on-demand and one on spot at the same price, and a spot host Vast rates unreliable."""
    clock = FakeClock(utcnow())
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("od", "2.00", region="us-texas"),
            offer("spot", "2.00", pricing=Pricing.spot, region="us-texas"),
            offer("flaky", "2.00", pricing=Pricing.spot, region="us-texas", attributes={"reliability": 0.5}),
        ),
    )
    return clock


def test_a_spot_replica_costs_more_per_token_than_its_price_says(engine, settings, same_price):
    ranked = _rank(engine, settings, same_price(), JOB, pricing=["on_demand", "spot"])["rows"]
    rows = {r["offer_key"]: r for r in ranked}
    od, spot, flaky = rows["od"], rows["spot"], rows["flaky"]
    assert od["uptime"] == 1.0 and od["interruptions_per_hour"] == 0.0
    assert 0.95 < spot["uptime"] < 1.0  # the default spot rate: an interruption per 20 h, minutes down each
    assert flaky["uptime"] < spot["uptime"]  # a host up through half its days is interrupted far more often
    assert flaky["interruptions_per_hour"] > spot["interruptions_per_hour"]
    # Same machine, same speed while up; the price per token divides by the share of hours serving.
    assert spot["tokens_per_second"] == od["tokens_per_second"]
    expected = money.per_million_tokens(Decimal("2.00"), od["tokens_per_second"] * spot["uptime"])
    assert float(spot["usd_per_mtok"]) == pytest.approx(float(expected), rel=1e-4)  # the uptime shown: 4 places
    assert od["usd_per_mtok"] < spot["usd_per_mtok"] < flaky["usd_per_mtok"]
    keys = [r["offer_key"] for r in _rank(engine, settings, same_price(), JOB, pricing=["on_demand", "spot"])["rows"]]
    assert keys.index("od") < keys.index("spot") < keys.index("flaky")  # the ranking orders by it too


def test_a_monthly_load_on_spot_needs_copies_for_the_hours_it_is_down(engine, settings, same_price):
    rows = {
        r["offer_key"]: r for r in _rank(engine, settings, same_price(), MONTHLY, pricing=["on_demand", "spot"])["rows"]
    }
    od, flaky = rows["od"], rows["flaky"]
    load = 20e9 / (730 * 3600)
    assert od["offers_needed"] == math.ceil(load / od["tokens_per_second"])
    assert flaky["offers_needed"] == math.ceil(load / (flaky["tokens_per_second"] * flaky["uptime"]))
    assert flaky["offers_needed"] >= od["offers_needed"]
    assert flaky["monthly_cost"] == money.cost(Decimal("2.00") * flaky["offers_needed"], 730)


def test_on_demand_serving_reads_no_cost_terms_and_says_no_uptime(engine, settings, same_price):
    rows = _rank(engine, settings, same_price(), JOB)["rows"]
    assert [r["offer_key"] for r in rows] == ["od"]  # serving defaults to on-demand
    assert "uptime" not in rows[0] and "interruptions_per_hour" not in rows[0]

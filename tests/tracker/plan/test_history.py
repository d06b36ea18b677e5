"""The plan over time: today's placements repriced at each day's statistic, checked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from tests.factories.offers import batch, do_ingest, offer
from tests.factories.plans import SMALL, hours_per_run
from tracker import money
from tracker.plan.mix import validate_mix
from tracker.plan.service import options_for, plan_history
from tracker.storage.engine import session_scope

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
DAY1 = DAY0 + timedelta(days=1)
NOW = DAY1 + timedelta(hours=1)


def test_each_day_reprices_the_placements_and_picks_that_days_cheapest_card(engine, settings, clock):
    clock.now = DAY0
    do_ingest(
        engine, settings, clock, batch(offer("a", "1.00", gpu="A100-SXM-80GB"), offer("r", "0.30", gpu="RTX4090-24GB"))
    )
    clock.now = DAY1  # the 4090 triples: on day 1 the A100 runs the month cheaper
    do_ingest(
        engine, settings, clock, batch(offer("a", "1.00", gpu="A100-SXM-80GB"), offer("r", "0.90", gpu="RTX4090-24GB"))
    )
    mix = validate_mix({"workloads": [SMALL]})
    with session_scope(engine) as session:
        result = plan_history(engine, session, settings, NOW, mix, options_for(mix), days=2)
    runs = SMALL["volume"]["runs_per_month"]
    gpu_hours = {g: runs * hours_per_run(SMALL["job"], g) for g in ("A100-SXM-80GB", "RTX4090-24GB")}
    prices = {
        DAY0: {"A100-SXM-80GB": "1.00", "RTX4090-24GB": "0.30"},
        DAY1: {"A100-SXM-80GB": "1.00", "RTX4090-24GB": "0.90"},
    }
    points = {
        datetime.fromisoformat(str(p["day"])) if isinstance(p["day"], str) else p["day"]: p for p in result["points"]
    }
    assert set(points) == {DAY0, DAY1}
    for day, by_card in prices.items():
        costs = {g: money.cost(Decimal(price), gpu_hours[g]) for g, price in by_card.items()}
        best = min(costs, key=lambda g: costs[g])
        p = points[day]
        assert p["choices"] == [{"workload": "small", "gpu": best, "monthly_cost": costs[best]}]
        assert p["monthly_cost"] == costs[best]
        assert p["single_card"] == best and p["saving"] == 0  # one workload: mixed and single agree
    assert points[DAY0]["choices"][0]["gpu"] == "RTX4090-24GB"
    assert points[DAY1]["choices"][0]["gpu"] == "A100-SXM-80GB"
    assert result["summary"] == {"days_with_saving": 0, "days_compared": 2, "min_saving": 0, "max_saving": 0}


def test_a_reserved_placement_is_repriced_at_its_own_terms_prices(engine, settings, clock):
    """Today's cheapest placement is a 3-year reservation at $2.00/GPU-h; two 1-month ones list at $3.00.
    The plan over time prices that placement at 3-year prices: a blend of the terms (median $3.00) would
    price the 3-year commitment as if it were a monthly one."""
    from providers.contract import Pricing
    from tracker.plan.service import plan_live

    offers = batch(
        offer("y3", "2.00", pricing=Pricing.reserved, reserved_term="3y"),
        offer("m1", "3.00", pricing=Pricing.reserved, reserved_term="1mo"),
        offer("m1b", "3.00", pricing=Pricing.reserved, reserved_term="1mo"),
    )
    for h in range(25):
        clock.now = DAY0 + timedelta(hours=h)
        do_ingest(engine, settings, clock, offers, provider="aws")
    workload = SMALL | {"constraints": {"pricing": ["reserved"]}}
    mix = validate_mix({"workloads": [workload]})
    at = DAY1 + timedelta(minutes=1)
    with session_scope(engine) as session:
        live = plan_live(engine, session, settings, at, mix, options_for(mix))
        result = plan_history(engine, session, settings, at, mix, options_for(mix), days=1)
    (placed,) = live["workloads"]
    assert placed["choice"]["reserved_term"] == "3y"
    day0 = next(p for p in result["points"] if p["day"] == DAY0)
    assert day0["monthly_cost"] == placed["choice"]["monthly_cost"]  # $2.00 × its billed hours, not $3.00

"""Spot interruptions in closed form: longer runs are riskier, higher rates cost more, frequent
checkpoints cost less — checked against the formulas, not just their direction."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

import pytest

from tracker.costs import RunPlan, resolve, run_cost
from tracker.costs.spot import expected_wall, loss_per_interruption, p_within, poisson_cdf, poisson_quantile
from tracker.costs.terms import CostTerms

# Setup and restart fixed at 6 minutes, no transfer fees, a tiny adapter checkpoint.
PLAN = RunPlan(
    dataset_gb=0,
    model_gb=0,
    image_gb=0,
    checkpoint_gb=0,
    checkpoints_kept=0,
    output_gb=0,
    checkpoint_interval_h=0.5,
    setup_h=0.1,
    restart_h=0.1,
)
PRICE = Decimal("1.00")


def _spot(rate: str) -> CostTerms:
    base = resolve("runpod", "spot")
    return CostTerms(dict(base.values) | {"interruptions_per_hour": Decimal(rate)}, base.sources)


def test_expected_interruption_loss_is_the_closed_form():
    # work W = 0.1 + 10 = 10.1 h; mu = 0.05 × 10.1 = 0.505; L = 0.5/2 + 0.1 = 0.35 h.
    cost = run_cost(PRICE, 10.0, _spot("0.05"), PLAN)
    assert cost.spot is not None
    assert cost.components["interruption"] == Decimal("0.176750")  # $1 × 0.505 × 0.35
    assert cost.spot["expected_wall_hours"] == pytest.approx(10.1 + 0.505 * 0.35, abs=1e-4)
    assert cost.spot["p_no_interruption"] == pytest.approx(math.exp(-0.505), abs=1e-4)
    assert expected_wall(10.1, 0.05, 0.35) == pytest.approx(10.27675)


def test_longer_runs_are_riskier():
    short, long_ = (run_cost(PRICE, h, _spot("0.05"), PLAN) for h in (3.0, 10.0))
    assert short.spot and long_.spot
    assert long_.spot["p_no_interruption"] < short.spot["p_no_interruption"]  # e^-0.155 vs e^-0.505
    assert long_.components["interruption"] > short.components["interruption"]
    # Same slack of one hour past the work: the longer run is less likely to make it.
    assert p_within(10.1 + 1, 10.1, 0.05, 0.35) < p_within(3.1 + 1, 3.1, 0.05, 0.35)
    # ...by the Poisson CDF at floor(1 / 0.35) = 2 allowed interruptions.
    mu = 0.05 * 10.1
    assert p_within(11.1, 10.1, 0.05, 0.35) == pytest.approx(math.exp(-mu) * (1 + mu + mu**2 / 2))


def test_expected_cost_rises_with_the_interruption_rate():
    totals = [run_cost(PRICE, 10.0, _spot(rate), PLAN).total for rate in ("0.01", "0.05", "0.2")]
    assert totals == sorted(totals) and len(set(totals)) == 3
    # Linear in the rate: loss = price × rate × W × L.
    losses = [run_cost(PRICE, 10.0, _spot(r), PLAN).components["interruption"] for r in ("0.01", "0.2")]
    assert losses[1] == pytest.approx(losses[0] * 20, abs=Decimal("0.00001"))


def test_more_frequent_checkpoints_cost_less_in_expectation():
    plans = [replace(PLAN, checkpoint_interval_h=h) for h in (2.0, 1.0, 0.5, 0.25)]
    totals = [run_cost(PRICE, 10.0, _spot("0.05"), p).total for p in plans]
    assert totals == sorted(totals, reverse=True) and len(set(totals)) == 4
    # Halving the interval saves price × mu × interval / 4: from 2 h to 1 h, $1 × 0.505 × 0.5.
    assert totals[0] - totals[1] == Decimal("0.252500")


def test_writing_checkpoints_has_a_price_so_the_best_interval_is_finite():
    # A 30 GB full checkpoint takes 30 s to write: every few seconds would cost more than it saves.
    heavy = replace(PLAN, checkpoint_gb=30.0)
    often, sensible = (
        run_cost(PRICE, 10.0, _spot("0.05"), replace(heavy, checkpoint_interval_h=h)).total for h in (0.01, 0.5)
    )
    assert often > sensible


def test_the_range_brackets_the_expectation_and_on_demand_has_none():
    cost = run_cost(PRICE, 10.0, _spot("0.05"), PLAN)
    assert cost.spot is not None
    low, high = cost.spot["range"]["low"], cost.spot["range"]["high"]
    assert low <= cost.total <= high
    assert poisson_quantile(0.05, 0.505) == 0 and poisson_quantile(0.95, 0.505) == 2
    assert cost.spot["range"]["interruptions"] == [0, 2]
    assert low == run_cost(PRICE, 10.0, _spot("0"), PLAN).total
    assert high == run_cost(PRICE, 10.0, _spot("0"), PLAN).total + Decimal("0.700000")  # 2 × 0.35 h
    assert run_cost(PRICE, 10.0, resolve("runpod", "on_demand"), PLAN).spot is None


def test_deadline_probability_in_the_answer():
    cost = run_cost(PRICE, 10.0, _spot("0.05"), replace(PLAN, deadline_h=10.0))
    assert cost.spot is not None and cost.spot["p_within_deadline"] == 0.0  # the work alone is 10.1 h
    cost = run_cost(PRICE, 10.0, _spot("0.05"), replace(PLAN, deadline_h=11.1))
    assert cost.spot is not None and cost.spot["p_within_deadline"] == pytest.approx(poisson_cdf(2, 0.505), abs=1e-4)


def test_a_short_spot_run_still_shows_one_interruption_in_its_range():
    cost = run_cost(PRICE, 0.5, _spot("0.05"), PLAN)  # mu = 0.03: no interruption is 97% likely
    assert cost.spot is not None and cost.spot["range"]["interruptions"] == [0, 1]
    assert cost.spot["range"]["low"] < cost.total < cost.spot["range"]["high"]


def test_loss_per_interruption_never_exceeds_half_a_short_run():
    assert loss_per_interruption(interval_h=2.0, restart_h=0.1, train_h=0.5) == pytest.approx(0.35)
    assert poisson_cdf(-1, 1.0) == 0.0 and poisson_cdf(3, 0.0) == 1.0
    assert sum(math.exp(-2) * 2**k / math.factorial(k) for k in range(5)) == pytest.approx(poisson_cdf(4, 2.0))


def test_a_very_long_spot_run_is_answered_at_once():
    # mu = 5 million: the exact sums would take millions of steps; the normal approximation answers.
    assert poisson_quantile(0.95, 5e6) == pytest.approx(5e6 + 1.645 * math.sqrt(5e6), abs=2)
    assert poisson_cdf(5_000_000, 5e6) == pytest.approx(0.5, abs=1e-3)
    # Nearly continuous at the switch-over (mu 50): within the approximation's few thousandths.
    assert poisson_cdf(60, 49.999) == pytest.approx(poisson_cdf(60, 50.001), abs=5e-3)
    cost = run_cost(PRICE, 1e8, _spot("0.05"), PLAN)
    assert cost.spot is not None and cost.spot["p_no_interruption"] == 0.0

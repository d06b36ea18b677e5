"""The planner on hand-built markets: the assignment, its cost, the fleet, one card type, a power cap.

Costs are computed here from the estimate's hours per run (the one figure the planner takes from the
estimate model): a training month is runs × the whole run's cost (tracker.costs.run_cost under the
market's provider's terms, as the ranking prices it), rounded once by the money rule.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

from providers.contract import Pricing
from tests.factories.offers import batch, do_ingest, offer
from tests.factories.plans import BIG, SMALL, hours_per_run
from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.costs import plan_for, resolve, run_cost
from tracker.estimate import JobInput
from tracker.market.live import LiveOffers
from tracker.plan import planner as planner_module
from tracker.plan.mix import HOURS_PER_MONTH, validate_mix
from tracker.plan.service import options_for, plan_live
from tracker.storage.engine import session_scope

# Three offers: the 4090 is cheap but too small for the 70B; the H100 is priced far above its speed-up.
PRICES = {"RTX4090-24GB": "0.30", "A100-SXM-80GB": "1.00", "H100-SXM-80GB": "5.00"}


def _market(engine, settings, clock, prices=PRICES, **kw):
    offers = [offer(gpu.lower(), price, gpu=gpu, **kw) for gpu, price in prices.items()]
    do_ingest(engine, settings, clock, batch(*offers))


def _plan(engine, settings, clock, workloads, power_budget_kw=None, overhead=None, live=None):
    mix = validate_mix({"workloads": workloads})
    with session_scope(engine) as session:
        options = options_for(mix, power_budget_kw, overhead)
        return plan_live(engine, session, settings, clock(), mix, options, live=live)


def _run(workload: dict, gpu: str, price: str | None = None) -> Decimal:
    """One whole run of the workload on one `gpu` of the test market (provider vastai, on-demand)."""
    job = JobInput(**workload["job"])
    hours = hours_per_run(workload["job"], gpu)
    return run_cost(
        Decimal(price or PRICES[gpu]), hours, resolve("vastai", "on_demand"), plan_for(job, job.spec())
    ).total


def _cost(workload: dict, gpu: str) -> Decimal:
    return money.to_money(_run(workload, gpu) * Decimal(repr(float(workload["volume"]["runs_per_month"]))))


def _kw(gpu: str, gpus: int = 1, overhead: float = 1.3) -> float:
    tdp_w = get_catalog().get(gpu).tdp_w
    assert tdp_w is not None, f"{gpu} has no TDP in the catalog"
    return gpus * tdp_w * overhead / 1000


def test_two_workloads_three_offers_exact_assignment_and_cost(engine, settings, clock):
    _market(engine, settings, clock)
    result = _plan(engine, settings, clock, [SMALL, BIG])
    small, big = result["workloads"]
    assert (small["status"], small["choice"]["gpu"], small["choice"]["gpus_per_node"]) == ("ok", "RTX4090-24GB", 1)
    assert (big["status"], big["choice"]["gpu"]) == ("ok", "A100-SXM-80GB")
    assert small["choice"]["monthly_cost"] == _cost(SMALL, "RTX4090-24GB")
    assert big["choice"]["monthly_cost"] == _cost(BIG, "A100-SXM-80GB")
    assert small["choice"]["cost_per_run"] == _run(SMALL, "RTX4090-24GB")
    # The 70B does not fit a 24 GB card: two of the three offers fit it.
    assert big["offers"] == {"considered": 3, "fitting": 2, "feasible": 2}
    # Runner-up: the cheapest offer of another card, with the difference in the explanation.
    assert small["runner_up"]["gpu"] == "A100-SXM-80GB"
    more = _cost(SMALL, "A100-SXM-80GB") - _cost(SMALL, "RTX4090-24GB")
    assert small["runner_up"]["why_lost"].startswith(f"${more:,.2f} a month more")
    assert big["runner_up"]["gpu"] == "H100-SXM-80GB"

    fleet = result["fleet"]
    assert fleet["monthly_cost"] == _cost(SMALL, "RTX4090-24GB") + _cost(BIG, "A100-SXM-80GB")
    assert {c["gpu"]: c["gpus_at_peak"] for c in fleet["cards"]} == {"RTX4090-24GB": 1, "A100-SXM-80GB": 1}
    gpu_hours = {c["gpu"]: c["gpu_hours_per_month"] for c in fleet["cards"]}
    assert gpu_hours["A100-SXM-80GB"] == pytest.approx(4 * hours_per_run(BIG["job"], "A100-SXM-80GB"), abs=1e-4)
    assert fleet["power_kw"] == pytest.approx(_kw("RTX4090-24GB") + _kw("A100-SXM-80GB"))

    # One card type for both: the 4090 cannot run the 70B; the A100 is the cheaper of the other two.
    single = result["single_card"]
    assert single["best"]["gpu"] == "A100-SXM-80GB"
    assert single["best"]["monthly_cost"] == _cost(SMALL, "A100-SXM-80GB") + _cost(BIG, "A100-SXM-80GB")
    assert single["saving"] == single["best"]["monthly_cost"] - fleet["monthly_cost"] > 0
    assert [f["gpu"] for f in single["fleets"]] == ["A100-SXM-80GB", "H100-SXM-80GB"]
    assert single["cards_unable"] == 1
    assert result["complete"] and result["unplanned"] == []


def test_plan_is_deterministic(engine, settings, clock):
    _market(engine, settings, clock)
    first = _plan(engine, settings, clock, [SMALL, BIG])
    assert _plan(engine, settings, clock, [SMALL, BIG], live=LiveOffers()) == first  # the table loaded anew


def test_an_infeasible_constraint_is_reported_per_workload_never_relaxed(engine, settings, clock):
    _market(engine, settings, clock)
    fastest = min(hours_per_run(BIG["job"], g) for g in ("A100-SXM-80GB", "H100-SXM-80GB"))
    rushed = {**BIG, "name": "rushed", "constraints": {"deadline_hours": fastest / 2}}
    elsewhere = {**SMALL, "name": "elsewhere", "constraints": {"providers": ["nobody"]}}
    result = _plan(engine, settings, clock, [SMALL, rushed, elsewhere])
    by_name = {w["name"]: w for w in result["workloads"]}
    assert by_name["small"]["status"] == "ok"
    assert by_name["rushed"]["status"] == "infeasible" and by_name["rushed"]["choice"] is None
    assert f"{fastest / 2:g} h deadline" in by_name["rushed"]["reason"]
    assert "fastest: " in by_name["rushed"]["reason"] and "H100-SXM-80GB" in by_name["rushed"]["reason"]
    assert by_name["elsewhere"]["status"] == "infeasible"
    assert "no live offer passes the constraints" in by_name["elsewhere"]["reason"]
    assert "providers nobody" in by_name["elsewhere"]["reason"]
    assert result["unplanned"] == ["rushed", "elsewhere"] and not result["complete"]
    # The fleet holds only what was planned.
    assert [c["workloads"] for c in result["fleet"]["cards"]] == [["small"]]


def test_a_power_cap_moves_the_small_job_to_the_cooler_card(engine, settings, clock):
    _market(engine, settings, clock)
    uncapped = _kw("RTX4090-24GB") + _kw("A100-SXM-80GB")  # 0.585 + 0.52 kW
    # Under 1.05 kW the 4090 must go; on the A100 both draw 1.04 kW; the H100 (0.91 kW) would not fit.
    result = _plan(engine, settings, clock, [SMALL, BIG], power_budget_kw=1.05)
    small, big = result["workloads"]
    assert small["choice"]["gpu"] == "A100-SXM-80GB" and big["choice"]["gpu"] == "A100-SXM-80GB"
    assert small["uncapped_choice"]["gpu"] == "RTX4090-24GB"
    power = result["power"]
    assert power["uncapped_kw"] == pytest.approx(uncapped)
    assert power["power_kw"] == pytest.approx(2 * _kw("A100-SXM-80GB"))
    assert power["within_budget"] is True and power["changed"] == ["small"]
    assert power["algorithm"].startswith("exact")
    assert power["cap_cost"] == _cost(SMALL, "A100-SXM-80GB") - _cost(SMALL, "RTX4090-24GB")
    assert result["fleet"]["monthly_cost"] == _cost(SMALL, "A100-SXM-80GB") + _cost(BIG, "A100-SXM-80GB")
    (card,) = result["fleet"]["cards"]  # one card type left: two A100s at peak
    assert (card["gpu"], card["gpus_at_peak"], card["workloads"]) == ("A100-SXM-80GB", 2, ["small", "big"])
    # A cap below any feasible fleet is said so; the plan is not silently changed.
    low = _plan(engine, settings, clock, [SMALL, BIG], power_budget_kw=0.5)
    assert low["power"]["within_budget"] is False and "over the 0.5 kW budget" in low["power"]["reason"]
    assert low["workloads"][0]["choice"]["gpu"] == "RTX4090-24GB"


def test_greedy_cap_agrees_with_exact_on_the_hand_mix(engine, settings, clock, monkeypatch):
    _market(engine, settings, clock)
    monkeypatch.setattr(planner_module, "EXACT_LIMIT", 0)
    result = _plan(engine, settings, clock, [SMALL, BIG], power_budget_kw=1.05)
    assert result["power"]["algorithm"].startswith("greedy")
    assert [w["choice"]["gpu"] for w in result["workloads"]] == ["A100-SXM-80GB", "A100-SXM-80GB"]


def test_overhead_factor_scales_power_and_density(engine, settings, clock):
    _market(engine, settings, clock)
    result = _plan(engine, settings, clock, [SMALL], overhead=1.5)
    assert result["power"]["power_kw"] == pytest.approx(_kw("RTX4090-24GB", overhead=1.5))
    row = next(r for r in result["power"]["per_card"] if r["gpu"] == "RTX4090-24GB")
    assert row["kw_per_gpu"] == pytest.approx(0.675)
    tps = result["workloads"][0]["choice"]["tokens_per_second"]
    assert row["workloads"]["small"] == pytest.approx(tps / 0.675, rel=1e-3)


def test_reserved_offers_bill_their_peak_nodes_all_month(engine, settings, clock):
    _market(engine, settings, clock, prices={"A100-SXM-80GB": "0.50"}, pricing=Pricing.reserved, reserved_term="1y")
    w = {**SMALL, "constraints": {"pricing": ["reserved"]}}
    choice = _plan(engine, settings, clock, [w])["workloads"][0]["choice"]
    assert choice["nodes_at_peak"] == 1 and choice["node_hours_per_month"] == HOURS_PER_MONTH
    assert choice["monthly_cost"] == money.cost(Decimal("0.50"), HOURS_PER_MONTH)
    # Reserved is opt-in: the default (the ranking's, on-demand and spot) finds nothing here and says so.
    default = _plan(engine, settings, clock, [SMALL])["workloads"][0]
    assert default["status"] == "infeasible" and "pricing on_demand" in default["reason"]


def test_peak_to_average_sizes_the_nodes(engine, settings, clock):
    _market(engine, settings, clock)
    hours = hours_per_run(SMALL["job"], "RTX4090-24GB")
    runs = math.ceil(HOURS_PER_MONTH / hours * 1.5)  # 1.5 nodes busy on average
    w = {**SMALL, "volume": {"runs_per_month": runs, "peak_to_average": 2}}
    choice = _plan(engine, settings, clock, [w])["workloads"][0]["choice"]
    assert choice["nodes_at_peak"] == math.ceil(runs * hours * 2 / HOURS_PER_MONTH)
    # On-demand: the runs used, each a whole run (never the peak nodes held all month).
    assert choice["monthly_cost"] == money.to_money(runs * _run(SMALL, "RTX4090-24GB"))


def test_serving_workloads_without_the_serving_estimate_are_unsupported(engine, settings, clock, monkeypatch):
    from tracker.plan import service

    _market(engine, settings, clock)
    monkeypatch.setattr(service, "serving_estimator", lambda: None)
    serve = {
        "name": "serve",
        "kind": "inference",
        "job": {"model": "llama-3.1-8b"},
        "volume": {"tokens_per_month": "1B"},
    }
    result = _plan(engine, settings, clock, [SMALL, serve])
    entry = result["workloads"][1]
    assert entry["status"] == "unsupported" and "serving" in entry["reason"] and entry["choice"] is None
    assert result["unplanned"] == ["serve"] and result["workloads"][0]["status"] == "ok"


SERVE: dict[str, Any] = {
    "name": "serve",
    "kind": "inference",
    "job": {"model": "llama-3.1-8b", "prompt_tokens": 500, "output_tokens": 200, "concurrency": 16},
    "volume": {"tokens_per_month": "2B", "peak_to_average": 3},
}


def _serving(job: dict, gpu: str, gpus: int = 1):
    from tracker.estimate import JobInput
    from tracker.estimate.serving import prepare_serving

    return prepare_serving(JobInput.model_validate({**job, "kind": "inference"}).serving_spec()).on(
        get_catalog().get(gpu), gpus
    )


def test_serving_replicas_cover_the_peak_and_are_held_all_month(engine, settings, clock):
    _market(engine, settings, clock)
    result = _plan(engine, settings, clock, [SERVE])
    entry = result["workloads"][0]
    assert entry["status"] == "ok", entry["reason"]
    peak = 2e9 / (HOURS_PER_MONTH * 3600) * 3
    costs = {}
    for gpu, price in PRICES.items():
        est = _serving(SERVE["job"], gpu)
        if est.fits:
            replicas = max(1, math.ceil(peak / est.tokens_per_second - 1e-9))
            costs[gpu] = (money.cost(Decimal(price), replicas * HOURS_PER_MONTH), replicas)
    best = min(costs, key=lambda g: (costs[g][0], Decimal(PRICES[g])))
    choice = entry["choice"]
    assert choice["gpu"] == best
    assert (choice["monthly_cost"], choice["nodes_at_peak"]) == costs[best]
    assert entry["demand"]["peak_tokens_per_second"] == pytest.approx(peak)


def test_serving_on_spot_holds_the_replicas_its_uptime_needs(engine, settings, clock):
    """A serving workload allowed spot is priced as the ranking prices it (tracker.costs.serving): each spot
    replica delivers its tokens/s × uptime, so the peak needs ceil(peak ÷ (tokens/s × uptime)) of them."""
    from tracker.costs.serving import offer_uptime

    est = _serving(SERVE["job"], "H100-SXM-80GB")
    # A load whose peak needs just under 100 always-up replicas: any uptime under 1 needs one more.
    tokens = int(99.99 * est.tokens_per_second * HOURS_PER_MONTH * 3600 / 3)
    big = {**SERVE, "volume": {"tokens_per_month": str(tokens), "peak_to_average": 3}}
    _market(engine, settings, clock, prices={"H100-SXM-80GB": "2.00"}, pricing=Pricing.spot)
    entry = _plan(engine, settings, clock, [{**big, "constraints": {"pricing": ["spot"]}}])["workloads"][0]
    assert entry["status"] == "ok", entry["reason"]
    share = offer_uptime(resolve("vastai", "spot"), est.prepared.weight_bytes(1) / 1e9, est.request_seconds)
    assert 0.9 < share < 1.0
    peak = tokens / (HOURS_PER_MONTH * 3600) * 3
    replicas = max(1, math.ceil(peak / (est.tokens_per_second * share) - 1e-9))
    assert replicas > math.ceil(peak / est.tokens_per_second - 1e-9)  # the load chosen so uptime shows
    choice = entry["choice"]
    assert choice["uptime"] == pytest.approx(share, abs=1e-4)
    assert (choice["monthly_cost"], choice["nodes_at_peak"]) == (
        money.cost(Decimal("2.00"), replicas * HOURS_PER_MONTH),
        replicas,
    )


def test_serving_latency_floor_is_reported_when_no_card_reaches_it(engine, settings, clock):
    _market(engine, settings, clock)
    fastest = max(_serving(SERVE["job"], g).per_user_tokens_per_second for g in PRICES)
    w = {**SERVE, "constraints": {"min_user_tokens_per_second": fastest * 2}}
    entry = _plan(engine, settings, clock, [w])["workloads"][0]
    assert entry["status"] == "infeasible" and entry["choice"] is None
    assert f"at least {fastest * 2:g} tokens/s per user" in entry["reason"]


def test_only_group_leaders_are_ordered_and_each_group_keeps_its_first_offer():
    # Issue #29: the plan orders, per workload, only the offers that can come first in their (card, GPUs)
    # group, not all 200,000; each group's first, the best and each card's first must be what the full
    # order gives, with ties, NaN and infinite costs and sold-out tiers among them.
    import numpy as np

    from tracker.market.rank import order_by
    from tracker.market.table import OfferTable
    from tracker.plan.planner import _group_leaders

    rng = np.random.default_rng(11)
    for trial in range(50):
        n, n_groups = int(rng.integers(1, 400)), int(rng.integers(1, 12))
        frame = OfferTable({"id": rng.permutation(n * 3)[:n].astype(np.int64)}, [])
        idx = np.arange(n)
        groups = rng.integers(0, n_groups, n).astype(np.intp)
        tiers = rng.integers(0, 2, n).astype(np.int8)
        cost = rng.choice([1.0, 2.0, 2.5, np.inf, np.nan], n)  # few values: many ties
        price = rng.choice([0.5, 1.0, 1.5], n)
        ok = np.flatnonzero(rng.random(n) < 0.8)
        full = order_by(frame, idx, ok, tiers, cost, price)
        short = order_by(frame, idx, _group_leaders(ok, groups, tiers, cost, n_groups), tiers, cost, price)

        def firsts(order: np.ndarray, groups: np.ndarray = groups) -> dict[int, int]:
            out: dict[int, int] = {}
            for position in order.tolist():
                out.setdefault(int(groups[position]), position)
            return out

        assert firsts(short) == firsts(full), trial
        if len(full):
            assert short[0] == full[0]
        assert len(short) <= len(full)

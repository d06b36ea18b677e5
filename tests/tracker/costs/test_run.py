"""The whole cost of a run, component by component, against a computation done by hand."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import numpy as np
import pytest

from tracker.costs import COMPONENTS, RunPlan, resolve, run_cost, vector_totals
from tracker.costs.terms import NUMERIC_TERMS

# 36 GB to download at 800 Mbit/s (100 MB/s) is 360 s of setup; 5 checkpoints of 1.8 GB at 1 GB/s add
# 9 s; 2.5 h of training. Work = 0.1 + 2.5 + 0.0025 = 2.6025 h = 9,369 s. Disk at the peak:
# 36 GB + 2 × 1.8 GB kept + 0.4 GB output = 40 GB.
PLAN = RunPlan(
    dataset_gb=10,
    model_gb=16,
    image_gb=10,
    checkpoint_gb=1.8,
    checkpoints_kept=2,
    output_gb=0.4,
    checkpoint_interval_h=0.5,
)
TRAIN_H = 2.5


def test_per_second_offer_matches_the_hand_computation():
    # RunPod's sheet: per-second billing, disk $0.10/GB-month, no transfer fees; bandwidth from the API.
    terms = resolve("runpod", "on_demand", {"download_mbps": Decimal(800)})
    cost = run_cost(Decimal("2.00"), TRAIN_H, terms, PLAN)
    assert cost.components == {
        "gpu_time": Decimal("5.205000"),  # 2.00 × 2.6025
        "rounding": Decimal("0.000000"),  # 9,369 s billed as 9,369 s
        "storage": Decimal("0.014260"),  # 40 GB × 0.10 × 2.6025 h / 730 h = 0.0142602739...
        "ingress": Decimal("0.000000"),
        "egress": Decimal("0.000000"),
        "interruption": Decimal("0.000000"),
    }
    assert cost.total == Decimal("5.219260")  # 5.205 + 0.0142602739...
    assert cost.known["rounding"] == "sheet" and cost.known["gpu_time"] == "api"
    assert cost.known["storage"] == "default"  # included disk and the month are not on RunPod's sheet
    assert cost.spot is None


def test_hourly_rounded_offer_with_paid_egress_matches_the_hand_computation():
    # Hourly billing stated by the API; AWS's sheet for the rest: egress $0.09/GB, gp3 disk $0.08/GB-month.
    terms = resolve("aws", "on_demand", {"billing_increment_s": Decimal(3600), "download_mbps": Decimal(800)})
    cost = run_cost(Decimal("1.80"), TRAIN_H, terms, PLAN)
    assert cost.components == {
        "gpu_time": Decimal("4.684500"),  # 1.80 × 2.6025
        "rounding": Decimal("0.715500"),  # 9,369 s billed as 3 h: 1.80 × 0.3975
        "storage": Decimal("0.011408"),  # 40 × 0.08 × 2.6025 / 730 = 0.0114082191...
        "ingress": Decimal("0.000000"),
        "egress": Decimal("0.036000"),  # 0.4 GB × 0.09
        "interruption": Decimal("0.000000"),
    }
    assert cost.total == Decimal("5.447408")  # 4.6845 + 0.7155 + 0.0114082191... + 0.036
    # The increment is the API's, the 60 s minimum the sheet's: the component is as known as its weaker term.
    assert cost.known["rounding"] == "sheet" and cost.terms["billing_increment_s"] == "api"
    assert cost.known["egress"] == "sheet"


def test_the_cheaper_gpu_hour_loses_on_the_whole_run():
    per_second = run_cost(Decimal("2.00"), TRAIN_H, resolve("runpod", "on_demand", {"download_mbps": 800}), PLAN)
    hourly = run_cost(
        Decimal("1.80"), TRAIN_H, resolve("aws", "on_demand", {"billing_increment_s": 3600, "download_mbps": 800}), PLAN
    )
    assert Decimal("1.80") * Decimal("2.5") < Decimal("2.00") * Decimal("2.5")  # GPU time alone: hourly wins
    assert per_second.total < hourly.total  # the whole run: the per-second offer wins
    # ...and the breakdown says why: rounding and egress outweigh the cheaper GPU time.
    gpu_saving = per_second.components["gpu_time"] - hourly.components["gpu_time"]
    assert hourly.components["rounding"] + hourly.components["egress"] > gpu_saving


def test_included_disk_is_not_charged_and_a_minimum_is_billed():
    terms = resolve("aws", "on_demand", {"included_disk_gb": 100, "billing_minimum_s": 36000})
    cost = run_cost(Decimal("1"), 1.0, terms, replace(PLAN, setup_h=0.0))
    assert cost.components["storage"] == 0
    assert cost.components["rounding"] == Decimal("8.999000")  # 10 h billed; 1 h + 2 saves of 1.8 s run


def _columns(*terms):
    return {name: np.array([float(t.number(name)) for t in terms]) for name in NUMERIC_TERMS}


@pytest.mark.parametrize("pricing", ["on_demand", "spot"])
def test_the_vectorised_total_orders_like_the_exact_one(pricing):
    terms = [
        resolve("runpod", pricing, {"download_mbps": 800}),
        resolve("aws", pricing, {"billing_increment_s": 3600}),
        resolve("vastai", pricing, {"ingress_usd_per_gb": "0.02", "egress_usd_per_gb": "0.05"}, reliability=0.97),
        resolve("nowhere", pricing),
    ]
    prices, hours = np.array([2.0, 1.8, 1.5, 1.7]), np.array([2.5, 2.5, 7.0, 0.4])
    fast = vector_totals(prices, hours, _columns(*terms), PLAN)
    exact = [
        float(run_cost(Decimal(repr(float(p))), float(h), t, PLAN).total)
        for p, h, t in zip(prices, hours, terms, strict=True)
    ]
    assert fast == pytest.approx(exact, abs=2e-6)


def test_components_are_the_listed_ones():
    cost = run_cost(Decimal("2"), 1.0, resolve("vastai", "spot"), PLAN)
    assert tuple(cost.components) == COMPONENTS
    assert cost.total == pytest.approx(sum(cost.components.values()), abs=Decimal("0.000006"))

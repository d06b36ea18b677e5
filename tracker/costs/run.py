"""What one run costs on one offer, by component, exactly; and the same arithmetic vectorised for ranking.

Components (USD, each rounded once by tracker.money from its exact value; the total is the exact sum,
rounded once):
* gpu_time: $/hour × (setup + training + checkpoint writes);
* rounding: what the billing increment and minimum add on top of the wall time;
* storage: disk beyond what the price includes, $/GB-month × the wall time over the provider's month;
* ingress / egress: the downloads (image, model, data) and the upload of the result, $/GB;
* interruption: on spot, the expected lost work and restarts at $/hour, plus the downloads of each restart.
The rounding is applied to the expected wall time as one bill (a spot run restarted on a new machine
opens a new bill each time; with per-second or per-minute billing that is cents).
`vector_totals` is the float twin used only to order thousands of offers; rows shown use `run_cost`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import TYPE_CHECKING, Any

import numpy as np

from tracker import money
from tracker.costs import spot
from tracker.costs.plan import WRITE_GB_PER_S, RunPlan
from tracker.costs.terms import SOURCES, CostTerms, Source

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["COMPONENTS", "RunCost", "run_cost", "vector_totals"]

COMPONENTS = ("gpu_time", "rounding", "storage", "ingress", "egress", "interruption")
# The terms each component rests on: it is as known as the least known of them.
_COMPONENT_TERMS = {
    "gpu_time": ("download_mbps",),
    "rounding": ("billing_increment_s", "billing_minimum_s"),
    "storage": ("included_disk_gb", "disk_usd_per_gb_month", "hours_per_month"),
    "ingress": ("ingress_usd_per_gb",),
    "egress": ("egress_usd_per_gb",),
    "interruption": ("interruptions_per_hour",),
}
_H = Decimal(3600)
_PRECISION = 60
# Spot cost range: from no interruption (the best case) to the 95th percentile of the number of
# interruptions, at least one (when no interruption is 95% likely, the expectation still counts the
# chance of one, and a range ending below it would read as a promise).
RANGE_HIGH_QUANTILE = 0.95


def _d(x: float) -> Decimal:
    return Decimal(repr(float(x)))


@dataclass(frozen=True, slots=True)
class RunCost:
    components: dict[str, Decimal]
    total: Decimal
    hours: dict[str, float]
    known: dict[str, Source]
    terms: dict[str, Source]
    spot: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "components": self.components,
            "hours": self.hours,
            "known": self.known,
            "terms": self.terms,
            "spot": self.spot,
        }


@dataclass(frozen=True, slots=True)
class _Shape:
    """The run's times in hours (exact), before prices."""

    setup: Decimal
    work: Decimal
    loss: Decimal  # hours per interruption
    mu: Decimal  # expected interruptions


def _shape(train_hours: float, terms: CostTerms, plan: RunPlan) -> _Shape:
    mbps = terms.number("download_mbps")
    if plan.setup_h is not None:
        setup = _d(plan.setup_h)
    else:
        setup = _d(plan.download_gb) * 8000 / mbps / _H if mbps > 0 else Decimal(0)
    train = _d(train_hours)
    interval = _d(plan.checkpoint_interval_h)
    saves = (train / interval).to_integral_value(rounding="ROUND_FLOOR")
    work = setup + train + saves * _d(plan.checkpoint_gb) / _d(WRITE_GB_PER_S) / _H
    restart = _d(plan.restart_h) if plan.restart_h is not None else setup
    loss = min(interval, train) / 2 + restart
    return _Shape(setup, work, loss, terms.number("interruptions_per_hour") * work)


def _priced(price: Decimal, shape: _Shape, n: Decimal, terms: CostTerms, plan: RunPlan) -> dict[str, Decimal]:
    """Exact components for `n` interruptions (the expected number, or a percentile's)."""
    lost = n * shape.loss
    wall = shape.work + lost
    increment = max(terms.number("billing_increment_s"), Decimal(1))
    billed_s = max(
        terms.number("billing_minimum_s"), (wall * _H / increment).to_integral_value(ROUND_CEILING) * increment
    )
    extra_disk = max(Decimal(0), _d(plan.disk_gb) - terms.number("included_disk_gb"))
    ingress_rate = terms.number("ingress_usd_per_gb")
    return {
        "gpu_time": price * shape.work,
        "rounding": price * (billed_s / _H - wall),
        "storage": extra_disk * terms.number("disk_usd_per_gb_month") * wall / terms.number("hours_per_month"),
        "ingress": _d(plan.download_gb) * ingress_rate,
        "egress": _d(plan.output_gb) * terms.number("egress_usd_per_gb"),
        "interruption": price * lost + n * _d(plan.download_gb) * ingress_rate,
    }


def _weakest(sources: list[Source]) -> Source:
    return max(sources, key=SOURCES.index)


def run_cost(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> RunCost:
    """The whole cost of the run on an offer priced `price_per_hour` (all its GPUs) that trains for
    `train_hours`, under the offer's `terms`."""
    # Exact arithmetic wider than the default 28 digits: the largest job the schema admits (1e15 tokens,
    # 100 TB of checkpoints kept for years) must still round by the money rule, not raise.
    with localcontext(prec=_PRECISION):
        return _run_cost(price_per_hour, train_hours, terms, plan)


def run_total(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> Decimal:
    """`run_cost(...).total` alone: the expected cost's components summed and rounded by the money rule,
    without the spot range, sources and hours a full answer carries (a ranking's band bounds need only the
    total: two of them per shown row, each a third of run_cost's work on spot)."""
    with localcontext(prec=_PRECISION):
        price = Decimal(price_per_hour)
        shape = _shape(train_hours, terms, plan)
        return money.to_money(sum(_priced(price, shape, shape.mu, terms, plan).values(), Decimal(0)))


def _run_cost(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> RunCost:
    price = Decimal(price_per_hour)
    shape = _shape(train_hours, terms, plan)
    exact = _priced(price, shape, shape.mu, terms, plan)
    known = {c: _weakest([terms.sources[t] for t in names]) for c, names in _COMPONENT_TERMS.items()}
    if plan.setup_h is not None:
        known["gpu_time"] = "api"  # the setup time was given: nothing about the offer is assumed
    wall = float(shape.work + shape.mu * shape.loss)
    hours = {"setup": round(float(shape.setup), 4), "work": round(float(shape.work), 4), "wall": round(wall, 4)}
    spot_info = None
    if shape.mu > 0:
        mu, work, loss = float(shape.mu), float(shape.work), float(shape.loss)
        low_n, high_n = 0, max(1, spot.poisson_quantile(RANGE_HIGH_QUANTILE, mu))
        low, high = (sum(_priced(price, shape, Decimal(n), terms, plan).values(), Decimal(0)) for n in (low_n, high_n))
        rate = float(terms.number("interruptions_per_hour"))
        spot_info = {
            "interruptions_per_hour": rate,
            "expected_interruptions": round(mu, 4),
            "hours_per_interruption": round(loss, 4),
            "p_no_interruption": round(math.exp(-mu), 4),
            "expected_wall_hours": round(wall, 4),
            "range": {"low": money.to_money(low), "high": money.to_money(high), "interruptions": [low_n, high_n]},
            "p_within_deadline": None
            if plan.deadline_h is None
            else round(spot.p_within(plan.deadline_h, work, rate, loss), 4),
        }
    return RunCost(
        components={c: money.to_money(exact[c]) for c in COMPONENTS},
        total=money.to_money(sum(exact.values(), Decimal(0))),
        hours=hours,
        known=known,
        terms=dict(terms.sources),
        spot=spot_info,
    )


def vector_totals(
    price: npt.NDArray[np.float64],
    train_h: npt.NDArray[np.float64],
    cols: dict[str, npt.NDArray[np.float64]],
    plan: RunPlan,
) -> npt.NDArray[np.float64]:
    """`run_cost(...).total` for many offers at once, in floats (ordering only). `cols` holds a float
    array per numeric term (tracker.costs.terms.NUMERIC_TERMS), aligned with `price`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mbps = cols["download_mbps"]
        if plan.setup_h is not None:
            setup = np.full_like(price, plan.setup_h)
        else:
            setup = np.where(mbps > 0, plan.download_gb * 8000.0 / mbps / 3600.0, 0.0)
        interval = plan.checkpoint_interval_h
        saves = np.floor(train_h / interval)
        work = setup + train_h + saves * (plan.checkpoint_gb / WRITE_GB_PER_S / 3600.0)
        restart = setup if plan.restart_h is None else plan.restart_h
        loss = np.minimum(interval, train_h) / 2.0 + restart
        mu = cols["interruptions_per_hour"] * work
        wall = work + mu * loss
        increment = np.maximum(cols["billing_increment_s"], 1.0)
        billed_h = np.maximum(cols["billing_minimum_s"], np.ceil(wall * 3600.0 / increment - 1e-9) * increment) / 3600.0
        extra_disk = np.maximum(0.0, plan.disk_gb - cols["included_disk_gb"])
        storage = extra_disk * cols["disk_usd_per_gb_month"] * wall / cols["hours_per_month"]
        ingress = plan.download_gb * cols["ingress_usd_per_gb"] * (1.0 + mu)
        egress = plan.output_gb * cols["egress_usd_per_gb"]
        total: npt.NDArray[np.float64] = price * billed_h + storage + ingress + egress
    return total

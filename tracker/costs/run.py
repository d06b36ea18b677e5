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
from decimal import ROUND_CEILING, Context, Decimal, localcontext
from functools import lru_cache
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


_CONTEXT = Context(prec=_PRECISION)
_ZERO, _ONE = Decimal(0), Decimal(1)
_WRITE = _d(WRITE_GB_PER_S)


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
class _Exact:
    """A plan's figures as exact decimals (`_d` of each float), made once per plan: a ranking prices
    every shown row, and each row's band ends, with the same plan."""

    download_gb: Decimal
    disk_gb: Decimal
    output_gb: Decimal
    checkpoint_gb: Decimal
    interval_h: Decimal
    setup_h: Decimal | None
    restart_h: Decimal | None


@lru_cache(maxsize=64)
def _exact(plan: RunPlan) -> _Exact:
    return _Exact(
        download_gb=_d(plan.download_gb),
        disk_gb=_d(plan.disk_gb),
        output_gb=_d(plan.output_gb),
        checkpoint_gb=_d(plan.checkpoint_gb),
        interval_h=_d(plan.checkpoint_interval_h),
        setup_h=None if plan.setup_h is None else _d(plan.setup_h),
        restart_h=None if plan.restart_h is None else _d(plan.restart_h),
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """The run's times in hours (exact), before prices."""

    setup: Decimal
    work: Decimal
    loss: Decimal  # hours per interruption
    mu: Decimal  # expected interruptions


def _shape(train_hours: float, terms: CostTerms, plan: _Exact) -> _Shape:
    mbps = terms.number("download_mbps")
    setup = plan.setup_h
    if setup is None:
        setup = plan.download_gb * 8000 / mbps / _H if mbps > 0 else _ZERO
    train = _d(train_hours)
    interval = plan.interval_h
    saves = (train / interval).to_integral_value(rounding="ROUND_FLOOR")
    work = setup + train + saves * plan.checkpoint_gb / _WRITE / _H
    restart = plan.restart_h if plan.restart_h is not None else setup
    loss = min(interval, train) / 2 + restart
    return _Shape(setup, work, loss, terms.number("interruptions_per_hour") * work)


def _priced(
    price: Decimal, shape: _Shape, counts: tuple[Decimal, ...], terms: CostTerms, plan: _Exact
) -> list[dict[str, Decimal]]:
    """Exact components for each number of interruptions in `counts` (the expected number, or a
    percentile's). What does not depend on that number is computed once, in the same order of operations
    as for a single count, so every component is the same decimal whichever counts are asked together."""
    increment = max(terms.number("billing_increment_s"), _ONE)
    minimum = terms.number("billing_minimum_s")
    extra_disk = max(_ZERO, plan.disk_gb - terms.number("included_disk_gb"))
    disk_rate = extra_disk * terms.number("disk_usd_per_gb_month")
    month = terms.number("hours_per_month")
    ingress_rate = terms.number("ingress_usd_per_gb")
    ingress = plan.download_gb * ingress_rate
    egress = plan.output_gb * terms.number("egress_usd_per_gb")
    gpu_time = price * shape.work
    out = []
    for n in counts:
        lost = n * shape.loss
        wall = shape.work + lost
        billed_s = max(minimum, (wall * _H / increment).to_integral_value(ROUND_CEILING) * increment)
        out.append(
            {
                "gpu_time": gpu_time,
                "rounding": price * (billed_s / _H - wall),
                "storage": disk_rate * wall / month,
                "ingress": ingress,
                "egress": egress,
                "interruption": price * lost + n * plan.download_gb * ingress_rate,
            }
        )
    return out


_TERMS = tuple(dict.fromkeys(t for names in _COMPONENT_TERMS.values() for t in names))  # each term once


@lru_cache(maxsize=256)
def _known(sources: tuple[Source, ...], setup_given: bool) -> dict[str, Source]:
    """Each component's source, the least known of its terms' (`sources` in `_TERMS` order)."""
    by_term = dict(zip(_TERMS, sources, strict=True))
    known = {c: max((by_term[t] for t in names), key=SOURCES.index) for c, names in _COMPONENT_TERMS.items()}
    if setup_given:
        known["gpu_time"] = "api"  # the setup time was given: nothing about the offer is assumed
    return known


def run_cost(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> RunCost:
    """The whole cost of the run on an offer priced `price_per_hour` (all its GPUs) that trains for
    `train_hours`, under the offer's `terms`."""
    # Exact arithmetic wider than the default 28 digits: the largest job the schema admits (1e15 tokens,
    # 100 TB of checkpoints kept for years) must still round by the money rule, not raise.
    with localcontext(_CONTEXT):
        return _run_cost(price_per_hour, train_hours, terms, plan)


def run_total(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> Decimal:
    """`run_cost(...).total` alone: the expected cost's components summed and rounded by the money rule,
    without the spot range, sources and hours a full answer carries (a ranking's band bounds need only the
    total: two of them per shown row, each a third of run_cost's work on spot)."""
    with localcontext(_CONTEXT):
        price = Decimal(price_per_hour)
        exact = _exact(plan)
        shape = _shape(train_hours, terms, exact)
        return money.to_money(sum(_priced(price, shape, (shape.mu,), terms, exact)[0].values(), _ZERO))


def _run_cost(price_per_hour: Decimal, train_hours: float, terms: CostTerms, plan: RunPlan) -> RunCost:
    price = Decimal(price_per_hour)
    exact_plan = _exact(plan)
    shape = _shape(train_hours, terms, exact_plan)
    known = dict(_known(tuple(terms.sources[t] for t in _TERMS), plan.setup_h is not None))
    wall = float(shape.work + shape.mu * shape.loss)
    hours = {"setup": round(float(shape.setup), 4), "work": round(float(shape.work), 4), "wall": round(wall, 4)}
    spot_info = None
    if shape.mu > 0:
        mu, work, loss = float(shape.mu), float(shape.work), float(shape.loss)
        low_n, high_n = 0, max(1, spot.poisson_quantile(RANGE_HIGH_QUANTILE, mu))
        exact, low, high = _priced(price, shape, (shape.mu, Decimal(low_n), Decimal(high_n)), terms, exact_plan)
        rate = float(terms.number("interruptions_per_hour"))
        spot_info = {
            "interruptions_per_hour": rate,
            "expected_interruptions": round(mu, 4),
            "hours_per_interruption": round(loss, 4),
            "p_no_interruption": round(math.exp(-mu), 4),
            "expected_wall_hours": round(wall, 4),
            "range": {
                "low": money.to_money(sum(low.values(), _ZERO)),
                "high": money.to_money(sum(high.values(), _ZERO)),
                "interruptions": [low_n, high_n],
            },
            "p_within_deadline": None
            if plan.deadline_h is None
            else round(spot.p_within(plan.deadline_h, work, rate, loss), 4),
        }
    else:
        (exact,) = _priced(price, shape, (shape.mu,), terms, exact_plan)
    return RunCost(
        components={c: money.to_money(exact[c]) for c in COMPONENTS},
        total=money.to_money(sum(exact.values(), _ZERO)),
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

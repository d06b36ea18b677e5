"""The fleet plan: each workload on the live offer that runs its month cheapest, and the fleet that makes.

For every workload the planner prices a month of it on every live offer that passes its constraints,
vectorised like the ranking (`tracker.market.rank`): the estimate depends only on (card, GPUs per node),
so each such combination is estimated once and the per-offer arithmetic is numpy over the offers.

A month of a workload on one offer (one node type of one provider):

* training (fine-tune, pretrain): `runs` runs of `hours` each are `runs × hours` node-hours, and cost
  `runs ×` the whole run's cost the ranking orders by (tracker.costs: GPU time with setup and
  checkpoint writes, the billing increment and minimum, disk, data transfer and, on spot, the expected
  interruptions; the job's extras from `tracker.costs.plan_for`, each offer's terms from the live
  terms `tracker.market.service.cost_terms`), so for one run the plan and `cheapest` price alike;
* batch inference: generated tokens ÷ the node's tokens/s are the node-hours;
* inference (online serving): the peak demand needs ceil(peak tokens/s ÷ node tokens/s) replicas, held
  all month (a serving fleet is standing capacity);
* nodes at peak = max(1, ceil(node-hours × peak_to_average ÷ hours in a month));
* billed node-hours: what is used on on-demand and spot; on reserved pricing the nodes at peak are paid for
  the whole month, used or not. Monthly cost = billed node-hours × the offer's $/hour (a training
  workload on on-demand or spot: the whole runs' cost above).

A placement is feasible when the job fits the node's memory and meets the workload's deadline per run
(training) or its per-user tokens/s and time to first token (serving). Constraints are never relaxed:
a workload with no feasible offer is reported infeasible with the constraint that excluded the last
offers. Offers count under the ranking's default pricing (`tracker.market.rank.default_pricing`:
on-demand and spot for a run, on-demand for serving) unless the workload names its pricing, and are
ordered as the ranking orders them (`tracker.market.rank.order_by`): an offer the provider says is sold
out after every other, then the monthly cost, $/hour and offer id (deterministic). The first wins; the
runner-up is the cheapest offer of another card, with why it lost.

The fleet sums the chosen placements per card: GPUs at peak (peaks are assumed to coincide, the safe
side for a facility), GPU-hours and cost per month, power. Beside it: for every card type, the same mix
on that card alone (each workload on that card's cheapest feasible offer), the best of them, and what
the mixed fleet saves against it.

Power: a card draws its catalog TDP × the overhead factor (PUE-like); a fleet draws that per GPU at peak.
With a power budget, the plan picks per workload among its cheapest placement per (card, GPUs per node)
so that the fleet fits under the cap at the least cost: exactly (branch and bound) when the mix has few
choices, else greedily, taking each step the change with the least extra $ per kW saved, then undoing
any change the cap no longer needs. The answer says which algorithm ran and what the cap costs.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from providers.contract import Pricing
from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.costs import RunPlan, TermColumns, plan_for, run_total, vector_totals
from tracker.costs import serving as spot_serving
from tracker.estimate import EstimateError, prepare
from tracker.estimate.serving.model import per_user_rate
from tracker.market.live import epoch_us
from tracker.market.rank import RankFilters, filter_mask, order_by, order_tiers
from tracker.market.table import OfferTable
from tracker.plan.mix import HOURS_PER_MONTH, TRAINING_KINDS, Workload, WorkloadMix
from tracker.plan.serving import UNAVAILABLE, ServingEstimator

if TYPE_CHECKING:
    from datetime import datetime

    import numpy.typing as npt

    Array = npt.NDArray[Any]

# Exact search of the capped fleet while the product of choices stays under this; greedy beyond it.
EXACT_LIMIT = 200_000
MAX_BY_CARD = 12  # cards listed per workload (cheapest first)
_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class PlanOptions:
    power_budget_kw: float | None = None
    overhead_factor: float = 1.3
    hours_per_month: float = HOURS_PER_MONTH


@dataclass
class _Combo:
    """One (card, GPUs per node) of a workload: what the estimate says and what a month needs."""

    gpu_id: str
    gpus: int
    fits: bool
    hours_per_run: float | None  # training
    tokens_per_second: float  # the whole node
    per_user_tps: float | None = None
    ttft_s: float | None = None
    vram_gb: float | None = None
    usage_node_hours: float = math.inf
    nodes_at_peak: int = 0
    meets: bool = False  # deadline / latency
    tdp_w: int | None = None
    reason: str | None = None  # why the job does not fit, where the estimate says
    weights_gb: float = 0.0  # serving: the model a replacement machine downloads (tracker.costs.serving)
    request_s: float = math.nan  # serving: one request's life on a replica
    uptime: float = 1.0  # serving on spot: the share of hours one offer's replicas serve


@dataclass
class _Option:
    """A feasible placement: one offer with the month it gives the workload."""

    row: int  # offer row in the frame
    combo: _Combo
    price_per_hour: Decimal
    pricing: str
    billed_node_hours: float
    cost_f: float  # the month's cost in floats: orders the placements and the capped search
    power_kw: float | None
    cost: Decimal = Decimal(0)  # the month's cost by the money rule
    cost_per_run: Decimal | None = None  # training: one whole run, as the ranking prices it
    fields: dict[str, Any] = field(default_factory=dict)
    reserved_term: str | None = None  # the commitment of a reserved offer: its price is that term's only

    @property
    def gpus_at_peak(self) -> int:
        return self.combo.nodes_at_peak * self.combo.gpus


@dataclass
class _Evaluated:
    workload: Workload
    status: str  # ok | infeasible | unsupported | invalid
    reason: str | None = None
    considered: int = 0
    fitting: int = 0
    feasible: int = 0
    best: _Option | None = None
    runner_up: _Option | None = None
    by_card: dict[str, _Option] = field(default_factory=dict)  # cheapest per card, cheapest card first
    choices: list[_Option] = field(default_factory=list)  # cheapest per (card, GPUs/node), Pareto in (cost, kW)
    demand: dict[str, Any] = field(default_factory=dict)
    run_plan: RunPlan | None = None  # training: the run's extras (data, checkpoints, setup)
    runs: float = 0.0  # training: runs a month


# A workload's placements as the plan over time reuses them (`tracker.plan.service`).
Evaluation = _Evaluated


def _filters(w: Workload) -> RankFilters:
    c = w.constraints
    # The mix validated its constraints already (tracker.plan.mix.Constraints): taken as they are, so a
    # provider named in capitals matches nothing, as it always did, instead of failing the whole plan.
    return RankFilters.model_construct(
        providers=c.providers,
        pricing=[Pricing(p) for p in c.allowed_pricing(serving=w.kind not in TRAINING_KINDS)],
        regions=c.regions,
        min_gpus=None if c.min_gpus is None else Decimal(c.min_gpus),
        max_gpus=None if c.max_gpus is None else Decimal(c.max_gpus),
        include_reference=c.include_reference,
        include_stale=c.include_stale,
        available_only=c.available_now,
        interconnect=c.interconnect,
        min_nodes=c.min_nodes,
    )


def _whole_nodes(frame: OfferTable) -> Array:
    """Offers of whole GPUs of a known card with a price: a fleet is counted in GPUs, not MIG slices."""
    gpus = frame["gpu_count_f"]
    known = np.fromiter((g is not None for g in frame["gpu_id"]), dtype=bool, count=len(frame))
    return np.asarray(known & (gpus >= 1) & (gpus == np.floor(gpus)) & np.isfinite(frame["price_per_hour_f"]))


def _peak_nodes(node_hours: float, peak_to_average: float, hours: float) -> int:
    if not math.isfinite(node_hours):
        return 0
    # A tiny epsilon keeps 730.5 h × 1.0 / 730.5 h at one node, not two, through float rounding.
    return max(1, math.ceil(node_hours * peak_to_average / hours - 1e-9))


class _Planner:
    def __init__(
        self,
        frame: OfferTable,
        fresh: Array,
        options: PlanOptions,
        serving: ServingEstimator | None,
        terms: TermColumns | None,
        stale: Collection[str] = (),
    ) -> None:
        self.frame, self.options, self.serving, self.terms = frame, options, serving, terms
        self.stale = frozenset(stale)
        self.base = fresh & _whole_nodes(frame) if len(frame) else np.zeros(0, dtype=bool)
        self.catalog = get_catalog()

    # --- one workload -------------------------------------------------------------------------------

    def evaluate(self, w: Workload) -> _Evaluated:
        ev = _Evaluated(w, "ok")
        if w.kind not in TRAINING_KINDS and self.serving is None:
            ev.status, ev.reason = "unsupported", UNAVAILABLE
            return ev
        try:
            place = self._placer(w, ev)
        except EstimateError as exc:
            ev.status, ev.reason = "invalid", exc.message
            return ev
        serving = w.kind not in TRAINING_KINDS
        if len(self.frame):
            idx = np.flatnonzero(filter_mask(self.frame, self.base, _filters(w), serving=serving, stale=self.stale))
        else:
            idx = np.zeros(0, int)
        ev.considered = len(idx)
        if not len(idx):
            ev.status, ev.reason = "infeasible", f"no live offer passes the constraints ({_describe(w)})"
            return ev
        cards = self.frame["gpu_code"][idx]
        # The (card, GPUs) combinations are the table's, built once per table; only those present here count.
        all_codes, first_rows = self.frame.derived("plan:combos", _table_combos)
        present = np.bincount(all_codes[idx], minlength=len(first_rows)) > 0
        compact = np.cumsum(present) - 1
        inverse = compact[all_codes[idx]]
        gpu_ids, counts = self.frame["gpu_id"], self.frame["gpu_count_f"]
        combos = [place(str(gpu_ids[r]), int(counts[r])) for r in first_rows[present].tolist()]
        fits = np.array([c.fits for c in combos], dtype=bool)[inverse]
        meets = np.array([c.fits and c.meets for c in combos], dtype=bool)[inverse]
        ev.fitting, ev.feasible = int(fits.sum()), int(meets.sum())
        if not ev.feasible:
            ev.status, ev.reason = "infeasible", self._why_none(w, combos, ev)
            return ev
        usage = np.array([c.usage_node_hours for c in combos])[inverse]
        peak = np.array([c.nodes_at_peak for c in combos], dtype=float)[inverse]
        share = self._uptime(w, idx, combos, inverse)
        if share is not None:  # spot replicas serve only part of their hours: more of them carry the load
            usage, peak = self._at_uptime(w, ev, combos, inverse, share, usage, peak)
        reserved = self.frame["pricing"][idx] == "reserved"
        billed = np.where(reserved, peak * self.options.hours_per_month, usage)
        price = self.frame["price_per_hour_f"][idx]
        month = price * billed
        whole = ev.run_plan is not None and self.terms is not None
        if whole:  # the whole runs, priced by the ranking's arithmetic (a reserved node bills the month)
            assert ev.run_plan is not None and self.terms is not None
            hours_per_run = np.array([c.hours_per_run or math.nan for c in combos])[inverse]
            cols = {name: values[idx] for name, values in self.terms.values.items()}
            month = np.where(reserved, month, ev.runs * vector_totals(price, hours_per_run, cols, ev.run_plan))
        cost = np.where(meets, month, np.inf)
        ok = np.flatnonzero(meets)
        tiers = order_tiers(self.frame, idx, meets)
        # Only what can come first in its (card, GPUs) matters below (the best, each card's and each
        # combination's cheapest): those are ordered, not every feasible offer (a sort of 200,000 per workload).
        order = order_by(self.frame, idx, _group_leaders(ok, inverse, tiers, cost, len(combos)), tiers, cost, price)

        def option(pos: int) -> _Option:
            row = int(idx[pos])
            c = combos[int(inverse[pos])]
            if share is not None and share[pos] < 1.0:  # this offer's own replicas, at its uptime
                nodes, used = int(peak[pos]), float(usage[pos])
                c = replace(c, nodes_at_peak=nodes, usage_node_hours=used, uptime=float(share[pos]))
            kw = None if c.tdp_w is None else c.nodes_at_peak * c.gpus * c.tdp_w * self.options.overhead_factor / 1000
            price_h = Decimal(self.frame["price_per_hour"][row])
            o = _Option(
                row,
                c,
                price_h,
                str(self.frame["pricing"][row]),
                float(billed[pos]),
                float(cost[pos]),
                kw,
                reserved_term=_maybe(self.frame["reserved_term"][row]) if reserved[pos] else None,
            )
            o.cost = money.cost(price_h, o.billed_node_hours)
            if c.hours_per_run is not None:
                o.cost_per_run = money.cost(price_h, c.hours_per_run)
                if whole and not reserved[pos]:
                    assert ev.run_plan is not None and self.terms is not None
                    o.cost_per_run = run_total(price_h, c.hours_per_run, self.terms.terms_at(row), ev.run_plan)
                    o.cost = money.to_money(o.cost_per_run * Decimal(repr(float(ev.runs))))
            return o

        ev.best = option(int(order[0]))
        # The cheapest offer of each card, and of each (card, GPUs per node): first in `order` per group.
        _, card_first = np.unique(cards[order], return_index=True)
        ev.by_card = {o.combo.gpu_id: o for o in (option(int(order[p])) for p in np.sort(card_first))}
        _, combo_first = np.unique(inverse[order], return_index=True)
        ev.choices = _pareto([option(int(order[p])) for p in np.sort(combo_first)])
        others = [o for gid, o in ev.by_card.items() if gid != ev.best.combo.gpu_id]
        if not others and len(ok) > 1:  # one card only: the runner-up is the second offer of the whole order
            order = order_by(self.frame, idx, ok, tiers, cost, price)
        ev.runner_up = others[0] if others else (option(int(order[1])) if len(order) > 1 else None)
        return ev

    def _uptime(
        self, w: Workload, idx: npt.NDArray[np.intp], combos: Sequence[_Combo], inverse: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.float64] | None:
        """Each offer's uptime for a serving workload, as the ranking prices spot (tracker.costs.serving);
        None where no offer can be interrupted (training prices interruptions in its whole-run cost)."""
        if w.kind in TRAINING_KINDS or self.terms is None:
            return None
        rate = self.terms.values["interruptions_per_hour"][idx]
        if not (rate > 0).any():
            return None
        request_s = np.array([c.request_s for c in combos])[inverse]
        weights_gb = combos[0].weights_gb  # one model per workload
        down = spot_serving.down_hours(weights_gb, self.terms.values["download_mbps"][idx], request_s)
        return spot_serving.uptime(rate, down)

    def _at_uptime(
        self,
        w: Workload,
        ev: _Evaluated,
        combos: Sequence[_Combo],
        inverse: npt.NDArray[np.intp],
        share: npt.NDArray[np.float64],
        usage: npt.NDArray[np.float64],
        peak: npt.NDArray[np.float64],
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Node-hours and nodes at peak when each offer delivers its tokens/s × uptime: standing replicas
        for the peak (inference), or the hours the month's tokens take (batch inference)."""
        hours = self.options.hours_per_month
        tps = np.array([c.tokens_per_second for c in combos])[inverse] * share
        demand_peak = float(ev.demand.get("peak_tokens_per_second", 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            if w.kind == "inference":
                nodes = np.maximum(1.0, np.ceil(demand_peak / tps - 1e-9))
                return np.where(share < 1.0, nodes * hours, usage), np.where(share < 1.0, nodes, peak)
            used = usage / share
            ratio = w.volume.peak_to_average
            nodes = np.array([_peak_nodes(float(u), ratio, hours) if math.isfinite(u) else 0 for u in used])
            return np.where(share < 1.0, used, usage), np.where(share < 1.0, nodes, peak)

    def _placer(self, w: Workload, ev: _Evaluated) -> Any:
        """A function (card id, GPUs) -> _Combo for this workload, and its demand figures in `ev`."""
        v, c, hours = w.volume, w.constraints, self.options.hours_per_month
        if w.kind in TRAINING_KINDS:
            job = w.job_input()
            spec = job.spec()
            prepared = prepare(spec, job.assumptions)
            runs = (
                v.runs_per_month
                if v.runs_per_month is not None
                else float(v.training_tokens_per_month or 0) / (prepared.job.tokens)
            )
            ev.demand = {"runs_per_month": runs, "tokens_per_run": prepared.job.tokens}
            ev.run_plan, ev.runs = plan_for(job, spec), float(runs)

            def train(gpu_id: str, gpus: int) -> _Combo:
                card = self.catalog.get(gpu_id)
                est = prepared.on(card, gpus)
                combo = _Combo(
                    gpu_id, gpus, est.fits, est.hours, est.tokens_per_second, vram_gb=est.vram_gb, tdp_w=card.tdp_w
                )
                combo.meets = c.deadline_hours is None or est.hours <= c.deadline_hours
                combo.usage_node_hours = runs * est.hours
                combo.nodes_at_peak = _peak_nodes(combo.usage_node_hours, v.peak_to_average, hours)
                return combo

            return train
        assert self.serving is not None
        prepared_serving = self.serving(w.job_input(), w.kind, c)

        def serve(gpu_id: str, gpus: int) -> _Combo:
            card = self.catalog.get(gpu_id)
            s = prepared_serving.on(card, gpus)
            combo = _Combo(
                gpu_id,
                gpus,
                s.fits,
                None,
                s.tokens_per_second,
                s.per_user_tokens_per_second,
                s.ttft_s,
                tdp_w=card.tdp_w,
                reason=s.reason,
                weights_gb=s.weights_gb,
                request_s=s.request_s,
            )
            fast = c.min_user_tokens_per_second is None or s.per_user_tokens_per_second >= c.min_user_tokens_per_second
            combo.meets = fast and (c.max_ttft_s is None or s.ttft_s <= c.max_ttft_s)
            if v.tokens_per_month is not None:
                avg_tps = float(v.tokens_per_month) / (hours * _SECONDS_PER_HOUR)
            else:
                avg_tps = float(v.requests_per_second or 0) * float(s.output_tokens or 0)
            ev.demand = {"average_tokens_per_second": avg_tps, "peak_tokens_per_second": avg_tps * v.peak_to_average}
            if not (s.tokens_per_second > 0):
                combo.fits = False
                return combo
            if w.kind == "inference":
                replicas = max(1, math.ceil(avg_tps * v.peak_to_average / s.tokens_per_second - 1e-9))
                combo.nodes_at_peak, combo.usage_node_hours = replicas, replicas * hours
            else:
                combo.usage_node_hours = avg_tps * hours / s.tokens_per_second
                combo.nodes_at_peak = _peak_nodes(combo.usage_node_hours, v.peak_to_average, hours)
            return combo

        return serve

    def _why_none(self, w: Workload, combos: Sequence[_Combo], ev: _Evaluated) -> str:
        c = w.constraints
        if not ev.fitting:
            least = min((x for x in combos if x.vram_gb is not None), key=lambda x: x.vram_gb or 0, default=None)
            hint = f" (needs {least.vram_gb:.1f} GB per GPU even on {least.gpus}× {least.gpu_id})" if least else ""
            said = next((x for x in combos if x.reason), None)
            if not hint and said is not None:
                hint = f" (e.g. {said.gpus}× {said.gpu_id}: {said.reason})"
            return f"the job fits none of the {ev.considered:,} live offers that pass the constraints{hint}"
        fitting = [x for x in combos if x.fits]
        if w.kind in TRAINING_KINDS:
            fastest = min(fitting, key=lambda x: x.hours_per_run or math.inf)
            return (
                f"{ev.fitting:,} offers fit, but none finishes a run within the {c.deadline_hours:g} h deadline "
                f"(fastest: {fastest.hours_per_run:.2f} h on {fastest.gpus}× {fastest.gpu_id})"
            )
        parts = []
        if c.min_user_tokens_per_second is not None:
            best = max(fitting, key=lambda x: x.per_user_tps or 0)
            parts.append(
                f"at least {c.min_user_tokens_per_second:g} tokens/s per user (best: "
                f"{per_user_rate(best.per_user_tps or 0):g} on {best.gpus}× {best.gpu_id})"
            )
        if c.max_ttft_s is not None:
            best = min(fitting, key=lambda x: x.ttft_s if x.ttft_s is not None else math.inf)
            parts.append(
                f"a first token within {c.max_ttft_s:g} s (best: {best.ttft_s or 0:.2f} s on "
                f"{best.gpus}× {best.gpu_id})"
            )
        return f"{ev.fitting:,} offers fit, but none meets " + " and ".join(parts)


def _describe(w: Workload) -> str:
    c = w.constraints
    parts = [f"pricing {', '.join(c.allowed_pricing(serving=w.kind not in TRAINING_KINDS))}"]
    if c.providers:
        parts.append(f"providers {', '.join(c.providers)}")
    if c.regions:
        parts.append(f"regions {', '.join(c.regions)}")
    if c.available_now:
        parts.append("available now")
    if c.min_gpus is not None or c.max_gpus is not None:
        parts.append(f"{c.min_gpus or 1}–{c.max_gpus or '∞'} GPUs per node")
    if not c.include_reference:
        parts.append("no reference sheets")
    return "; ".join(parts)


def _pareto(options: list[_Option]) -> list[_Option]:
    """Placements no other one beats on both cost and power (unknown power: never needed under a cap)."""
    known = sorted((o for o in options if o.power_kw is not None), key=lambda o: (o.cost_f, o.power_kw, o.row))
    out: list[_Option] = []
    for o in known:
        if not out or (o.power_kw or 0) < (out[-1].power_kw or 0) - 1e-12:
            out.append(o)
    return out


# --- the capped fleet ----------------------------------------------------------------------------------


def _exact(choices: list[list[_Option]], cap: float) -> list[int] | None:
    """The cheapest pick (one option per workload) under `cap` kW, by branch and bound; None if none exists."""
    n = len(choices)
    min_power_after = [0.0] * (n + 1)
    min_cost_after = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        min_power_after[i] = min_power_after[i + 1] + min(o.power_kw or 0 for o in choices[i])
        min_cost_after[i] = min_cost_after[i + 1] + min(o.cost_f for o in choices[i])
    best: list[int] | None = None
    best_cost = math.inf
    pick = [0] * n

    def walk(i: int, power: float, cost: float) -> None:
        nonlocal best, best_cost
        if power + min_power_after[i] > cap + 1e-9 or cost + min_cost_after[i] >= best_cost - 1e-9:
            return
        if i == n:
            best, best_cost = list(pick), cost
            return
        for j, o in enumerate(choices[i]):  # cheapest first: the first complete pick is a good bound
            pick[i] = j
            walk(i + 1, power + (o.power_kw or 0), cost + o.cost_f)

    walk(0, 0.0, 0.0)
    return best


def _greedy(choices: list[list[_Option]], cap: float) -> list[int] | None:
    """Cheapest first; while over the cap, the step with the least extra $ per kW saved; then undo spare steps."""
    pick = [0] * len(choices)
    power = sum(c[0].power_kw or 0 for c in choices)
    while power > cap + 1e-9:
        step: tuple[float, float, int, int] | None = None
        for i, c in enumerate(choices):
            here = c[pick[i]]
            for j in range(pick[i] + 1, len(c)):  # Pareto order: each later option costs more, draws less
                saved = (here.power_kw or 0) - (c[j].power_kw or 0)
                ratio = (c[j].cost_f - here.cost_f) / saved
                candidate = (ratio, -saved, i, j)
                if step is None or candidate < step:
                    step = candidate
        if step is None:
            return None
        _, _, i, j = step
        power -= (choices[i][pick[i]].power_kw or 0) - (choices[i][j].power_kw or 0)
        pick[i] = j
    improved = True
    while improved:  # a later, bigger saving can make an earlier step unnecessary
        improved = False
        for i, c in enumerate(choices):
            for j in range(pick[i]):
                extra = (c[j].power_kw or 0) - (c[pick[i]].power_kw or 0)
                if power + extra <= cap + 1e-9:
                    power += extra
                    pick[i] = j
                    improved = True
                    break
    return pick


# --- output ----------------------------------------------------------------------------------------------


def _int(x: float) -> int | float:
    return int(x) if x == int(x) else x


def _option_json(
    frame: OfferTable, o: _Option, now: datetime, training: bool, stale: Collection[str] = ()
) -> dict[str, Any]:
    c, row = o.combo, o.row
    card = get_catalog().get(c.gpu_id)
    gpu_hours = o.billed_node_hours * c.gpus
    kw_per_node = None if c.tdp_w is None or not o.combo.nodes_at_peak else (o.power_kw or 0) / c.nodes_at_peak
    out: dict[str, Any] = {
        "offer_id": int(frame["id"][row]),
        "provider": str(frame["provider"][row]),
        "reference": bool(frame["reference"][row]),
        "stale_sheet": str(frame["provider"][row]) in stale,
        "demo": bool(frame["demo"][row]),
        "gpu": c.gpu_id,
        "gpu_name": card.name,
        "gpu_family": card.family,
        "gpus_per_node": c.gpus,
        "pricing": o.pricing,
        "reserved_term": _maybe(frame["reserved_term"][row]),
        "region": _maybe(frame["region"][row]),
        "instance_type": _maybe(frame["instance_type"][row]),
        "price_per_hour": money.to_money(o.price_per_hour),
        "price_per_gpu_hour": money.to_money(o.price_per_hour / c.gpus),
        "tokens_per_second": round(c.tokens_per_second, 1),
        "hours_per_run": None if c.hours_per_run is None else round(c.hours_per_run, 4),
        "cost_per_run": o.cost_per_run if training else None,
        "per_user_tokens_per_second": None if c.per_user_tps is None else per_user_rate(c.per_user_tps),
        "ttft_s": None if c.ttft_s is None else round(c.ttft_s, 4),
        "nodes_at_peak": c.nodes_at_peak,
        "uptime": None if training else round(c.uptime, 4),
        "gpus_at_peak": o.gpus_at_peak,
        "node_hours_per_month": round(o.billed_node_hours, 4),
        "gpu_hours_per_month": round(gpu_hours, 4),
        "monthly_cost": o.cost,
        "usd_per_mtok": money.per_million_tokens(o.price_per_hour, c.tokens_per_second)
        if c.tokens_per_second > 0
        else None,
        "tdp_w": c.tdp_w,
        "power_kw": None if o.power_kw is None else round(o.power_kw, 4),
        # Throughput a kilowatt of facility power buys on this card (one node, with the overhead).
        "tokens_per_second_per_kw": None if not kw_per_node else round(c.tokens_per_second / kw_per_node, 2),
        "price_age_s": round((epoch_us(now) - int(frame["last_seen_us"][row])) / 1e6, 1),
    }
    return out


def _maybe(value: object) -> Any:
    return None if value is None or value != value else value


def _why_lost(best: dict[str, Any], other: dict[str, Any], training: bool) -> str:
    more = Decimal(other["monthly_cost"]) - Decimal(best["monthly_cost"])
    pct = f" (+{more / Decimal(best['monthly_cost']) * 100:.1f}%)" if Decimal(best["monthly_cost"]) > 0 else ""
    head = f"${more:,.2f} a month more{pct}"

    def side(o: dict[str, Any]) -> str:
        where = f"{o['gpus_per_node']}× {o['gpu']} {o['pricing']} at ${o['price_per_hour']:,.2f}/h from {o['provider']}"
        if training:
            return f"{o['hours_per_run']:.2f} h per run on {where}"
        return f"{o['nodes_at_peak']} node(s) of {o['tokens_per_second']:,.0f} tokens/s on {where}"

    return f"{head}: {side(other)}, against {side(best)}"


def _fleet(picks: list[tuple[_Evaluated, _Option, dict[str, Any]]], overhead: float) -> dict[str, Any]:
    cards: dict[str, dict[str, Any]] = {}
    for ev, o, j in picks:
        card = cards.setdefault(
            o.combo.gpu_id,
            {
                "gpu": o.combo.gpu_id,
                "gpu_name": j["gpu_name"],
                "tdp_w": o.combo.tdp_w,
                "gpus_at_peak": 0,
                "gpu_hours_per_month": 0.0,
                "monthly_cost": Decimal(0),
                "power_kw": 0.0,
                "workloads": [],
            },
        )
        card["gpus_at_peak"] += o.gpus_at_peak
        card["gpu_hours_per_month"] += j["gpu_hours_per_month"]
        card["monthly_cost"] += j["monthly_cost"]
        card["power_kw"] = None if card["power_kw"] is None or o.power_kw is None else card["power_kw"] + o.power_kw
        card["workloads"].append(ev.workload.name)
    rows = sorted(cards.values(), key=lambda r: (-r["monthly_cost"], r["gpu"]))
    for r in rows:
        r["gpu_hours_per_month"] = round(r["gpu_hours_per_month"], 4)
        r["monthly_cost"] = money.to_money(r["monthly_cost"])
        r["power_kw"] = None if r["power_kw"] is None else round(r["power_kw"], 4)
        r["kw_per_gpu"] = None if r["tdp_w"] is None else round(r["tdp_w"] * overhead / 1000, 4)
    powers = [r["power_kw"] for r in rows]
    return {
        "cards": rows,
        "gpus_at_peak": sum(r["gpus_at_peak"] for r in rows),
        "gpu_hours_per_month": round(sum(r["gpu_hours_per_month"] for r in rows), 4),
        "monthly_cost": money.to_money(sum((r["monthly_cost"] for r in rows), Decimal(0))),
        "power_kw": None if any(p is None for p in powers) else round(sum(powers), 4),
    }


def plan(
    frame: OfferTable,
    fresh: Array,
    mix: WorkloadMix,
    now: datetime,
    *,
    options: PlanOptions | None = None,
    serving: ServingEstimator | None = None,
    terms: TermColumns | None = None,
    stale: Collection[str] = (),
) -> dict[str, Any]:
    """The plan for `mix` on the live offers (`fresh` marks them) of `frame`, as plain JSON-ready data.
    `terms`: the frame's cost terms (tracker.market.service.cost_terms), so training is priced as whole
    runs like the ranking; None prices GPU time alone. `stale`: the rate sheets past their age
    (tracker.market.freshness.stale_sheets), left out as the ranking leaves them unless a workload asks."""
    opts = options or PlanOptions(mix.power_budget_kw, mix.overhead_factor)
    planner = _Planner(frame, fresh, opts, serving, terms, stale)
    evaluated = [planner.evaluate(w) for w in mix.workloads]
    return _answer(frame, planner, evaluated, opts, now)


def _table_combos(frame: OfferTable) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Every offer's code for its (card, GPUs) and each code's first offer, for the whole table."""
    key = frame["gpu_code"].astype(np.int64) * 4096 + frame["gpu_count_f"].astype(np.int64)
    _, first, codes = np.unique(key, return_index=True, return_inverse=True)
    return codes.astype(np.intp).ravel(), first.astype(np.intp)


def _group_leaders(
    ok: npt.NDArray[np.intp],
    groups: npt.NDArray[np.intp],
    tiers: npt.NDArray[np.int8],
    cost: npt.NDArray[np.float64],
    n_groups: int,
) -> npt.NDArray[np.intp]:
    """The positions in `ok` that can come first in their group in `order_by`'s order (tier, then cost, then
    $/hour and id): each group's lowest tier, and within it its lowest cost, ties kept (the rest of the order
    decides between them). A NaN cost sorts last, as in the order: it counts as infinite here."""
    if not len(ok):
        return ok
    g, t = groups[ok], tiers[ok].astype(np.int16)
    lowest = np.full(n_groups, np.iinfo(np.int16).max, dtype=np.int16)
    np.minimum.at(lowest, g, t)
    keep = t == lowest[g]
    c = np.where(np.isnan(cost[ok]), np.inf, cost[ok])
    cheapest = np.full(n_groups, np.inf)
    np.minimum.at(cheapest, g[keep], c[keep])
    keep &= c == cheapest[g]
    leaders: npt.NDArray[np.intp] = ok[keep]
    return leaders


def evaluate(
    frame: OfferTable,
    fresh: Array,
    mix: WorkloadMix,
    options: PlanOptions,
    serving: ServingEstimator | None = None,
    terms: TermColumns | None = None,
    stale: Collection[str] = (),
) -> list[_Evaluated]:
    """Each workload priced on the live offers (for the plan over time, which reprices the same placements)."""
    planner = _Planner(frame, fresh, options, serving, terms, stale)
    return [planner.evaluate(w) for w in mix.workloads]


def _answer(
    frame: OfferTable, planner: _Planner, evaluated: list[_Evaluated], opts: PlanOptions, now: datetime
) -> dict[str, Any]:
    placed = [ev for ev in evaluated if ev.status == "ok" and ev.best is not None]

    picks = {ev.workload.name: ev.best for ev in placed if ev.best is not None}
    power = _power_section(placed, picks, opts)
    chosen: dict[str, _Option] = power.pop("_picks")

    def as_json(ev: _Evaluated, o: _Option) -> dict[str, Any]:
        return _option_json(frame, o, now, ev.workload.kind in TRAINING_KINDS, planner.stale)

    workloads: list[dict[str, Any]] = []
    fleet_picks = []
    for ev in evaluated:
        w = ev.workload
        entry: dict[str, Any] = {
            "name": w.name,
            "kind": w.kind,
            "status": ev.status,
            "reason": ev.reason,
            "offers": {"considered": ev.considered, "fitting": ev.fitting, "feasible": ev.feasible},
            "demand": ev.demand,
            "constraints": w.constraints.model_dump(mode="json", exclude_defaults=True),
            "choice": None,
            "runner_up": None,
            "by_card": [],
        }
        if ev.status == "ok" and ev.best is not None:
            training = w.kind in TRAINING_KINDS
            o = chosen[w.name]
            choice = as_json(ev, o)
            entry["choice"] = choice
            if o.row != ev.best.row:
                cheapest = as_json(ev, ev.best)
                entry["uncapped_choice"] = cheapest
                entry["reason"] = "moved under the power budget: " + _why_lost(cheapest, choice, training)
            rivals = [x for gid, x in ev.by_card.items() if gid != o.combo.gpu_id]
            runner = rivals[0] if rivals else (ev.runner_up if ev.runner_up and ev.runner_up.row != o.row else None)
            if runner is not None:
                r = as_json(ev, runner)
                r["why_lost"] = (
                    _why_lost(choice, r, training)
                    if Decimal(r["monthly_cost"]) >= Decimal(choice["monthly_cost"])
                    else "cheaper, but over the power budget"
                )
                entry["runner_up"] = r
            entry["by_card"] = [
                {k: v for k, v in as_json(ev, x).items() if k in _BY_CARD}
                for x in list(ev.by_card.values())[:MAX_BY_CARD]
            ]
            fleet_picks.append((ev, o, choice))
        workloads.append(entry)

    fleet = _fleet(fleet_picks, opts.overhead_factor)
    single = _single_card(frame, placed, fleet, opts, now)
    # The cards the answer talks about: the fleet's, the runners-up, the best single-card fleets.
    shown = {c["gpu"] for c in fleet["cards"]} | {f["gpu"] for f in single["fleets"][:3]}
    shown |= {e["runner_up"]["gpu"] for e in workloads if e.get("runner_up")}
    shown |= {e["uncapped_choice"]["gpu"] for e in workloads if e.get("uncapped_choice")}
    power["per_card"] = [row for row in _density(placed, opts) if row["gpu"] in shown]
    unplanned = [e["name"] for e in workloads if e["status"] != "ok"]
    return {
        "as_of": now,
        "hours_per_month": opts.hours_per_month,
        "live_offers": int(planner.base.sum()),
        "complete": not unplanned,
        "unplanned": unplanned,
        "workloads": workloads,
        "fleet": fleet,
        "single_card": single,
        "power": power,
        "method": _METHOD,
    }


_BY_CARD = (
    "gpu",
    "gpus_per_node",
    "provider",
    "pricing",
    "price_per_hour",
    "monthly_cost",
    "nodes_at_peak",
    "gpus_at_peak",
    "hours_per_run",
    "tokens_per_second",
    "power_kw",
    "tokens_per_second_per_kw",
)
_METHOD = (
    "Each workload on the feasible live offer with the lowest monthly cost, in the ranking's order (sold-out "
    "offers last): training is runs × the whole run's cost as `cheapest` prices it (billing increments, "
    "disk, transfer, spot interruptions); serving is billed node-hours × $/hour; reserved offers bill their "
    "peak nodes for the whole month; GPUs at peak summed per card; power = "
    "GPUs at peak × catalog TDP × overhead factor."
)


def _power_section(placed: list[_Evaluated], picks: dict[str, _Option], opts: PlanOptions) -> dict[str, Any]:
    uncapped_kw = _sum_kw(picks.values())
    uncapped_cost = sum(o.cost_f for o in picks.values())
    out: dict[str, Any] = {
        "overhead_factor": opts.overhead_factor,
        "budget_kw": opts.power_budget_kw,
        "uncapped_kw": uncapped_kw,
        "power_kw": uncapped_kw,
        "within_budget": None,
        "algorithm": None,
        "cap_cost": None,
        "changed": [],
        "_picks": dict(picks),
    }
    cap = opts.power_budget_kw
    if cap is None or not placed:
        return out
    if uncapped_kw is not None and uncapped_kw <= cap + 1e-9:
        out |= {"within_budget": True, "algorithm": "none needed", "cap_cost": Decimal(0).quantize(money.QUANTUM)}
        return out
    choices = [ev.choices for ev in placed]
    if any(not c for c in choices):
        names = [ev.workload.name for ev in placed if not ev.choices]
        out |= {
            "within_budget": False,
            "algorithm": "none",
            "reason": f"no placement with a known TDP for {', '.join(names)}: the cap cannot be checked",
        }
        return out
    size = math.prod(len(c) for c in choices)
    algorithm = "exact (branch and bound)" if size <= EXACT_LIMIT else "greedy by marginal $ per kW saved"
    pick = _exact(choices, cap) if size <= EXACT_LIMIT else _greedy(choices, cap)
    out["algorithm"] = algorithm
    if pick is None:
        floor = sum(min(o.power_kw or 0 for o in c) for c in choices)
        out |= {
            "within_budget": False,
            "reason": f"the lowest-power feasible fleet draws {floor:,.1f} kW, over the {cap:g} kW budget; "
            "the plan below ignores the budget",
        }
        return out
    capped = {ev.workload.name: ev.choices[j] for ev, j in zip(placed, pick, strict=True)}
    capped_cost = sum(o.cost_f for o in capped.values())
    out |= {
        "within_budget": True,
        "power_kw": _sum_kw(capped.values()),
        "cap_cost": money.to_money(
            sum((_exact_cost(o) for o in capped.values()), Decimal(0))
            - sum((_exact_cost(o) for o in picks.values()), Decimal(0))
        ),
        "cap_cost_pct": round((capped_cost - uncapped_cost) / uncapped_cost * 100, 2) if uncapped_cost else None,
        "changed": [n for n in capped if capped[n].row != picks[n].row],
        "_picks": capped,
    }
    return out


def _exact_cost(o: _Option) -> Decimal:
    return o.cost


def _sum_kw(options: Any) -> float | None:
    total = 0.0
    for o in options:
        if o.power_kw is None:
            return None
        total += o.power_kw
    return round(total, 4)


def _single_card(
    frame: OfferTable, placed: list[_Evaluated], mixed: dict[str, Any], opts: PlanOptions, now: datetime
) -> dict[str, Any]:
    """Every card that can run the whole (placed) mix alone, cheapest first, against the mixed fleet."""
    if not placed:
        return {"best": None, "fleets": [], "saving": None, "saving_pct": None, "cards_unable": 0}
    cards = sorted({gid for ev in placed for gid in ev.by_card})
    fleets, unable = [], 0
    for gid in cards:
        options = [ev.by_card.get(gid) for ev in placed]
        if any(o is None for o in options):
            unable += 1
            continue
        picked = [o for o in options if o is not None]
        cost = money.to_money(sum((_exact_cost(o) for o in picked), Decimal(0)))
        kw = _sum_kw(picked)
        fleets.append(
            {
                "gpu": gid,
                "monthly_cost": cost,
                "gpus_at_peak": sum(o.gpus_at_peak for o in picked),
                "power_kw": kw,
                "within_budget": None
                if opts.power_budget_kw is None or kw is None
                else kw <= opts.power_budget_kw + 1e-9,
                "assignments": [
                    {
                        "workload": ev.workload.name,
                        "gpus_per_node": o.combo.gpus,
                        "provider": str(frame["provider"][o.row]),
                        "pricing": o.pricing,
                        "monthly_cost": _exact_cost(o),
                    }
                    for ev, o in zip(placed, picked, strict=True)
                ],
            }
        )
    fleets.sort(key=lambda f: (f["monthly_cost"], f["gpu"]))
    eligible = [f for f in fleets if f["within_budget"] is not False]
    best = eligible[0] if eligible else None
    saving = None if best is None else money.to_money(best["monthly_cost"] - mixed["monthly_cost"])
    return {
        "best": best,
        "fleets": fleets[:MAX_BY_CARD],
        "saving": saving,
        "saving_pct": None
        if best is None or not best["monthly_cost"]
        else round(float(saving or 0) / float(str(best["monthly_cost"])) * 100, 2),
        "cards_unable": unable,
        "note": None
        if best is not None
        else "no single card type runs every planned workload" + (" within the power budget" if fleets else ""),
    }


def _density(placed: list[_Evaluated], opts: PlanOptions) -> list[dict[str, Any]]:
    """Per card: kW per GPU and, per workload, the throughput one kW buys on its cheapest node of that card."""
    catalog = get_catalog()
    cards: dict[str, dict[str, Any]] = {}
    for ev in placed:
        for gid, o in ev.by_card.items():
            tdp = o.combo.tdp_w
            row = cards.setdefault(
                gid,
                {
                    "gpu": gid,
                    "tdp_w": tdp,
                    "kw_per_gpu": None if tdp is None else round(tdp * opts.overhead_factor / 1000, 4),
                    "gpus_per_100kw": None if tdp is None else math.floor(100_000 / (tdp * opts.overhead_factor)),
                    "bf16_tflops_per_kw": None
                    if tdp is None
                    else round(catalog.get(gid).bf16_tflops / (tdp * opts.overhead_factor / 1000), 2),
                    "workloads": {},
                },
            )
            if tdp:
                kw = o.combo.gpus * tdp * opts.overhead_factor / 1000
                row["workloads"][ev.workload.name] = round(o.combo.tokens_per_second / kw, 2)
    return sorted(cards.values(), key=lambda r: r["gpu"])


__all__ = ["EXACT_LIMIT", "PlanOptions", "evaluate", "plan"]

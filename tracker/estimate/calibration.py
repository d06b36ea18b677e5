"""Measured runs (tracker/estimate/data/calibration.toml): fitting the model and reporting errors.

Step-time sets (hf-peft, optimized): `fit_step` fits the few shared numbers of the step-time model
(tracker/estimate/step.py) — the achievable GEMM fraction of peak for each GPU class with measured
rows, one achievable bandwidth fraction, one per-step overhead, and one non-GEMM multiplier per
stack with rows — by damped Gauss-Newton on log(estimated / measured tokens/s) over every row, each
under its own stack, with a weak pull towards the priors of stacks.toml (so a parameter whose rows
are all held out falls back to its prior instead of drifting). Never one knob per row. The report
gives each row's leave-one-source-out error: its error when the fit saw no row from its source,
and every same-source pair of rows whose job differs only by the card as a measured vs estimated
speed ratio (`card_ratios`: llm-foundry's MPT-7B runs on A100 and H100 pin the Hopper GEMM fraction).
The leave-one-source-out errors are also what the uncertainty bands are made of (uncertainty.py).

VRAM rows are either measured peaks or budgets (`vram_kind = "budget"`: the card size a run just fits
into, Unsloth's "longest context for this VRAM" table). A budget is not a peak, it is a bound: the
run's peak at the stated context is at most the budget, and a longer context would not fit. It is
compared as estimate / (budget × budget_fill) − 1 in the row's scope, where `budget_fill` is the
share of the budget the peak is expected to reach (1.0 for the Unsloth table, which is an exact
straight line through measured points evaluated at card sizes: see calibration.toml), so it counts in
the VRAM errors like a peak. Beside it, never instead of it, each budget row also reports the model's
own longest context that fits the budget against the stated context (`budget_context_error`: the
question the table answers), and the old reading of the figure as a decimal-GB device peak
(`vram_error_as_published`); the summary gives both medians and the peak-only / budget-only split.

Legacy efficiency fit (kept for sets that still declare `efficiency.fit`):

The fit is deliberately small: per assumption set, one log-efficiency level per method and one
factor per GPU class (its architecture, or "consumer" for GeForce; reference: Ampere), by least
squares on log(measured / predicted) over the set's own rows. With a few dozen rows and at most
five free numbers, a row cannot be matched by giving it its own knob. The report also gives each
row's leave-one-out error (its error when the fit never saw it), the honest number for a fitted set.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.architectures import DATA_DIR
from tracker.estimate.assumptions import (
    AssumptionSet,
    EfficiencyModel,
    efficiency_class,
    get_assumptions,
    priors,
)
from tracker.estimate.core import prepare
from tracker.estimate.job import JobSpec, make_job
from tracker.estimate.memory import GB
from tracker.estimate.stacks import stack_names
from tracker.estimate.step import RawStep, StepParams, prior_params, raw_step, relative_classes, step_terms
from tracker.estimate.step import tokens_per_second as step_tps

METHODS = ("full", "lora", "qlora")
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    id: str
    source: str
    stack: str
    model: str
    method: str
    rank: int
    lora_targets: str
    seq_len: int
    batch: int
    grad_checkpointing: bool
    offload_activations: bool
    long_context: bool
    gpu: str
    gpus: int
    parallelism: str  # "single" | "ddp" | "fsdp"
    tokens_per_second: float | None  # per GPU
    vram_gb: float | None  # converted to decimal GB
    vram_published: str | None
    vram_kind: str  # "peak" | "budget"
    vram_scope: str  # "device" (nvidia-smi-like, all of it) | "allocator" (PyTorch's counters: no CUDA context)
    exclude: str | None
    exclude_tokens_per_second: str | None
    exclude_vram: str | None
    note: str | None
    precision: str | None = None
    grad_accum: int = 1
    budget_fill: float = 1.0  # budget rows: expected peak / budget at the stated context
    vram_figure: float | None = None  # the memory number as printed, whatever its unit

    @property
    def is_budget(self) -> bool:
        return self.vram_kind == "budget"

    @property
    def vram_target_gb(self) -> float | None:
        """What an estimate of this row's VRAM is compared with: the peak, or budget × fill."""
        if self.vram_gb is None:
            return None
        return self.vram_gb * self.budget_fill if self.is_budget else self.vram_gb

    @property
    def uses_tps(self) -> bool:
        return self.tokens_per_second is not None and not self.exclude and not self.exclude_tokens_per_second

    @property
    def uses_vram(self) -> bool:
        return self.vram_gb is not None and not self.exclude and not self.exclude_vram

    @property
    def group(self) -> str:
        """The publication a row comes from (leave-one-source-out unit): the source's first word,
        e.g. every LLaMA-Factory wiki table is one source."""
        return self.source.split()[0]

    @property
    def eval_gpus(self) -> int:
        """GPUs the estimate is placed on: a DDP replica is one GPU; FSDP shards over all of them."""
        return self.gpus if self.parallelism == "fsdp" else 1

    def job(self) -> JobSpec:
        return make_job(
            self.model, self.method, rank=self.rank, lora_targets=self.lora_targets, seq_len=self.seq_len,
            batch=self.batch, grad_checkpointing=self.grad_checkpointing, tokens=1e6,
            offload_activations=self.offload_activations, enforce_max_seq_len=not self.long_context,
            stack=self.stack if self.stack in stack_names() else None,
            parallel=self.parallelism if self.parallelism in ("ddp", "fsdp") else None,
            precision=self.precision, grad_accum=self.grad_accum,
        )  # fmt: skip


@cache
def load_rows() -> tuple[MeasuredRow, ...]:
    with (DATA_DIR / "calibration.toml").open("rb") as fh:
        raw = tomllib.load(fh)
    rows = []
    for r in raw["row"]:
        vram = r.get("vram")
        unit = r.get("vram_unit", "GB")
        vram_gb = None if vram is None else float(vram) * (GIB / GB if unit == "GiB" else 1.0)
        rows.append(MeasuredRow(
            id=r["id"], source=r["source"], stack=r["stack"], model=r["model"], method=r["method"],
            rank=int(r.get("rank", 16)), lora_targets=r.get("lora_targets", "all-linear"),
            seq_len=int(r["seq_len"]), batch=int(r["batch"]), grad_checkpointing=bool(r["grad_checkpointing"]),
            offload_activations=bool(r.get("offload_activations", False)),
            long_context=bool(r.get("long_context", False)), gpu=r["gpu"], gpus=int(r.get("gpus", 1)),
            parallelism=r.get("parallelism", "single"),
            tokens_per_second=float(r["tokens_per_second"]) if "tokens_per_second" in r else None,
            vram_gb=vram_gb, vram_published=None if vram is None else f"{vram} {unit}",
            vram_kind=r.get("vram_kind", "peak"), vram_scope=r.get("vram_scope", "device"), exclude=r.get("exclude"),
            exclude_tokens_per_second=r.get("exclude_tokens_per_second"), exclude_vram=r.get("exclude_vram"),
            note=r.get("note"), precision=r.get("precision"), grad_accum=int(r.get("grad_accum", 1)),
            budget_fill=float(r.get("budget_fill", 1.0)), vram_figure=None if vram is None else float(vram),
        ))
    return tuple(rows)


def _gpu(gpu_id: str) -> GpuSpec:
    from tracker.catalog.gpus import get_catalog  # the catalog is loaded lazily, on first use

    return get_catalog().get(gpu_id)


def _rows_for(aset: AssumptionSet, rows: Iterable[MeasuredRow] | None = None) -> list[MeasuredRow]:
    rows = load_rows() if rows is None else rows
    return [r for r in rows if not aset.stacks or r.stack in aset.stacks]


def implied_efficiency(row: MeasuredRow, aset: AssumptionSet) -> float:
    """The efficiency that would make this set's FLOPs model reproduce the row's tokens/s exactly."""
    assert row.tokens_per_second is not None
    gpu = _gpu(row.gpu)
    prepared = prepare(row.job(), aset)
    n = row.eval_gpus
    scaling = aset.multi_gpu_efficiency(gpu.interconnect, n)
    peak = aset.peak_flops(gpu.id, gpu.bf16_tflops)
    return row.tokens_per_second * prepared.flops_per_token / (peak * scaling)


def fit_efficiency(aset: AssumptionSet, rows: Sequence[MeasuredRow] | None = None) -> EfficiencyModel:
    """Least squares in log space: log e_row = level[method] + arch[architecture of the row's GPU]."""
    p = priors()
    ref = p.reference_architecture
    data = [r for r in _rows_for(aset, rows) if r.uses_tps]
    obs = []
    for r in data:
        g = _gpu(r.gpu)
        obs.append((r.method, efficiency_class(g.architecture, g.form_factor), math.log(implied_efficiency(r, aset))))

    methods = [m for m in METHODS if any(o[0] == m for o in obs)]
    archs = sorted({o[1] for o in obs} - {ref})
    if not methods:
        raise ValueError(f"assumption set {aset.name!r} has no measured rows to fit")
    # An architecture is only identifiable if its rows share a method with rows elsewhere;
    # otherwise it is pinned to its prior and the method level absorbs nothing from it.
    fixed_arch: dict[str, float] = {}
    while True:
        free_archs = [a for a in archs if a not in fixed_arch]
        cols = methods + free_archs
        x = np.zeros((len(obs), len(cols)))
        y = np.zeros(len(obs))
        for i, (m, a, le) in enumerate(obs):
            x[i, cols.index(m)] = 1.0
            if a in free_archs:
                x[i, cols.index(a)] = 1.0
            y[i] = le - (fixed_arch.get(a, p.arch_log(a)) if a != ref and a not in free_archs else 0.0)
        if np.linalg.matrix_rank(x) == len(cols) or not free_archs:
            break
        # Pin the architecture with the fewest rows to its prior and try again.
        worst = min(free_archs, key=lambda a: sum(1 for o in obs if o[1] == a))
        fixed_arch[worst] = p.arch_log(worst)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)

    level = {m: float(coef[cols.index(m)]) for m in methods}
    source = {f"method:{m}": f"fit ({sum(1 for o in obs if o[0] == m)} rows)" for m in methods}
    anchor = "lora" if "lora" in level else methods[0]
    for m in METHODS:
        if m not in level:
            level[m] = level[anchor] + math.log(p.method[m].factor / p.method[anchor].factor)
            source[f"method:{m}"] = f"prior ({p.method[m].factor:g} x {anchor})"
    arch = {a: math.log(v.factor) for a, v in p.architecture.items() if a != "default"}
    for a in arch:
        source[f"arch:{a}"] = f"prior ({p.architecture[a].factor:g} x {ref})"
    arch[ref] = 0.0
    source[f"arch:{ref}"] = f"reference ({sum(1 for o in obs if o[1] == ref)} rows)"
    for a in free_archs:
        arch[a] = float(coef[cols.index(a)])
        source[f"arch:{a}"] = f"fit ({sum(1 for o in obs if o[1] == a)} rows)"
    return EfficiencyModel(level=level, arch=arch, default_arch=p.arch_log("default"), source=source)


# --- report --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowResult:
    row: MeasuredRow
    in_set: bool  # the row's stack is one this set models (and, if fitted, was fitted to)
    estimated_tps: float | None  # per GPU
    estimated_vram_gb: float | None
    tps_error: float | None  # (estimate - measured) / measured
    tps_error_loo: float | None  # same, with the efficiency fitted without this row
    vram_error: float | None  # peaks: estimate / peak - 1; budgets: estimate / (budget × fill) - 1
    problem: str | None  # why nothing could be estimated (unknown GPU id ...)
    # Budget rows only, reported beside vram_error (see the module docstring):
    vram_error_as_published: float | None = None  # the figure read as a decimal-GB device peak
    budget_context: int | None = None  # the model's longest context whose estimate fits budget × fill
    budget_context_error: float | None = None  # budget_context / stated context - 1

    def as_dict(self) -> dict[str, Any]:
        r = self.row
        return {
            "id": r.id,
            "stack": r.stack,
            "in_set": self.in_set,
            "model": r.model,
            "method": r.method,
            "rank": r.rank if r.method != "full" else None,
            "seq_len": r.seq_len,
            "batch": r.batch,
            "gpu": r.gpu,
            "gpus": r.gpus,
            "parallelism": r.parallelism,
            "measured_tokens_per_second": r.tokens_per_second,
            "estimated_tokens_per_second": _round(self.estimated_tps, 1),
            "tokens_per_second_error": _round(self.tps_error, 4),
            "tokens_per_second_error_loo": _round(self.tps_error_loo, 4),
            "measured_vram_gb": _round(r.vram_gb, 2),
            "measured_vram": r.vram_published,
            "vram_kind": r.vram_kind,
            "vram_scope": r.vram_scope,
            "budget_fill": r.budget_fill if r.is_budget else None,
            "estimated_vram_gb": _round(self.estimated_vram_gb, 2),
            "vram_error": _round(self.vram_error, 4),
            "vram_error_as_published": _round(self.vram_error_as_published, 4),
            "budget_context": self.budget_context,
            "budget_context_error": _round(self.budget_context_error, 4),
            "excluded": r.exclude,
            "excluded_tokens_per_second": r.exclude_tokens_per_second,
            "excluded_vram": r.exclude_vram,
            "problem": self.problem,
            "source": r.source,
            "note": r.note,
        }


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    assumptions: AssumptionSet
    rows: tuple[RowResult, ...]

    def _errors(self, attr: str) -> list[float]:
        return [abs(getattr(r, attr)) for r in self.rows if r.in_set and getattr(r, attr) is not None]

    @property
    def median_abs_tps_error(self) -> float | None:
        errs = self._errors("tps_error")
        return statistics.median(errs) if errs else None

    @property
    def median_abs_tps_error_loo(self) -> float | None:
        errs = self._errors("tps_error_loo")
        return statistics.median(errs) if errs else None

    @property
    def median_abs_vram_error(self) -> float | None:
        errs = self._errors("vram_error")
        return statistics.median(errs) if errs else None

    def per_stack(self) -> dict[str, dict[str, Any]]:
        """MdAPE per stack: tokens/s in-sample and leave-one-source-out, and VRAM."""
        out: dict[str, dict[str, Any]] = {}
        for stack in sorted({r.row.stack for r in self.rows if r.in_set}):
            rows = [r for r in self.rows if r.in_set and r.row.stack == stack]
            med = {}
            for attr in ("tps_error", "tps_error_loo", "vram_error"):
                errs = [abs(getattr(r, attr)) for r in rows if getattr(r, attr) is not None]
                med[attr] = (_round(statistics.median(errs), 4) if errs else None, len(errs))
            out[stack] = {
                "tokens_per_second_rows": med["tps_error"][1],
                "tokens_per_second_mdape": med["tps_error"][0],
                "tokens_per_second_mdape_loso": med["tps_error_loo"][0],
                "vram_rows": med["vram_error"][1],
                "vram_mdape": med["vram_error"][0],
                # Nothing of the memory model is fitted: its leave-one-source-out error is its error.
                "vram_mdape_loso": med["vram_error"][0],
            } | _vram_split(rows)
        return out

    def card_ratios(self) -> list[dict[str, Any]]:
        """Every pair of rows of one source whose job differs only by the card: measured and estimated
        speed ratio (faster card / slower card), in-sample and with the source held out."""
        out = []
        rows = [r for r in self.rows if r.in_set and r.estimated_tps and r.row.uses_tps]
        for i, first in enumerate(rows):
            for second in rows[i + 1:]:
                if first.row.gpu == second.row.gpu or _same_job(first.row) != _same_job(second.row):
                    continue
                # The faster card first: ratios read "H100 / A100 = 2.3".
                a, b = sorted((first, second), key=lambda r: -(r.row.tokens_per_second or 0.0))
                measured = (a.row.tokens_per_second or 0.0) / (b.row.tokens_per_second or 1.0)
                est = (a.estimated_tps or 0.0) / (b.estimated_tps or 1.0)
                loo = None
                if a.tps_error_loo is not None and b.tps_error_loo is not None:
                    loo = measured * (1 + a.tps_error_loo) / (1 + b.tps_error_loo)
                out.append({
                    "rows": [a.row.id, b.row.id], "cards": [a.row.gpu, b.row.gpu], "stack": a.row.stack,
                    "measured": round(measured, 3), "estimated": round(est, 3),
                    "error": round(est / measured - 1, 4), "estimated_loso": _round(loo, 3),
                    "error_loso": _round(None if loo is None else loo / measured - 1, 4),
                })  # fmt: skip
        return out

    def summary(self) -> dict[str, Any]:
        split = _vram_split([r for r in self.rows if r.in_set])
        return {
            "assumptions": self.assumptions.name,
            "fitted": self.assumptions.fitted,
            "stacks": list(self.assumptions.stacks) or "all",
            "tokens_per_second_rows": len(self._errors("tps_error")),
            "vram_rows": len(self._errors("vram_error")),
            "median_abs_tokens_per_second_error": _round(self.median_abs_tps_error, 4),
            "median_abs_tokens_per_second_error_loo": _round(self.median_abs_tps_error_loo, 4),
            "median_abs_vram_error": _round(self.median_abs_vram_error, 4),
            "vram": split,
            "leave_one_out": "leave-one-source-out" if self.assumptions.step_model else "leave-one-row-out",
            "per_stack": self.per_stack(),
            "card_ratios": self.card_ratios(),
            "excluded_rows": [{"id": r.row.id, "why": r.row.exclude} for r in self.rows if r.row.exclude],
        }

    def as_dict(self) -> dict[str, Any]:
        if self.assumptions.step_model:
            return self.summary() | {"step": self.assumptions.describe()["step"],
                                     "rows": [r.as_dict() for r in self.rows]}
        return self.summary() | {
            "efficiency": self.assumptions.describe()["efficiency"],
            "efficiency_source": dict(self.assumptions.efficiency.source),
            "rows": [r.as_dict() for r in self.rows],
        }


def _mdape(values: Iterable[float | None]) -> float | None:
    errs = [abs(v) for v in values if v is not None]
    return _round(statistics.median(errs), 4) if errs else None


def _vram_split(rows: Sequence[RowResult]) -> dict[str, Any]:
    """VRAM MdAPE of the peak rows and of the budget rows apart, and the budget rows' other readings."""
    peaks = [r for r in rows if r.vram_error is not None and not r.row.is_budget]
    budgets = [r for r in rows if r.vram_error is not None and r.row.is_budget]
    old = [r.vram_error if not r.row.is_budget else r.vram_error_as_published
           for r in peaks + budgets]  # fmt: skip
    return {
        "vram_peak_rows": len(peaks),
        "vram_mdape_peak": _mdape(r.vram_error for r in peaks),
        "vram_budget_rows": len(budgets),
        "vram_mdape_budget": _mdape(r.vram_error for r in budgets),
        "budget_context_mdape": _mdape(r.budget_context_error for r in budgets),
        # Every VRAM row as the earlier report read it (budgets as decimal-GB device peaks).
        "vram_mdape_as_published": _mdape(old),
    }


def _same_job(r: MeasuredRow) -> tuple[Any, ...]:
    return (r.group, r.stack, r.model, r.method, r.rank, r.lora_targets, r.seq_len, r.batch,
            r.grad_checkpointing, r.gpus, r.parallelism, r.precision)  # fmt: skip


def _round(value: float | None, places: int) -> float | None:
    return None if value is None else round(value, places)


def calibrate(assumptions: AssumptionSet | str | None = None, *, all_rows: bool = False) -> CalibrationReport:
    """Every measured row next to this set's estimate of it.

    By default only rows of the stacks the set models are listed (the seed models none in
    particular, so it is judged on all of them); `all_rows` lists the others too, marked
    `in_set = False` and left out of the medians.
    """
    aset = assumptions if isinstance(assumptions, AssumptionSet) else get_assumptions(assumptions)
    in_set_ids = {r.id for r in _rows_for(aset)}
    results = []
    for row in load_rows():
        in_set = row.id in in_set_ids
        if not (in_set or all_rows):
            continue
        results.append(_evaluate(row, aset, in_set))
    return CalibrationReport(assumptions=aset, rows=tuple(results))


def _evaluate(row: MeasuredRow, aset: AssumptionSet, in_set: bool) -> RowResult:
    try:
        gpu = _gpu(row.gpu)
        job = row.job()
    except Exception as exc:  # an excluded row may name a card or shape we cannot build
        if row.exclude:
            return RowResult(row, in_set, None, None, None, None, None, f"{type(exc).__name__}: {exc}")
        raise
    n = _placed_gpus(row, aset)
    est = prepare(job, aset).on(gpu, n)
    tps = est.tokens_per_second / n
    vram = _scoped_vram(row, est.vram_gb, est.vram_breakdown)
    measured_tps = row.tokens_per_second if row.uses_tps else None
    tps_err = tps / measured_tps - 1 if measured_tps else None
    target = row.vram_target_gb
    vram_err = vram / target - 1 if row.uses_vram and target else None
    as_published = context = context_err = None
    if row.is_budget and row.uses_vram and row.vram_figure:
        as_published = est.vram_gb / row.vram_figure - 1  # decimal GB, whole device, as if a peak
        context = budget_context(row, aset, gpu, n)
        context_err = context / row.seq_len - 1
    loo = None
    if measured_tps and aset.step_model and in_set:
        held_out = replace(aset, step_params=loso_step_params(row.group))
        loo = prepare(job, held_out).on(gpu, n).tokens_per_second / n / measured_tps - 1
    elif measured_tps and aset.fitted and in_set:
        others = [r for r in load_rows() if r.id != row.id]
        held_out = replace(aset, efficiency=fit_efficiency(aset, others))
        loo = prepare(job, held_out).on(gpu, n).tokens_per_second / n / measured_tps - 1
    return RowResult(row, in_set, tps, vram, tps_err, loo, vram_err, None, as_published, context, context_err)


def _scoped_vram(row: MeasuredRow, vram_gb: float, breakdown: dict[str, float]) -> float:
    if row.vram_scope == "allocator":
        # PyTorch's memory counters never see the CUDA context or the allocator's slack.
        return vram_gb - breakdown["runtime_overhead"]
    return vram_gb


def budget_context(row: MeasuredRow, aset: AssumptionSet, gpu: GpuSpec, n: int) -> int:
    """The longest context (tokens, to 1 %) whose estimated peak fits the row's budget × fill, in its scope.

    The estimate grows monotonically with the sequence length, so a bisection in log space finds it;
    0 when not even 64 tokens fit. This is the question a budget table answers, asked of the model."""
    target = row.vram_target_gb
    assert target is not None

    def fits(seq: int) -> bool:
        job = replace(row, seq_len=seq, long_context=True).job()
        est = prepare(job, aset).on(gpu, n)
        return _scoped_vram(row, est.vram_gb, est.vram_breakdown) <= target

    lo, hi = 64, 64
    if not fits(lo):
        return 0
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 24:  # 16 M tokens: nothing of the memory model bounds it
            return lo
    while hi > lo * 1.01 + 1:
        mid = int(math.sqrt(lo * hi))
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


# --- step-time model fit ---------------------------------------------------------------------------

PRIOR_SIGMA = math.log(3.0)  # weak: a prior counts like one row that is off by 3x


def _step_base() -> AssumptionSet:
    from tracker.estimate.assumptions import _unfitted

    return _unfitted("hf-peft")  # flops knobs shared by both step sets; the row names its stack


def _placed_gpus(row: MeasuredRow, aset: AssumptionSet) -> int:
    # The step model times DDP and FSDP explicitly; the legacy sets judged a DDP replica as one GPU.
    return row.gpus if aset.step_model else row.eval_gpus


@cache
def _raw_rows() -> tuple[tuple[MeasuredRow, RawStep, str], ...]:
    base = _step_base()
    out = []
    for r in load_rows():
        if not r.uses_tps or r.stack not in stack_names():
            continue
        g = _gpu(r.gpu)
        prepared = prepare(r.job(), base)
        assert prepared.stack is not None
        n = r.gpus
        raw = raw_step(prepared, prepared.stack, g, n, base.peak_flops(g.id, g.bf16_tflops))
        out.append((r, raw, efficiency_class(g.architecture, g.form_factor)))
    return tuple(out)


def _with(params: StepParams, values: dict[str, float]) -> StepParams:
    gemm = dict(params.gemm_fraction)
    non_gemm = dict(params.non_gemm)
    bw, oh = params.bandwidth_fraction, params.overhead_s
    for key, v in values.items():
        kind, _, name = key.partition(":")
        if kind == "gemm":
            gemm[name] = v
        elif kind == "non_gemm":
            non_gemm[name] = v
        elif key == "bandwidth_fraction":
            bw = v
        elif key == "overhead_s":
            oh = v
        elif key == "attention_vs_gemm":
            params = replace(params, attention_vs_gemm=v)
    for cls, rel in relative_classes().items():  # priors relative to the (fitted) Ampere fraction
        gemm[cls] = gemm["ampere"] * rel
    return replace(params, gemm_fraction=gemm, non_gemm=non_gemm, bandwidth_fraction=bw, overhead_s=oh)


def _predict(params: StepParams, raw: RawStep, cls: str) -> float:
    return step_tps(raw, step_terms(raw, cls, params)) / max(1, raw.replicas)


def fit_step(exclude_group: str | None = None) -> StepParams:
    """Fit the step model's free numbers to every tokens/s row (optionally without one source)."""
    prior = prior_params()
    data = [(r, raw, cls) for r, raw, cls in _raw_rows() if r.group != exclude_group]
    gf = raw_stacks_step()["gemm_fraction"]
    keys = [f"gemm:{c}" for c, v in gf.items() if v.get("fit") and any(d[2] == c for d in data)]
    keys += ["bandwidth_fraction", "overhead_s", "attention_vs_gemm"]
    keys += [f"non_gemm:{s}" for s in stack_names() if prior.source.get(f"non_gemm:{s}", "").startswith("fit")
             and any(d[0].stack == s for d in data)]  # fmt: skip
    if not data:
        return prior
    x0 = np.log(np.array([_value(prior, k) for k in keys]))

    def residuals(x: np.ndarray) -> np.ndarray:
        params = _with(prior, dict(zip(keys, np.exp(x).tolist(), strict=True)))
        fit = [math.log(_predict(params, raw, cls) / (r.tokens_per_second or 1.0)) for r, raw, cls in data]
        return np.concatenate([np.array(fit), (x - x0) / PRIOR_SIGMA])

    x, lam = x0.copy(), 1e-2
    res = residuals(x)
    for _ in range(60):
        jac = np.empty((len(res), len(x)))
        for j in range(len(x)):
            dx = np.zeros_like(x)
            dx[j] = 1e-5
            jac[:, j] = (residuals(x + dx) - res) / 1e-5
        step = np.linalg.solve(jac.T @ jac + lam * np.eye(len(x)), -jac.T @ res)
        trial = residuals(x + step)
        if trial @ trial < res @ res:
            x, res, lam = x + step, trial, lam * 0.3
            if float(np.max(np.abs(step))) < 1e-7:
                break
        else:
            lam *= 10.0
    values = dict(zip(keys, np.exp(x).tolist(), strict=True))
    params = _with(prior, values)
    source = dict(prior.source)
    for k in keys:
        n = sum(1 for r, _, cls in data if (k == f"gemm:{cls}" or k == f"non_gemm:{r.stack}"
                                            or not k.startswith(("gemm:", "non_gemm:"))))  # fmt: skip
        source[k] = f"fit ({n} rows)" + (f", without {exclude_group}" if exclude_group else "")
    for k, v in source.items():
        if v.startswith("fit:"):  # declared fittable but no row constrains it here
            source[k] = "prior (no rows): " + v[4:].strip()
    return replace(params, source=source)


def raw_stacks_step() -> dict[str, Any]:
    from tracker.estimate.stacks import raw_stacks_file

    step: dict[str, Any] = raw_stacks_file()["step"]
    return step


def _value(params: StepParams, key: str) -> float:
    kind, _, name = key.partition(":")
    if kind == "gemm":
        return params.gemm_fraction[name]
    if kind == "non_gemm":
        return params.non_gemm[name]
    return float(getattr(params, key))


@cache
def fitted_step_params() -> StepParams:
    """The fit of the step model on every calibration row (what `hf-peft`/`optimized` estimate with).

    The fit is deterministic in its inputs and takes ~0.1 s, which every command-line call would pay:
    it is kept in the user's cache directory under a digest of everything it depends on (the data files
    and the model's own code), so a changed row, prior or formula refits, and nothing else ever does."""
    path = fit_cache_path()
    if path is not None:
        try:
            return StepParams(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            pass  # absent, unreadable or from another layout: fit, and try to keep the result
    params = fit_step()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(asdict(params)))
            tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
        except OSError:
            pass  # a read-only home: the fit still stands for this process
    return params


def fit_cache_path() -> Path | None:
    here = Path(__file__).resolve().parent
    inputs = [*sorted(DATA_DIR.glob("*.toml")), *sorted(here.glob("*.py")), here.parent / "catalog" / "gpus.toml"]
    digest = hashlib.sha256()
    try:
        for f in inputs:
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
    except OSError:
        return None
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except (RuntimeError, KeyError):  # no home directory (a bare container user): just fit
        return None
    return Path(base) / "gpu-price-tracker" / f"step-fit-{digest.hexdigest()[:16]}.json"


_fit_cache_path = fit_cache_path  # the earlier private name


@cache
def loso_step_params(group: str) -> StepParams:
    return fit_step(exclude_group=group)

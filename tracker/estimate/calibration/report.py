"""Every measured row next to an assumption set's estimate of it, with the errors that judge the model.

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
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.assumptions import AssumptionSet, efficiency_class, get_assumptions
from tracker.estimate.calibration.fit import loso_step_params
from tracker.estimate.calibration.rows import MeasuredRow, gpu_spec, load_rows, rows_for
from tracker.estimate.core import prepare
from tracker.estimate.uncertainty import Residual


@dataclass(frozen=True, slots=True)
class RowResult:
    row: MeasuredRow
    in_set: bool  # the row's stack is one this set models (and, if fitted, was fitted to)
    estimated_tps: float | None  # per GPU
    estimated_vram_gb: float | None
    tps_error: float | None  # (estimate - measured) / measured
    tps_error_loo: float | None  # same, with the step model fitted without this row's source
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

    def per_class(self) -> dict[str, dict[str, Any]]:
        """Per card class (the efficiency class the bands use): rows, MdAPE and median signed error of
        tokens/s in-sample and leave-one-source-out, and of VRAM: where a class is biased, not only how far."""
        out: dict[str, dict[str, Any]] = {}
        by: dict[str, list[RowResult]] = {}
        for r in self.rows:
            if r.in_set and not r.problem:
                g = gpu_spec(r.row.gpu)
                by.setdefault(efficiency_class(g.architecture, g.form_factor), []).append(r)
        for cls, rows in sorted(by.items()):
            entry: dict[str, Any] = {}
            for attr, name in (("tps_error", "tokens_per_second"), ("tps_error_loo", "tokens_per_second_loso")):
                errs = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
                entry[f"{name}_rows"] = len(errs)
                entry[f"{name}_mdape"] = _mdape(errs)
                entry[f"{name}_median_signed"] = _round(statistics.median(errs), 4) if errs else None
            vram = [r.vram_error for r in rows if r.vram_error is not None]
            entry |= {"vram_rows": len(vram), "vram_mdape": _mdape(vram)}
            out[cls] = entry
        return out

    def card_ratios(self) -> list[dict[str, Any]]:
        """Every pair of rows of one source whose job differs only by the card: measured and estimated
        speed ratio (faster card / slower card), in-sample and with the source held out."""
        out = []
        rows = [r for r in self.rows if r.in_set and r.estimated_tps and r.row.uses_tps]
        for i, first in enumerate(rows):
            for second in rows[i + 1 :]:
                if first.row.gpu == second.row.gpu or _same_job(first.row) != _same_job(second.row):
                    continue
                # The faster card first: ratios read "H100 / A100 = 2.3".
                a, b = sorted((first, second), key=lambda r: -(r.row.tokens_per_second or 0.0))
                measured = (a.row.tokens_per_second or 0.0) / (b.row.tokens_per_second or 1.0)
                est = (a.estimated_tps or 0.0) / (b.estimated_tps or 1.0)
                loo = None
                if a.tps_error_loo is not None and b.tps_error_loo is not None:
                    loo = measured * (1 + a.tps_error_loo) / (1 + b.tps_error_loo)
                out.append(
                    {
                        "rows": [a.row.id, b.row.id],
                        "cards": [a.row.gpu, b.row.gpu],
                        "stack": a.row.stack,
                        "measured": round(measured, 3),
                        "estimated": round(est, 3),
                        "error": round(est / measured - 1, 4),
                        "estimated_loso": _round(loo, 3),
                        "error_loso": _round(None if loo is None else loo / measured - 1, 4),
                    }
                )
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
            "per_class": self.per_class(),
            "card_ratios": self.card_ratios(),
            "excluded_rows": [{"id": r.row.id, "why": r.row.exclude} for r in self.rows if r.row.exclude],
        }

    def as_dict(self) -> dict[str, Any]:
        if self.assumptions.step_model:
            return self.summary() | {
                "step": self.assumptions.describe()["step"],
                "rows": [r.as_dict() for r in self.rows],
            }
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
    old = [r.vram_error if not r.row.is_budget else r.vram_error_as_published for r in peaks + budgets]
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
    return (
        r.group,
        r.stack,
        r.model,
        r.method,
        r.rank,
        r.lora_targets,
        r.seq_len,
        r.batch,
        r.grad_checkpointing,
        r.gpus,
        r.parallelism,
        r.precision,
    )


def _round(value: float | None, places: int) -> float | None:
    return None if value is None else round(value, places)


def calibrate(assumptions: AssumptionSet | str | None = None, *, all_rows: bool = False) -> CalibrationReport:
    """Every measured row next to this set's estimate of it.

    By default only rows of the stacks the set models are listed (the seed models none in
    particular, so it is judged on all of them); `all_rows` lists the others too, marked
    `in_set = False` and left out of the medians.
    """
    aset = assumptions if isinstance(assumptions, AssumptionSet) else get_assumptions(assumptions)
    in_set_ids = {r.id for r in rows_for(aset)}
    results = []
    for row in load_rows():
        in_set = row.id in in_set_ids
        if not (in_set or all_rows):
            continue
        results.append(_evaluate(row, aset, in_set))
    return CalibrationReport(assumptions=aset, rows=tuple(results))


def _evaluate(row: MeasuredRow, aset: AssumptionSet, in_set: bool) -> RowResult:
    try:
        gpu = gpu_spec(row.gpu)
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


def _placed_gpus(row: MeasuredRow, aset: AssumptionSet) -> int:
    # The step model times DDP and FSDP explicitly; the legacy sets judged a DDP replica as one GPU.
    return row.gpus if aset.step_model else row.eval_gpus


def residual_table() -> tuple[Residual, ...]:
    """What the uncertainty bands are made of (data/residuals.toml): each row's log error under hf-peft,
    tokens/s leave-one-source-out and VRAM in-sample, with the row's stack, GPU class and method."""
    out = []
    for res in calibrate("hf-peft").rows:
        if res.problem or not res.in_set:
            continue
        g = gpu_spec(res.row.gpu)
        tps = res.tps_error_loo
        vram = res.vram_error
        out.append(
            Residual(
                id=res.row.id,
                stack=res.row.stack,
                cls=efficiency_class(g.architecture, g.form_factor),
                method=res.row.method,
                tps_log=math.log1p(tps) if tps is not None else None,
                vram_log=math.log1p(vram) if vram is not None else None,
            )
        )
    return tuple(out)

"""The step-time model's fit to the measured rows (tracker/estimate/step.py, data/calibration.toml).

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
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np

from tracker.estimate.assumptions import AssumptionSet, efficiency_class, unfitted
from tracker.estimate.calibration.rows import MeasuredRow, gpu_spec, load_rows
from tracker.estimate.core import prepare
from tracker.estimate.stacks import raw_stacks_file, stack_names
from tracker.estimate.step import (
    RawStep,
    StepParams,
    prior_params,
    raw_step,
    relative_classes,
    step_class,
    step_terms,
    sustained_peak,
)
from tracker.estimate.step import tokens_per_second as step_tps

# --- step-time model fit ---------------------------------------------------------------------------

PRIOR_SIGMA = math.log(3.0)  # weak: a prior counts like one row that is off by 3x


def _step_base() -> AssumptionSet:
    return unfitted("hf-peft")  # flops knobs shared by both step sets; the row names its stack


@cache
def _raw_rows() -> tuple[tuple[MeasuredRow, RawStep, str], ...]:
    base = _step_base()
    out = []
    for r in load_rows():
        if not r.uses_tps or r.stack not in stack_names():
            continue
        g = gpu_spec(r.gpu)
        prepared = prepare(r.job(), base)
        assert prepared.stack is not None
        n = r.gpus
        cls = step_class(g, efficiency_class(g.architecture, g.form_factor))
        peak = sustained_peak(g, cls, base.peak_flops(g.id, g.bf16_tflops))
        raw = raw_step(prepared, prepared.stack, g, n, peak)
        out.append((r, raw, cls))
    return tuple(out)


def _with(params: StepParams, values: dict[str, float]) -> StepParams:
    gemm = dict(params.gemm_fraction)
    non_gemm = dict(params.non_gemm)
    bw_rel = dict(params.bandwidth_relative)
    bw, oh = params.bandwidth_fraction, params.overhead_s
    for key, v in values.items():
        kind, _, name = key.partition(":")
        if kind == "gemm":
            gemm[name] = v
        elif kind == "non_gemm":
            non_gemm[name] = v
        elif kind == "bandwidth_relative":
            bw_rel[name] = v
        elif key == "bandwidth_fraction":
            bw = v
        elif key == "overhead_s":
            oh = v
        elif key == "attention_vs_gemm":
            params = replace(params, attention_vs_gemm=v)
    for cls, rel in relative_classes().items():  # priors relative to the (fitted) Ampere fraction
        gemm[cls] = gemm["ampere"] * rel
    return replace(
        params, gemm_fraction=gemm, non_gemm=non_gemm, bandwidth_fraction=bw, overhead_s=oh, bandwidth_relative=bw_rel
    )


def _predict(params: StepParams, raw: RawStep, cls: str) -> float:
    return step_tps(raw, step_terms(raw, cls, params)) / max(1, raw.replicas)


def fit_step(exclude_group: str | None = None) -> StepParams:
    """Fit the step model's free numbers to every tokens/s row (optionally without one source)."""
    prior = prior_params()
    data = [(r, raw, cls) for r, raw, cls in _raw_rows() if r.group != exclude_group]
    gf = raw_stacks_step()["gemm_fraction"]
    keys = [f"gemm:{c}" for c, v in gf.items() if v.get("fit") and any(d[2] == c for d in data)]
    br = raw_stacks_step().get("bandwidth_relative", {})
    keys += [f"bandwidth_relative:{c}" for c, v in br.items() if v.get("fit") and any(d[2] == c for d in data)]
    keys += ["bandwidth_fraction", "overhead_s", "attention_vs_gemm"]
    keys += [
        f"non_gemm:{s}"
        for s in stack_names()
        if prior.source.get(f"non_gemm:{s}", "").startswith("fit") and any(d[0].stack == s for d in data)
    ]
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
        n = sum(
            1
            for r, _, cls in data
            if (
                k in (f"gemm:{cls}", f"non_gemm:{r.stack}", f"bandwidth_relative:{cls}")
                or not k.startswith(("gemm:", "non_gemm:", "bandwidth_relative:"))
            )
        )
        source[k] = f"fit ({n} rows)" + (f", without {exclude_group}" if exclude_group else "")
    for k, v in source.items():
        if v.startswith("fit:"):  # declared fittable but no row constrains it here
            source[k] = "prior (no rows): " + v[4:].strip()
    return replace(params, source=source)


def raw_stacks_step() -> dict[str, Any]:
    step: dict[str, Any] = raw_stacks_file()["step"]
    return step


def _value(params: StepParams, key: str) -> float:
    kind, _, name = key.partition(":")
    if kind == "gemm":
        return params.gemm_fraction[name]
    if kind == "non_gemm":
        return params.non_gemm[name]
    if kind == "bandwidth_relative":
        return params.bandwidth_relative[name]
    return float(getattr(params, key))


@cache
def loso_step_params(group: str) -> StepParams:
    return fit_step(exclude_group=group)

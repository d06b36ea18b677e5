"""How sure an estimate is: bands from the leave-one-source-out residuals of the calibration rows.

Every tokens/s row of calibration.toml has a leave-one-source-out error: its estimate when the fit
never saw a row of its publication, against what was measured. Those errors, in log space, are the
honest spread of the model on a job like it. A job's band comes from the rows nearest to it:

    1. rows of its stack on its architecture class (same software, same kind of card)
    2. rows of any stack on its class                           spread × 1.15
    3. rows of its stack on other classes                       spread × 1.15, plus the class prior
    4. every row                                                spread × 1.3, plus the class prior

(the first level with at least MIN_ROWS rows wins). The spread is the root mean square of the log
errors, bias included, so a stack the model runs high on gets a wider band, not a shifted one. A
class without any measured row (B200, MI300X/MI325X, L40S, ...) adds `UNMEASURED_CLASS_LOG` in
quadrature: its GEMM fraction is a prior, not a fit, so no calibration residual can speak for it;
a stack without a measured row (hf-liger, torchtune, nemo) adds `UNMEASURED_STACK_LOG` the same way.
The band is ±Z × spread around the estimate (≈ 90 % if the log errors were normal).

VRAM is not fitted, so its residuals are in-sample; the band uses the rows of the job's stack and
method (else stack, else all), the same way. A budget row (a card size the run just fits into) enters
with the error calibration/report.py gives it: estimate / (budget × budget_fill) - 1, in its memory scope.

The residual table costs one refit per source, so it is stored as data (data/residuals.toml, written
with the step fit by `python -m tracker.estimate.calibration --write`; a test recomputes and compares)
and an estimate only reads it.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from tracker.estimate.architectures import DATA_DIR

RESIDUALS_FILE = DATA_DIR / "residuals.toml"
MIN_ROWS = 3
Z = 1.645  # two-sided 90 % of a normal
UNMEASURED_CLASS_LOG = 0.25  # ±25 % (1σ, log) for a GEMM fraction that is only a prior
UNMEASURED_STACK_LOG = 0.15  # ±15 % (1σ, log) for a stack whose non-GEMM multiplier is only a prior
MIN_LOG = 0.05  # never claim better than ±5 % per σ: launch jitter, clocks, data-loader stalls
LEVEL_WIDEN = {"stack×class": 1.0, "class": 1.15, "stack": 1.15, "all": 1.3}


@dataclass(frozen=True, slots=True)
class Residual:
    id: str
    stack: str
    cls: str
    method: str
    tps_log: float | None  # log(leave-one-source-out estimate / measured)
    vram_log: float | None  # log(estimate / measured), in-sample (VRAM is not fitted)


@dataclass(frozen=True, slots=True)
class Band:
    """A multiplicative band: the estimate × exp(±half_width_log)."""

    half_width_log: float
    level: str  # "stack×class" | "class" | "stack" | "all" | "method" ...
    rows: int
    spread_log: float  # RMS of the log errors of those rows
    measured_class: bool  # the class has at least one measured tokens/s row
    basis: str  # one line: how the band was derived

    @property
    def low(self) -> float:
        return math.exp(-self.half_width_log)

    @property
    def high(self) -> float:
        return math.exp(self.half_width_log)

    def describe(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "rows": self.rows,
            "spread_log": round(self.spread_log, 4),
            "half_width_pct": round((self.high - 1.0) * 100, 1),
            "measured_class": self.measured_class,
            "basis": self.basis,
        }


def _first_level(levels: tuple[tuple[str, list[Residual]], ...]) -> tuple[str, list[Residual]]:
    """The most specific level with enough rows (the last, every row, otherwise)."""
    return next((lv for lv in levels if len(lv[1]) >= MIN_ROWS), levels[-1])


def _rms(values: list[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values))


@cache
def residuals() -> tuple[Residual, ...]:
    """Each calibration row's log error (tokens/s leave-one-source-out, VRAM in-sample), as stored."""
    with RESIDUALS_FILE.open("rb") as fh:
        rows = tomllib.load(fh)["row"]
    return tuple(
        Residual(
            id=r["id"],
            stack=r["stack"],
            cls=r["cls"],
            method=r["method"],
            tps_log=r.get("tps_log"),
            vram_log=r.get("vram_log"),
        )  # absent: the row has no such figure
        for r in rows
    )


def measured_classes() -> frozenset[str]:
    return frozenset(r.cls for r in residuals() if r.tps_log is not None)


@cache
def tokens_band(stack: str, cls: str) -> Band:
    """Band on tokens/s (and so on hours and cost) for a job of `stack` on a card of class `cls`."""
    rows = [r for r in residuals() if r.tps_log is not None]
    measured = cls in measured_classes()
    levels = (
        ("stack×class", [r for r in rows if r.stack == stack and r.cls == cls]),
        ("class", [r for r in rows if r.cls == cls]),
        ("stack", [r for r in rows if r.stack == stack]),
        ("all", rows),
    )
    level, chosen = _first_level(levels)
    errs = [r.tps_log for r in chosen if r.tps_log is not None]
    spread = max(MIN_LOG, _rms(errs)) if errs else UNMEASURED_CLASS_LOG
    own = [r.tps_log for r in rows if r.stack == stack and r.tps_log is not None]
    if level == "class" and len(own) >= MIN_ROWS:
        # Other stacks' rows on the class say how well the class is known; the stack's own rows elsewhere
        # say how noisy the stack is: the wider of the two, so no stack looks surer on a class it never ran.
        spread = max(spread, _rms(own))
    sigma = spread * LEVEL_WIDEN[level]
    if not measured:
        sigma = math.hypot(sigma, UNMEASURED_CLASS_LOG)
    stack_measured = any(r.stack == stack for r in rows)
    if not stack_measured:
        sigma = math.hypot(sigma, UNMEASURED_STACK_LOG)
    where = {
        "stack×class": f"{stack} on {cls}",
        "class": f"any stack on {cls}",
        "stack": f"{stack} on other classes",
        "all": "every stack and class",
    }[level]
    basis = (
        f"leave-one-source-out errors of {len(errs)} rows ({where}), RMS {spread:.3f} in log"
        + (f", ×{LEVEL_WIDEN[level]:g} for a less specific level" if LEVEL_WIDEN[level] != 1 else "")
        + ("" if measured else f"; no measured row on {cls}: widened by a ±{UNMEASURED_CLASS_LOG:.0%} prior")
        + ("" if stack_measured else f"; no measured row of {stack}: widened by ±{UNMEASURED_STACK_LOG:.0%}")
        + f"; ±{Z:g}σ"
    )
    return Band(Z * sigma, level, len(errs), spread, measured, basis)


@cache
def vram_band(stack: str, method: str) -> Band:
    """Band on peak VRAM: in-sample residuals of the stack's rows of the method (VRAM is not fitted)."""
    rows = [r for r in residuals() if r.vram_log is not None]
    levels = (
        ("stack×method", [r for r in rows if r.stack == stack and r.method == method]),
        ("stack", [r for r in rows if r.stack == stack]),
        ("method", [r for r in rows if r.method == method]),
        ("all", rows),
    )
    level, chosen = _first_level(levels)
    errs = [r.vram_log for r in chosen if r.vram_log is not None]
    spread = max(MIN_LOG, _rms(errs)) if errs else UNMEASURED_CLASS_LOG
    widen = 1.0 if level == "stack×method" else 1.5
    basis = (
        f"in-sample errors of {len(errs)} VRAM rows ({level}: {stack}/{method}), RMS {spread:.3f} in log"
        + (" ×1.5" if widen != 1 else "")
        + f"; ±{Z:g}σ"
    )
    return Band(Z * spread * widen, level, len(errs), spread, True, basis)

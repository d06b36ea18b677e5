"""The fit as data: the two files an estimate reads instead of fitting, and how they are regenerated.

data/step_fit.toml holds the step model's parameters fitted to every calibration row (read by
`tracker.estimate.step.fitted_params`); data/residuals.toml holds each row's leave-one-source-out and
VRAM log errors (read by `tracker.estimate.uncertainty.residuals`, what the bands are made of). Both are
derived from calibration.toml, stacks.toml, the GPU catalog and the model's code: after changing any of
them, run

    python -m tracker.estimate.calibration --write

and commit the two files with the change. `--check` (exit status 1 when stale) is what
tests/tracker/estimate/test_stored_fit.py asserts, so a stale file fails the tests instead of
silently shipping an estimate the model no longer makes.
"""

from __future__ import annotations

import argparse
import math
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import tomli_w

from tracker.estimate.assumptions import get_assumptions
from tracker.estimate.calibration.fit import fit_step
from tracker.estimate.calibration.report import residual_table
from tracker.estimate.step import FIT_FILE, StepParams, fitted_params
from tracker.estimate.uncertainty import RESIDUALS_FILE, Residual, residuals, tokens_band, vram_band

COMMAND = "python -m tracker.estimate.calibration --write"
# A refit on another machine may differ in the last bits (BLAS summation order); anything past this
# is a real change of rows, priors, catalog or code.
REL_TOLERANCE = 1e-9
# Residuals are logs of measured/predicted, often near 0, where a relative bound means nothing: a refit with
# another numpy/BLAS moved one (0.0017) by 2e-11. An absolute 1e-9 on a log is one part in 1e9 of the ratio.
LOG_ABS_TOLERANCE = 1e-9

FIT_HEADER = f"""\
# The step-time model's parameters fitted to every measured row of calibration.toml
# (tracker/estimate/calibration/fit.py: fit_step). Generated, do not edit: regenerate with
#     {COMMAND}
# after changing calibration.toml, stacks.toml, the GPU catalog or the model's code.
# tests/tracker/estimate/test_stored_fit.py refits and checks this file is that fit.

"""
RESIDUALS_HEADER = f"""\
# Each calibration row's log error under hf-peft, what the uncertainty bands are made of
# (tracker/estimate/uncertainty.py): tps_log = log(leave-one-source-out estimate / measured tokens/s),
# vram_log = log(estimate / measured VRAM), in-sample; a key is absent when the row has no such figure.
# Generated, do not edit: regenerate with
#     {COMMAND}
# tests/tracker/estimate/test_stored_fit.py recomputes and checks this file is that table.

"""


def render_fit(params: StepParams) -> str:
    return FIT_HEADER + tomli_w.dumps(asdict(params))


def render_residuals(rows: Sequence[Residual]) -> str:
    # TOML has no null: a figure the row does not have is left out (uncertainty.residuals reads it as None).
    table = [{k: v for k, v in asdict(r).items() if v is not None} for r in rows]
    return RESIDUALS_HEADER + tomli_w.dumps({"row": table})


def close(stored: Any, fresh: Any, abs_tol: float = 1e-15) -> bool:
    """Equal, floats to REL_TOLERANCE (or `abs_tol`), through dicts, lists and dataclass fields."""
    if isinstance(stored, float) and isinstance(fresh, float):
        return math.isclose(stored, fresh, rel_tol=REL_TOLERANCE, abs_tol=abs_tol)
    if isinstance(stored, dict) and isinstance(fresh, dict):
        return stored.keys() == fresh.keys() and all(close(stored[k], fresh[k], abs_tol) for k in stored)
    if isinstance(stored, list | tuple) and isinstance(fresh, list | tuple):
        return len(stored) == len(fresh) and all(close(a, b, abs_tol) for a, b in zip(stored, fresh, strict=True))
    return bool(stored == fresh)


def stale() -> list[str]:
    """The stored files that differ from a refit (empty when both are current)."""
    out = []
    if not close(asdict(fitted_params()), asdict(fit_step())):
        out.append(str(FIT_FILE.name))
    if not close([asdict(r) for r in residuals()], [asdict(r) for r in residual_table()], LOG_ABS_TOLERANCE):
        out.append(str(RESIDUALS_FILE.name))
    return out


def write() -> None:
    params = fit_step()
    text = render_fit(params)
    assert StepParams(**tomllib.loads(text)) == params  # the file reads back as exactly this fit
    FIT_FILE.write_text(text)
    # The residual table is computed under hf-peft as it now reads: with the fit just written.
    fitted_params.cache_clear()
    get_assumptions.cache_clear()
    RESIDUALS_FILE.write_text(render_residuals(residual_table()))
    for cached in (residuals, tokens_band, vram_band):
        cached.cache_clear()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tracker.estimate.calibration",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="refit and rewrite both data files")
    action.add_argument("--check", action="store_true", help="exit 1 when a data file is not the refit")
    args = parser.parse_args(argv)
    if args.write:
        write()
        print(f"wrote {FIT_FILE.name} and {RESIDUALS_FILE.name}")
        return 0
    behind = stale()
    for name in behind:
        print(f"{name} is not the refit: run {COMMAND}", file=sys.stderr)
    if not behind:
        print(f"{FIT_FILE.name} and {RESIDUALS_FILE.name} are the refit")
    return 1 if behind and args.check else 0

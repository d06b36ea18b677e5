"""Measured runs (tracker/estimate/data/calibration.toml): fitting the model to them and reporting its errors.

rows.py loads the measured runs, fit.py fits the step-time model's shared numbers to them, report.py
sets every row beside an assumption set's estimate (in-sample and leave-one-source-out errors), and
stored.py writes what the estimate reads instead of fitting: `python -m tracker.estimate.calibration
--write` regenerates data/step_fit.toml and data/residuals.toml, `--check` says whether they are stale.
"""

from tracker.estimate.calibration.fit import fit_step, loso_step_params
from tracker.estimate.calibration.report import CalibrationReport, RowResult, budget_context, calibrate
from tracker.estimate.calibration.rows import MeasuredRow, load_rows

__all__ = [
    "CalibrationReport",
    "MeasuredRow",
    "RowResult",
    "budget_context",
    "calibrate",
    "fit_step",
    "load_rows",
    "loso_step_params",
]

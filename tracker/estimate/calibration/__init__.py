"""Measured runs (tracker/estimate/data/calibration.toml): fitting the model to them and reporting its errors.

rows.py loads the measured runs, fit.py fits the step-time model's shared numbers to them, report.py
sets every row beside an assumption set's estimate (in-sample and leave-one-source-out errors).
"""

from tracker.estimate.calibration.fit import fit_cache_path, fit_step, fitted_step_params, loso_step_params
from tracker.estimate.calibration.report import CalibrationReport, RowResult, budget_context, calibrate
from tracker.estimate.calibration.rows import MeasuredRow, load_rows

__all__ = [
    "CalibrationReport",
    "MeasuredRow",
    "RowResult",
    "budget_context",
    "calibrate",
    "fit_cache_path",
    "fit_step",
    "fitted_step_params",
    "load_rows",
    "loso_step_params",
]

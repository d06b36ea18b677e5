"""The fit as data: data/step_fit.toml and data/residuals.toml are what a refit gives, an estimate only
reads them, and an estimate in a process with a read-only, empty home directory works and writes nothing."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from tracker.estimate import get_assumptions
from tracker.estimate.calibration import stored
from tracker.estimate.calibration.fit import fit_step
from tracker.estimate.calibration.report import residual_table
from tracker.estimate.step import FIT_FILE, StepParams, fitted_params
from tracker.estimate.uncertainty import RESIDUALS_FILE, Residual, residuals

REPO = Path(__file__).resolve().parents[3]


def test_the_stored_step_fit_is_the_refit():
    fresh, kept = fit_step(), fitted_params()
    assert kept.source == fresh.source  # which numbers are fitted, on how many rows: exactly
    for name, value in asdict(fresh).items():
        if isinstance(value, float):
            assert getattr(kept, name) == pytest.approx(value, rel=stored.REL_TOLERANCE), name
        elif isinstance(value, dict) and name != "source":
            assert getattr(kept, name).keys() == value.keys(), name
            for key, v in value.items():
                assert getattr(kept, name)[key] == pytest.approx(v, rel=stored.REL_TOLERANCE), (name, key)
    assert stored.close(asdict(kept), asdict(fresh))


def test_the_stored_residual_table_is_the_recomputed_one():
    fresh, kept = residual_table(), residuals()
    assert [(r.id, r.stack, r.cls, r.method) for r in kept] == [(r.id, r.stack, r.cls, r.method) for r in fresh]
    for k, f in zip(kept, fresh, strict=True):
        for figure in ("tps_log", "vram_log"):
            a, b = getattr(k, figure), getattr(f, figure)
            assert (a is None) == (b is None), (k.id, figure)
            if a is not None:
                assert a == pytest.approx(b, rel=stored.REL_TOLERANCE, abs=stored.LOG_ABS_TOLERANCE), (k.id, figure)
    assert stored.stale() == []
    assert any(r.tps_log is None for r in kept) and any(r.vram_log is None for r in kept)  # both absences kept


def test_the_step_sets_estimate_with_the_stored_fit():
    assert get_assumptions("hf-peft").step_params == get_assumptions("optimized").step_params == fitted_params()


def test_the_files_name_their_regeneration_command_and_read_back_exactly():
    for path in (FIT_FILE, RESIDUALS_FILE):
        assert "python -m tracker.estimate.calibration --write" in path.read_text().split("\n\n")[0], path
    params = fit_step()
    assert StepParams(**tomllib.loads(stored.render_fit(params))) == params
    rows = (Residual("a", "hf", "ampere", "lora", 0.1, None), Residual("b", "hf", "hopper", "full", None, -0.2))
    back = tomllib.loads(stored.render_residuals(rows))["row"]
    assert back == [
        {"id": "a", "stack": "hf", "cls": "ampere", "method": "lora", "tps_log": 0.1},
        {"id": "b", "stack": "hf", "cls": "hopper", "method": "full", "vram_log": -0.2},
    ]


def test_a_changed_fit_is_caught_as_stale():
    kept = asdict(fitted_params())
    moved = asdict(replace(fitted_params(), overhead_s=fitted_params().overhead_s * (1 + 1e-6)))
    assert stored.close(kept, kept) and not stored.close(kept, moved)
    assert not stored.close({"gemm": {"ampere": 0.7}}, {"gemm": {"ampere": 0.7, "hopper": 0.6}})
    assert not stored.close([1.0], [1.0, 2.0]) and not stored.close("fit (12 rows)", "fit (13 rows)")
    assert stored.close(math.pi, math.pi * (1 + stored.REL_TOLERANCE / 10))
    # A log residual near 0 is compared absolutely: last-bit noise passes, a real change does not.
    assert stored.close([0.0017113283590296975], [0.0017113283371837313], stored.LOG_ABS_TOLERANCE)
    assert not stored.close([0.0017], [0.0018], stored.LOG_ABS_TOLERANCE)


def test_check_passes_on_the_shipped_files(capsys):
    assert stored.main(["--check"]) == 0
    assert "are the refit" in capsys.readouterr().out


# An estimate as a command-line user runs it, in a process whose home is read-only and empty and with no
# XDG directory set. Root ignores the mode bits, so "writes nothing" is checked by listing the directories.
ESTIMATE = """
import json, sys
import tracker.estimate.calibration.fit as fit, tracker.estimate.calibration.report as report

def refuse(*args, **kwargs):
    raise AssertionError("an estimate must read the stored fit, never fit")

fit.fit_step = report.calibrate = report.residual_table = refuse
from tracker.estimate.service import EstimateRequest, run_estimate

fine_tune = run_estimate(EstimateRequest(model="llama-3.1-8b", method="qlora", tokens="22.5M", price="2.69"))
serving = run_estimate(EstimateRequest(kind="inference", model="llama-3.1-8b", gpu="H100"))
row = fine_tune["rows"][0]
print(json.dumps({"rows": len(fine_tune["rows"]), "band": row["band"] is not None,
                  "low": row["tokens_per_second_low"], "tps": row["tokens_per_second"],
                  "serving_rows": len(serving["rows"])}))
"""


def _isolated_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env |= {"HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(REPO)}
    return env


@pytest.mark.parametrize("how", ["library", "cli"])
def test_an_estimate_with_a_read_only_empty_home_works_and_writes_nothing(tmp_path, how):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    if how == "library":
        argv = [sys.executable, "-c", ESTIMATE]
    else:
        argv = [
            sys.executable,
            "-c",
            "from tracker.cli import main; main()",
            "estimate",
            "--model",
            "llama-3.1-8b",
            "--tokens",
            "22.5M",
            "--gpu",
            "H100",
            "--json",
        ]
    home.chmod(0o555)
    cwd.chmod(0o555)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=_isolated_env(home), capture_output=True, text=True, timeout=300)
    finally:
        home.chmod(0o755)
        cwd.chmod(0o755)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list(home.iterdir()) == [] and list(cwd.iterdir()) == []
    out = json.loads(proc.stdout)
    if how == "library":
        assert out["rows"] > 10 and out["band"] and out["low"] < out["tps"] and out["serving_rows"] >= 1
    else:
        assert out["rows"] and out["rows"][0]["band"] is not None

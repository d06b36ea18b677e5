"""Workloads for planner tests, and the one figure they take from the estimate model by hand."""

from __future__ import annotations

from typing import Any

from tracker.catalog.gpus import get_catalog
from tracker.estimate import make_job, prepare

# Workload documents as a user writes them (JSON/YAML objects), the shape validate_mix takes.
SMALL: dict[str, Any] = {
    "name": "small",
    "kind": "fine-tune",
    "job": {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"},
    "volume": {"runs_per_month": 10},
}
BIG: dict[str, Any] = {
    "name": "big",
    "kind": "fine-tune",
    "job": {"model": "llama-3.1-70b", "method": "qlora", "tokens": "10M"},
    "volume": {"runs_per_month": 4},
}


def hours_per_run(job: dict, gpu: str, gpus: int = 1) -> float:
    """The estimate's hours for one run of `job` on `gpus` × `gpu` (it must fit)."""
    spec = make_job(job["model"], job["method"], tokens=job["tokens"])
    est = prepare(spec).on(get_catalog().get(gpu), gpus)
    assert est.fits
    return est.hours

"""The serving estimate's shell (tracker/estimate/serving/service.py): which machine each card is shown on."""

from __future__ import annotations

from tracker.estimate.service import EstimateRequest, run_estimate


def test_a_tensor_parallel_job_without_a_gpu_count_is_shown_on_the_machines_it_divides() -> None:
    # No GPU count: each card on the smallest machine that fits, among those the TP degree divides
    # (a 1-GPU machine cannot host TP 2; trying it first answered 422 for a valid job).
    result = run_estimate(EstimateRequest(kind="inference", model="llama-3.1-8b", tensor_parallel=2, gpu="H100 SXM"))
    (row,) = result["rows"]
    assert row["gpus"] == 2 and row["tensor_parallel"] == 2 and row["replicas"] == 1 and row["fits"]
    wide = run_estimate(EstimateRequest(kind="inference", model="llama-3.1-70b", tensor_parallel=16, gpu="H100 SXM"))
    assert [(r["gpus"], r["tensor_parallel"]) for r in wide["rows"]] == [(16, 16)]

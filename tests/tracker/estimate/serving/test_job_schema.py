"""`kind` in the one job schema: fine-tuning jobs validate as before; a field of the other kind is refused by name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tracker.estimate import JobInput
from tracker.estimate.job import FINE_TUNE_ONLY, INFERENCE_ONLY


def _error(**kwargs: object) -> tuple[str, str]:
    with pytest.raises(ValidationError) as exc:
        JobInput(**kwargs)  # type: ignore[arg-type]
    err = exc.value.errors(include_url=False)[0]
    return str(err["loc"][0]), str(err["msg"])


def test_default_kind_is_fine_tune_and_its_spec_is_unchanged() -> None:
    job = JobInput(model="llama-3.1-8b", tokens="22.5M", method="lora", rank=8, precision="bf16")
    assert job.kind == "fine-tune"
    assert job.spec().method == "lora" and job.spec().rank == 8
    assert "kind" not in job.saved()  # an alert saved before kind existed reads back the same


@pytest.mark.parametrize("field", ["prompt_tokens", "output_tokens", "concurrency"])
def test_serving_field_on_a_fine_tune_job_is_refused_by_name(field: str) -> None:
    loc, msg = _error(model="llama-3.1-8b", tokens="1M", **{field: 4})
    assert loc == field and "serving" in msg


@pytest.mark.parametrize(
    ("field", "value"),
    [("rank", 8), ("method", "full"), ("tokens", "1M"), ("seq_len", 4096), ("stack", "unsloth"), ("grad_accum", 4)],
)
def test_fine_tune_field_on_an_inference_job_is_refused_by_name(field: str, value: object) -> None:
    loc, msg = _error(kind="inference", model="llama-3.1-8b", **{field: value})
    assert loc == field and "fine-tuning" in msg


def test_precision_is_widened_per_kind() -> None:
    assert _error(model="llama-3.1-8b", tokens="1M", precision="fp8")[0] == "precision"
    assert _error(kind="inference", model="llama-3.1-8b", precision="mixed")[0] == "precision"
    assert _error(model="llama-3.1-8b", tokens="1M", precision="fp4")[0] == "precision"
    assert JobInput(kind="inference", model="llama-3.1-8b", precision="int4").serving_spec().precision == "int4"


def test_every_inference_field_exists_and_defaults_to_unset() -> None:
    for name in (*FINE_TUNE_ONLY, *INFERENCE_ONLY):
        assert name in JobInput.model_fields
    for name in INFERENCE_ONLY:
        assert JobInput.model_fields[name].default is None
    assert _error(kind="training", model="llama-3.1-8b")[0] == "kind"


@pytest.mark.parametrize(
    ("field", "value"),
    [("rank", 16), ("method", "qlora"), ("seq_len", 2048), ("epochs", 1), ("packing", True), ("grad_accum", 1)],
)
def test_a_fine_tune_field_given_at_its_default_is_still_refused_on_an_inference_job(field: str, value: object) -> None:
    # A fine-tuning job pasted into an inference request keeps its values, most of them the defaults.
    loc, msg = _error(kind="inference", model="llama-3.1-8b", **{field: value})
    assert loc == field and "fine-tuning" in msg


def test_the_command_line_does_not_count_options_left_at_their_default_as_given() -> None:
    from tracker.cli.job_options import JOB_OPTION_NAMES, build_job

    every = {n: JobInput.model_fields[n].default for n in JOB_OPTION_NAMES} | {"model": "llama-3.1-8b"}
    job = build_job(every | {"kind": "inference", "concurrency": 8})
    assert job.serving_spec().concurrency == 8 and job.saved() == {
        "kind": "inference",
        "model": "llama-3.1-8b",
        "concurrency": 8,
    }

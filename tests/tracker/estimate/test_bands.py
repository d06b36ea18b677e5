"""Uncertainty bands (tracker/estimate/uncertainty.py), gradient accumulation, step terms by hand."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import InvalidJob, JobInput, calibrate, get_assumptions, load_rows, make_job, prepare
from tracker.estimate.assumptions import efficiency_class
from tracker.estimate.uncertainty import MIN_ROWS, UNMEASURED_CLASS_LOG, Z, residuals, tokens_band, vram_band
from tracker.market.rank import _mark_within_band


def _est(gpu="A100-SXM-80GB", method="lora", stack="hf", assumptions="hf-peft", gpus=1, price="2.00", **job):
    j = make_job("llama-3.1-8b", method, rank=16, seq_len=2048, batch=4, tokens="20M", stack=stack, **job)
    return prepare(j, assumptions).on(get_catalog().get(gpu), gpus, price_per_gpu_hour=price)


def test_band_brackets_the_estimate_and_hours_and_cost_follow_it():
    e = _est()
    assert e.tokens_per_second_low < e.tokens_per_second < e.tokens_per_second_high
    assert e.hours_low < e.hours < e.hours_high
    assert e.cost_per_run_low < e.cost_per_run < e.cost_per_run_high
    # hours = tokens / (tokens/s × 3600): the slow end of the band is the long, dear end
    assert e.hours_high == pytest.approx(20e6 / e.tokens_per_second_low / 3600)
    assert float(e.cost_per_run_high) == pytest.approx(2.00 * e.hours_high, rel=1e-4)
    d = e.as_dict()
    assert d["tokens_per_second_low"] < d["tokens_per_second"] < d["tokens_per_second_high"]
    assert d["vram_gb_low"] < d["vram_gb"] < d["vram_gb_high"]
    assert d["band"]["efficiency_class"] == "ampere"
    assert d["band"]["tokens_per_second"]["rows"] >= MIN_ROWS
    assert "leave-one-source-out" in d["band"]["tokens_per_second"]["basis"]


def test_band_is_symmetric_in_log_and_its_width_is_z_times_the_rms_of_the_rows():
    band = tokens_band("hf", "ampere")
    assert band.level == "stack×class"
    errs = [r.tps_log for r in residuals() if r.stack == "hf" and r.cls == "ampere" and r.tps_log is not None]
    assert band.rows == len(errs) >= MIN_ROWS
    assert band.half_width_log == pytest.approx(Z * math.sqrt(sum(e * e for e in errs) / len(errs)))
    assert band.low * band.high == pytest.approx(1.0)


@pytest.mark.parametrize("gpu", ["B200-SXM-180GB", "MI300X-192GB", "MI325X-256GB", "L40S-48GB"])
def test_a_class_without_measured_rows_gets_a_wider_band(gpu):
    measured = _est("A100-SXM-80GB").band
    unmeasured = _est(gpu).band
    assert not unmeasured.measured_class and measured.measured_class
    assert unmeasured.half_width_log > measured.half_width_log
    assert unmeasured.half_width_log >= Z * UNMEASURED_CLASS_LOG  # the class prior alone
    assert "no measured row" in unmeasured.basis


def test_the_band_contains_most_measured_rows_held_out():
    """Each row's leave-one-source-out estimate with its band: the measured value is inside for most."""
    rep = calibrate("hf-peft")
    inside = total = 0
    for res in rep.rows:
        if res.tps_error_loo is None:
            continue
        g = get_catalog().get(res.row.gpu)
        band = tokens_band(res.row.stack, efficiency_class(g.architecture, g.form_factor))
        measured = res.row.tokens_per_second
        assert measured is not None  # a held-out rate error needs a measured rate
        est = measured * (1 + res.tps_error_loo)
        total += 1
        inside += est * band.low <= measured <= est * band.high
    assert total >= 30 and inside / total >= 0.8, (inside, total)


def test_vram_band_contains_most_measured_rows():
    rep = calibrate("hf-peft")
    rows = [(r.row, r.vram_error) for r in rep.rows if r.vram_error is not None]
    inside = sum(
        1
        for row, err in rows
        if vram_band(row.stack, row.method).low <= 1 / (1 + err) <= vram_band(row.stack, row.method).high
    )
    assert len(rows) >= 30 and inside / len(rows) >= 0.8


def test_seed_has_no_band_and_keeps_its_fields():
    e = _est(assumptions="seed", stack=None)
    assert e.band is None and e.tokens_per_second_low is None and e.cost_per_run_low is None
    assert e.as_dict()["band"] is None


@pytest.mark.parametrize(
    ("gpu", "method"),
    [("RTX4090-24GB", "lora"), ("RTX4090-24GB", "full"), ("H100-SXM-80GB", "qlora"), ("RTX5090-32GB", "lora")],
)
def test_fits_band_compares_both_ends_with_the_card(gpu, method):
    d = _est(gpu, method).as_dict()
    lo, hi, card = d["vram_gb_low"], d["vram_gb_high"], d["memory_gb"]
    assert d["fits_band"] == ("yes" if hi <= card else "maybe" if lo <= card else "no")
    assert (d["fits_band"] == "no") <= (not d["fits"])  # "no" only when the estimate itself does not fit


def _row(gpu, cost, tps=1000.0, lo=0.8, hi=1.25, gpus=1.0, fits=True):
    return {
        "gpu": gpu,
        "gpus": gpus,
        "fits": fits,
        "cost_per_run": Decimal(str(cost)),
        "hours": cost,
        "usd_per_mtok": None,
        "tokens_per_second": tps,
        "tokens_per_second_low": tps * lo,
        "tokens_per_second_high": tps * hi,
    }


def test_within_band_of_best_overlaps_bands_but_not_for_the_same_card():
    rows = [_row("A", 10), _row("B", 12), _row("C", 20), _row("A", 11), _row("D", 13)]
    rows[4]["tokens_per_second_low"] = rows[4]["tokens_per_second_high"] = None
    _mark_within_band(rows, "cost_per_run")
    # best A: 10 × [0.8, 1.25] = [8, 12.5]; B: 12 × [0.8, 1.25] = [9.6, 15] overlaps; C: [16, 25] does not
    assert [r["within_band_of_best"] for r in rows] == [True, True, False, False, None]


def test_rank_rows_carry_the_band(monkeypatch):
    from tracker.market.rank import _band_fields

    out = _band_fields({"band_low": 0.5, "band_high": 2.0}, Decimal("3"), 10.0, 100.0, True)
    assert out["hours_low"] == 5.0 and out["hours_high"] == 20.0
    assert out["cost_per_run_low"] == Decimal("15") and out["cost_per_run_high"] == Decimal("60")
    assert out["tokens_per_second_low"] == 50.0 and out["tokens_per_second_high"] == 200.0
    assert _band_fields({"band_low": None, "band_high": None}, None, 1.0, 1.0, False)["hours_low"] is None


# --- gradient accumulation and hand-computed step terms -------------------------------------------


def test_grad_accum_amortises_the_optimizer_and_ddp_all_reduce_only():
    one = _est("A100-SXM-80GB", "full", gpus=1)
    four = _est("A100-SXM-80GB", "full", gpus=1, grad_accum=4)
    t1, t4 = one.step_time_breakdown, four.step_time_breakdown
    assert t4["optimizer"] == pytest.approx(t1["optimizer"] / 4)
    for term in ("gemm", "attention", "activations", "logits", "overhead"):
        assert t4[term] == pytest.approx(t1[term]), term
    assert four.tokens_per_second > one.tokens_per_second
    ddp1 = _est("RTX4090-24GB", "lora", gpus=2, parallel="ddp")
    ddp8 = _est("RTX4090-24GB", "lora", gpus=2, parallel="ddp", grad_accum=8)
    assert ddp8.raw_step.comm_bytes == pytest.approx(ddp1.raw_step.comm_bytes / 8)


def test_grad_accum_is_validated_and_in_the_schema():
    with pytest.raises(InvalidJob) as err:
        make_job("llama-3.1-8b", "lora", tokens="1M", grad_accum=0)
    assert err.value.field == "grad_accum"
    job = JobInput(model="llama-3.1-8b", method="lora", tokens="1M", grad_accum=4).spec()
    assert job.grad_accum == 4 and job.describe()["grad_accum"] == 4


def test_full_finetune_optimizer_term_by_hand():
    """Llama-3.1-8B full fine-tune, pure bf16 AdamW (hf default), one A100 80GB, 8 micro-batches."""
    p = get_assumptions("hf-peft").step_params
    assert p is not None  # hf-peft carries the fitted step model
    e = _est("A100-SXM-80GB", "full", grad_accum=8)
    n = e.prepared.job.model.params.total
    # weights 2 B + grads 2 B + m, v 2×2 B = 8 B/param, read and written 1.75×, once per 8 micro-batches
    assert e.step_time_breakdown["optimizer"] == pytest.approx(n * 8 * 1.75 / 8 / (2.039e12 * p.bandwidth_fraction))
    assert e.step_time_breakdown["adapters"] == 0


def test_qlora_dequant_and_the_cdna3_bandwidth_prior_by_hand():
    """QLoRA on an MI300X: NF4 (4.127 bits) read + bf16 written per frozen linear, 3 passes with
    checkpointing; ROCm's memory-bound kernels at bandwidth_relative × the shared fraction."""
    p = get_assumptions("hf-peft").step_params
    assert p is not None  # hf-peft carries the fitted step model
    e = _est("MI300X-192GB", "qlora")
    linear = e.prepared.job.model.params.linear
    bw = 5.3e12 * p.bandwidth_fraction * p.bandwidth_relative["cdna3"]
    assert p.bandwidth_relative["cdna3"] < 1
    assert e.step_time_breakdown["dequant"] == pytest.approx(linear * (4.127 / 8 + 2) * 3 / bw)


def test_attention_on_hopper_runs_below_ampere_rate_by_the_fa2_prior():
    p = get_assumptions("hf-peft").step_params
    assert p is not None  # hf-peft carries the fitted step model
    h = _est("H100-SXM-80GB").step_time_breakdown["attention"]
    a = _est("A100-SXM-80GB").step_time_breakdown["attention"]
    # same FLOPs; time ∝ 1 / (peak × GEMM fraction × attention factor × class factor)
    expected = (312e12 * p.gemm("ampere")) / (989e12 * p.gemm("hopper") * p.attention_relative["hopper"])
    assert h / a == pytest.approx(expected)


def test_llm_foundry_rows_pin_the_hopper_gemm_fraction():
    p = get_assumptions("hf-peft").step_params
    assert p is not None  # hf-peft carries the fitted step model
    assert p.source["gemm:hopper"].startswith("fit")
    assert any(r.gpu == "H100-SXM-80GB" and r.uses_tps for r in load_rows())
    # H100 reaches a lower share of its peak than A100 (llm-foundry MFU 40-46 % against 54-64 %)
    assert 0.65 <= p.gemm("hopper") / p.gemm("ampere") <= 0.9


@pytest.mark.parametrize("stack", ["hf-liger", "torchtune", "nemo"])
def test_a_stack_without_measured_rows_gets_a_wider_band(stack):
    assert not any(r.stack == stack and r.uses_tps for r in load_rows())
    assert tokens_band(stack, "ampere").half_width_log > tokens_band("torchtune-compile", "ampere").half_width_log
    assert tokens_band(stack, "ampere").half_width_log > tokens_band("hf", "ampere").half_width_log
    assert f"no measured row of {stack}" in tokens_band(stack, "ampere").basis


def test_a_stack_is_never_surer_on_a_class_it_has_no_row_on():
    # hf has no H100 row (the H100 rows are llm-foundry's): its band there is at least its own spread.
    assert tokens_band("hf", "hopper").level == "class"
    assert tokens_band("hf", "hopper").half_width_log >= tokens_band("hf", "ampere").half_width_log

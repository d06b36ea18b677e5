"""The fine-tuning job options of issue #25 item 5: selective activation checkpointing, the loss kind
(materialized / chunked / fused) and a tensor-parallel degree inside FSDP, plus the L40 timed as the
half-rate card it is. Each value is checked against the arithmetic the model states."""

from __future__ import annotations

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import InvalidJob, JobInput, make_job, prepare
from tracker.estimate.assumptions import efficiency_class
from tracker.estimate.stacks import get_stack, loss_kinds, selective_checkpointing
from tracker.estimate.step import fitted_params, step_class

GB = 1e9


def gpu(gpu_id: str):  # type: ignore[no-untyped-def]
    return get_catalog().get(gpu_id)


# --- selective activation checkpointing ---------------------------------------------------------------


def _selective(selective: bool, checkpointing: bool = True, stack: str = "torchtune"):  # type: ignore[no-untyped-def]
    job = make_job(
        "llama-3.1-8b",
        "full",
        tokens=1e6,
        seq_len=4096,
        batch=1,
        stack=stack,
        grad_checkpointing=checkpointing,
        selective_checkpointing=selective,
    )
    return prepare(job, "hf-peft")


def test_selective_checkpointing_keeps_the_gemm_outputs_of_every_layer() -> None:
    arch = _selective(True).job.model
    sel = selective_checkpointing()
    per_token = sel.per_hidden * arch.hidden + sel.per_kv * arch.kv_dim + sel.per_intermediate * arch.intermediate
    parts = _selective(True).memory.components
    assert parts["activations"] == pytest.approx(arch.layers * 4096 * per_token)
    assert parts["recompute_working_set"] == 0.0
    full, none = _selective(False).memory.components, _selective(False, checkpointing=False).memory.components
    assert full["activations"] + full["recompute_working_set"] < parts["activations"] < none["activations"]


def test_selective_checkpointing_reruns_no_gemm() -> None:
    selective, full, none = _selective(True), _selective(False), _selective(False, checkpointing=False)
    assert selective.flops.dense == none.flops.dense < full.flops.dense  # 6N, not 8N
    card = gpu("H100-SXM-80GB")
    t_sel, t_full, t_none = (p.on(card).step_time_breakdown for p in (selective, full, none))
    assert t_sel is not None and t_full is not None and t_none is not None
    assert t_sel["gemm"] == pytest.approx(t_none["gemm"]) and t_sel["gemm"] < t_full["gemm"]
    # ...but the elementwise ops are recomputed, as with full checkpointing.
    assert t_sel["activations"] == pytest.approx(t_full["activations"])
    assert t_sel["activations"] > t_none["activations"]


def test_selective_checkpointing_where_the_stack_does_not_offer_it_is_refused_by_name() -> None:
    with pytest.raises(InvalidJob) as err:
        _selective(True, stack="hf")
    assert err.value.field == "selective_checkpointing"
    with pytest.raises(InvalidJob) as err:
        _selective(True, checkpointing=False)
    assert err.value.field == "selective_checkpointing"
    # No stack named: checked against the assumption set's default stack (hf-peft: hf).
    job = make_job("llama-3.1-8b", "full", tokens=1e6, selective_checkpointing=True)
    with pytest.raises(InvalidJob) as err:
        prepare(job, "hf-peft")
    assert err.value.field == "selective_checkpointing"


# --- the loss: materialized, chunked, fused -----------------------------------------------------------


def _loss(loss: str | None, stack: str = "hf", seq_len: int = 8192):  # type: ignore[no-untyped-def]
    job = make_job("llama-3.1-8b", "full", tokens=1e6, seq_len=seq_len, batch=1, stack=stack, loss=loss)
    return prepare(job, "hf-peft")


def test_materialized_logits_are_the_whole_micro_batch_and_a_fused_loss_one_chunk() -> None:
    vocab = _loss(None).job.model.vocab
    per_vocab = get_stack("hf").memory.logits_bytes_per_vocab
    assert _loss(None).memory.components["logits"] == pytest.approx(8192 * vocab * per_vocab)  # ~10.5 GB
    chunk = loss_kinds()["fused"].chunk_tokens
    assert _loss("fused").memory.components["logits"] == pytest.approx(chunk * vocab * per_vocab)
    assert _loss("materialized").memory.components == _loss(None).memory.components  # hf's own loss


def test_the_loss_kind_sets_the_logits_traffic_of_the_step() -> None:
    card = gpu("A100-SXM-80GB")
    t_mat, t_fused = _loss("materialized").on(card), _loss("fused").on(card)
    assert t_mat.step_time_breakdown is not None and t_fused.step_time_breakdown is not None
    ratio = t_fused.step_time_breakdown["logits"] / t_mat.step_time_breakdown["logits"]
    assert ratio == pytest.approx(loss_kinds()["fused"].traffic / get_stack("hf").logits_traffic)
    assert t_fused.tokens_per_second > t_mat.tokens_per_second and t_fused.vram_gb < t_mat.vram_gb - 8


def test_torchtune_runs_its_chunked_loss_or_a_materialized_one_and_nothing_else() -> None:
    assert _loss("chunked", stack="torchtune").memory.components == _loss(None, stack="torchtune").memory.components
    assert (
        _loss("materialized", stack="torchtune").memory.components["logits"]
        > 10 * _loss(None, stack="torchtune").memory.components["logits"]
    )
    with pytest.raises(InvalidJob) as err:
        _loss("fused", stack="torchtune")
    assert err.value.field == "loss"
    with pytest.raises(InvalidJob) as err:
        _loss("materialized", stack="unsloth")
    assert err.value.field == "loss"
    with pytest.raises(InvalidJob) as err:
        make_job("llama-3.1-8b", "full", tokens=1e6, loss="sliced")
    assert err.value.field == "loss"


def test_the_seed_set_models_no_loss_kinds() -> None:
    with pytest.raises(InvalidJob) as err:
        prepare(make_job("llama-3.1-8b", "full", tokens=1e6, loss="fused"), "seed")
    assert err.value.field == "loss"


# --- tensor parallel inside FSDP ----------------------------------------------------------------------


def _405b(tp: int | None):  # type: ignore[no-untyped-def]
    job = JobInput(
        model="llama-3.1-405b", method="full", tokens="1B", seq_len=8192, stack="nemo", tensor_parallel=tp
    ).spec()
    return prepare(job, "hf-peft")


def test_a_405b_run_on_128_gpus_as_fsdp_by_tp8_is_expressible_and_fits() -> None:
    # 16 nodes of 8 H100s on a 400 Gbit/s-per-GPU fabric (tracker.estimate.multinode: 40 GB/s achieved).
    est = _405b(8).on(gpu("H100-SXM-80GB"), 128, inter_node_gb_s=40.0)
    fsdp_only = _405b(None).on(gpu("H100-SXM-80GB"), 128, inter_node_gb_s=40.0)
    assert est.as_dict()["tensor_parallel"] == 8 and fsdp_only.as_dict()["tensor_parallel"] == 1
    assert est.fits and not fsdp_only.fits  # the activations of 126 layers x 8k tokens need TP's split
    assert est.raw_step is not None and est.raw_step.replicas == 16 and est.raw_step.split == 8.0
    parts, flat = est.vram_breakdown, fsdp_only.vram_breakdown
    for name in ("base_weights", "unquantized_weights", "trainable_state"):  # 128-way either way
        assert parts[name] == pytest.approx(flat[name])
    for name in ("activations", "recompute_working_set", "logits", "fsdp_buffers"):  # and 8 ways more
        assert parts[name] == pytest.approx(flat[name] / 8)


def test_tensor_parallel_communication_per_layer_runs_on_the_node_link() -> None:
    prepared = _405b(8)
    arch = prepared.job.model
    est = prepared.on(gpu("H100-SXM-80GB"), 128, inter_node_gb_s=40.0)
    raw = est.raw_step
    assert raw is not None
    collectives = arch.layers * 6  # 2 per layer forward, backward and recompute
    assert raw.tp_collectives == collectives
    assert raw.tp_comm_bytes == pytest.approx(collectives * 2 * 7 / 8 * 8192 * arch.hidden * 2)
    params = fitted_params()
    tp_seconds = raw.tp_comm_bytes / params.link("nvlink") + collectives * params.tp_collective_latency_s
    # The FSDP part runs across nodes and is partly hidden; TP's is neither: a slower network moves only FSDP's.
    slower = prepared.on(gpu("H100-SXM-80GB"), 128, inter_node_gb_s=20.0)
    assert est.step_time_breakdown is not None and slower.step_time_breakdown is not None
    assert est.step_time_breakdown["communication"] >= tp_seconds
    assert slower.step_time_breakdown["communication"] > est.step_time_breakdown["communication"]
    one_node = _405b(8).on(gpu("H100-SXM-80GB"), 8)  # FSDP over a group of one: TP's traffic alone
    assert one_node.step_time_breakdown is not None
    assert one_node.step_time_breakdown["communication"] == pytest.approx(tp_seconds)


def test_a_tensor_parallel_degree_an_offer_cannot_hold_falls_to_the_largest_that_divides_it() -> None:
    prepared = _405b(8)
    assert prepared.job.layout(4) == ("fsdp", 4, 1)
    assert prepared.job.layout(12) == ("fsdp", 6, 2)
    assert prepared.job.layout(1) == ("single", 1, 1)
    assert prepared.on(gpu("H100-SXM-80GB"), 4).tokens_per_second > 0


def test_tensor_parallel_is_checked_against_the_model_and_the_layout() -> None:
    with pytest.raises(InvalidJob) as err:  # Llama 3.1 8B: 32 heads
        make_job("llama-3.1-8b", "full", tokens=1e6, tensor_parallel=3)
    assert err.value.field == "tensor_parallel"
    with pytest.raises(InvalidJob) as err:
        make_job("llama-3.1-8b", "full", tokens=1e6, tensor_parallel=2, parallel="ddp")
    assert err.value.field == "tensor_parallel"
    assert make_job("llama-3.1-8b", "full", tokens=1e6, tensor_parallel=16).tensor_parallel == 16  # KV replicated


def test_tp_fsdp_without_a_degree_still_splits_the_whole_machine() -> None:
    job = make_job("llama-3.1-70b", "lora", tokens=1e6, parallel="tp-fsdp", stack="hf")
    assert job.layout(8) == ("tp-fsdp", 8, 1)


def test_the_command_line_and_api_job_take_a_fine_tuning_tensor_parallel_degree() -> None:
    job = JobInput(model="llama-3.1-70b", method="full", tokens="1M", tensor_parallel=8)
    assert job.spec().tensor_parallel == 8 and job.saved()["tensor_parallel"] == 8
    assert JobInput(model="llama-3.1-8b", tokens="1M", selective_checkpointing=True, stack="torchtune").spec()
    assert JobInput(model="llama-3.1-8b", tokens="1M", loss="fused").spec().loss == "fused"
    from tracker.cli.job_options import JOB_OPTION_NAMES, build_job

    assert {"tensor_parallel", "selective_checkpointing", "loss"} <= set(JOB_OPTION_NAMES)  # --tensor-parallel ...
    typed = build_job({"model": "llama-3.1-70b", "tokens": "1M", "tensor_parallel": 8, "loss": "fused"})
    assert typed.spec().tensor_parallel == 8 and typed.spec().loss == "fused"


# --- per card: L40 and L40S are two cards -------------------------------------------------------------


def test_the_half_rate_l40_is_timed_as_its_geforce_silicon_not_as_the_l40s() -> None:
    l40, l40s = gpu("L40-48GB"), gpu("L40S-48GB")
    assert efficiency_class(l40.architecture, l40.form_factor) == "ada"  # its band keeps its own class
    assert step_class(l40, "ada") == "consumer" and step_class(l40s, "ada") == "ada"
    job = prepare(make_job("llama-3.1-8b", "full", tokens=1e6, seq_len=2048, batch=2, stack="hf"), "hf-peft")
    est = job.on(l40)
    raw, terms = est.raw_step, est.step_time_breakdown
    assert raw is not None and terms is not None
    assert raw.peak == pytest.approx(l40.bf16_tflops * 1e12)  # no power cap: its rating is its limit
    assert terms["gemm"] == pytest.approx(raw.gemm_flops / (raw.peak * fitted_params().gemm("consumer")))
    a100 = job.on(gpu("A100-SXM-80GB")).tokens_per_second
    assert 0.57 < est.tokens_per_second / a100 < job.on(l40s).tokens_per_second / a100

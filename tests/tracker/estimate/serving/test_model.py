"""The serving model against hand-computed values and the behaviour measured runs show: memory
components, the largest concurrency that fits, the decode terms, hardware support, money, load."""

from __future__ import annotations

import math
from decimal import Decimal
from functools import partial

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import InvalidJob, JobInput
from tracker.estimate.serving import make_serving_job, prepare_serving
from tracker.estimate.serving.job import HOURS_PER_MONTH
from tracker.estimate.serving.params import get_params, memory_class

GB = 1e9


def card(gpu_id: str):
    return get_catalog().get(gpu_id)


def test_weights_and_kv_cache_by_hand() -> None:
    # Llama 3.1 8B: 6.98e9 block-linear weights, 1.05e9 embedding + lm_head + norms (16-bit).
    p = prepare_serving(
        make_serving_job("llama-3.1-8b", precision="bf16", prompt_tokens=1000, output_tokens=200, concurrency=10)
    )
    params = p.job.model.params
    assert p.weight_bytes(1) == pytest.approx(params.total * 2.0)
    int4 = prepare_serving(make_serving_job("llama-3.1-8b", precision="int4", concurrency=10))
    assert int4.weight_bytes(1) == pytest.approx(params.linear * 4.25 / 8 + params.unquantized * 2.0)
    # K and V: 2 x 32 layers x 8 KV heads x 128 x 2 B = 128 KiB per token; 1200 tokens x 10 sequences.
    est = p.on(card("H100-SXM-80GB"), 1)
    assert p.kv_bytes_per_token(1) == 2 * 32 * 8 * 128 * 2
    assert est.memory_components["kv_cache"] == pytest.approx(131072 * 1200 * 10)
    assert est.memory_components["engine_reserve"] == pytest.approx(0.1 * 80 * GB)  # vLLM leaves 10 % free
    assert est.vram_gb == pytest.approx(sum(est.memory_components.values()) / GB)


def test_tensor_parallel_splits_weights_and_kv_heads_until_one_per_gpu() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=8))
    assert p.weight_bytes(4) == pytest.approx(p.weight_bytes(1) / 4)
    assert p.kv_bytes_per_token(8) == pytest.approx(p.kv_bytes_per_token(1) / 8)  # 8 KV heads: one per GPU
    assert p.kv_bytes_per_token(16) == pytest.approx(p.kv_bytes_per_token(8))  # then replicated


def test_max_concurrency_is_what_the_kv_budget_holds() -> None:
    # An engine cap above the KV budget (vLLM's default 256 would bind first here).
    p = prepare_serving(make_serving_job("llama-3.1-8b", prompt_tokens=1000, output_tokens=200), max_num_seqs=4096)
    h100 = card("H100-SXM-80GB")
    budget = 80 * GB * 0.9 - p.weight_bytes(1) - p.activation_bytes(1) - p.runtime_bytes(1)
    expected = int(budget // (p.kv_bytes_per_token(1) * 1200))
    assert p.max_concurrency(h100, 1) == expected
    at_max = p.on(h100, 1, concurrency=expected)
    assert at_max.fits and at_max.queued_per_replica == 0
    # One user more than the KV cache holds waits for a slot: the same throughput, a longer TTFT.
    over = p.on(h100, 1, concurrency=expected + 1)
    assert over.fits and over.batch_per_replica == expected and over.queued_per_replica == 1
    assert over.tokens_per_second == pytest.approx(at_max.tokens_per_second)
    assert over.ttft_s > at_max.ttft_s + over.cycle_seconds / expected * 0.99
    # Two GPUs hold the weights once (split) and more than twice the sequences.
    assert p.max_concurrency(h100, 2) > 2 * expected


def test_70b_fp8_needs_two_h100_at_64_users_and_one_h200() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=64))
    one = p.on(card("H100-SXM-80GB"), 1)
    assert not one.fits and "does not fit" in (one.reason or "")
    assert p.on(card("H100-SXM-80GB"), 2).fits
    assert p.on(card("H200-SXM-141GB"), 1).fits


def test_fp8_refused_on_ampere_naming_precision() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=8))
    a100 = card("A100-SXM-80GB")
    with pytest.raises(InvalidJob) as exc:
        p.check(a100)
    assert exc.value.field == "precision" and "FP8" in exc.value.message
    est = p.on(a100, 4)  # placing it never raises: a ranking lists it as not fitting, with the reason
    assert not est.fits and "fp8" in (est.reason or "")
    assert prepare_serving(make_serving_job("llama-3.1-8b", precision="int4")).on(a100, 1).fits
    p.check(card("H100-SXM-80GB"))
    p.check(card("L40S-48GB"))
    p.check(card("MI300X-192GB"))


def test_decode_step_terms_sum_to_the_step_and_stay_memory_bound_at_one_user() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-8b", concurrency=1))
    h100 = card("H100-SXM-80GB")
    est = p.on(h100, 1)
    t = est.step_terms
    assert sum(t.values()) == pytest.approx(est.step_seconds)
    assert t["compute_excess"] == 0.0 and t["communication"] == 0.0
    bw = h100.bandwidth_tbs * 1e12 * get_params().bandwidth("hbm") * get_params().engine("vllm").bandwidth
    weights_read = p.job.model.params.linear * 2.0 + p.job.model.vocab * p.job.model.hidden * 2.0
    assert t["weights"] == pytest.approx(weights_read / bw)
    assert est.per_user_tokens_per_second == pytest.approx(
        200 / (200 * est.step_seconds + est.prefill_in_cycle_seconds)
    )
    assert est.prefill_in_cycle_seconds < est.prefill_seconds  # vLLM chunks the prompt into decode steps


def test_one_user_reaches_45_to_80_percent_of_the_bandwidth_roofline() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-8b", concurrency=1))
    for gpu_id in ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "L40S-48GB", "RTX4090-24GB", "L4-24GB"):
        eff = p.on(card(gpu_id), 1).efficiency
        assert 0.45 <= eff <= 0.80, (gpu_id, eff)


def test_high_concurrency_turns_compute_bound_and_per_user_speed_falls() -> None:
    # An engine allowed 2048 running sequences (vLLM's default cap of 256 would queue the rest).
    p = prepare_serving(
        make_serving_job("llama-3.1-8b", precision="fp8", prompt_tokens=128, output_tokens=128), max_num_seqs=2048
    )
    h100 = card("H100-SXM-80GB")
    low, high = p.on(h100, 1, concurrency=1), p.on(h100, 1, concurrency=1024)
    assert high.batch_per_replica == 1024
    assert high.step_terms["compute_excess"] > 0
    assert high.tokens_per_second > 20 * low.tokens_per_second
    assert high.per_user_tokens_per_second < low.per_user_tokens_per_second / 4


def test_h200_gains_less_than_its_bandwidth() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-8b", concurrency=64))
    h100, h200 = card("H100-SXM-80GB"), card("H200-SXM-141GB")
    gain = p.on(h200, 1).tokens_per_second / p.on(h100, 1).tokens_per_second
    assert 1.0 < gain < h200.bandwidth_tbs / h100.bandwidth_tbs


def test_pcie_split_is_several_times_below_the_same_step_without_communication() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="int4", concurrency=1))
    est = p.on(card("RTX4090-24GB"), 8)
    assert est.fits and card("RTX4090-24GB").interconnect == "pcie"
    without = est.step_seconds - est.step_terms["communication"]
    # The step without communication carries the per-layer launch costs too (80 layers).
    assert 2.5 <= est.step_seconds / without <= 10.0
    nvlink = p.on(card("H100-SXM-80GB"), 8)
    assert nvlink.multi_gpu_efficiency > est.multi_gpu_efficiency


def test_memory_class_reads_the_catalog() -> None:
    assert memory_class(card("H100-PCIE-80GB")) == "hbm"
    assert memory_class(card("A100-SXM-80GB")) == "hbm"
    assert memory_class(card("L40S-48GB")) == "gddr"
    assert memory_class(card("RTX4090-24GB")) == "gddr"


def test_money_load_and_months() -> None:
    job = make_serving_job("llama-3.1-8b", concurrency=32, tokens_per_month="10B")
    est = prepare_serving(job).on(card("H100-SXM-80GB"), 1, price_per_gpu_hour="2.00")
    tps = est.tokens_per_second
    assert (
        est.usd_per_mtok == Decimal(str(round(2.0 / (tps * 3600) * 1e6, 6)))
        or abs(float(est.usd_per_mtok or 0) - 2.0 / (tps * 3600) * 1e6) < 1e-6
    )
    # Input and output split the price by prefill / decode time.
    spent = float(est.usd_per_mtok_output or 0) * tps + float(est.usd_per_mtok_input or 0) * est.input_tokens_per_second
    assert spent == pytest.approx(2.0 / 3600 * 1e6, rel=1e-4)
    need = 10e9 / (HOURS_PER_MONTH * 3600)
    assert est.offers_needed == math.ceil(need / tps)
    assert est.gpus_needed == est.offers_needed
    assert est.monthly_cost == Decimal(est.offers_needed * 2 * 730).quantize(Decimal("0.000001"))
    assert est.hours == pytest.approx(10e9 / tps / 3600)
    low, high = est.tokens_per_second_band
    assert low < tps < high
    assert est.band.low == pytest.approx(low / tps) and est.band.high == pytest.approx(high / tps)


def test_targets_choose_the_concurrency() -> None:
    h100 = card("H100-SXM-80GB")
    free = prepare_serving(make_serving_job("llama-3.1-8b")).on(h100, 1)
    assert free.concurrency == get_params().engine("vllm").max_num_seqs
    fast = prepare_serving(make_serving_job("llama-3.1-8b", target_tokens_per_user=60)).on(h100, 1)
    assert fast.fits and fast.per_user_tokens_per_second >= 60
    assert (
        prepare_serving(make_serving_job("llama-3.1-8b", concurrency=fast.concurrency + 1))
        .on(h100, 1)
        .per_user_tokens_per_second
        < 60
    )
    impossible = prepare_serving(make_serving_job("llama-3.1-8b", target_tokens_per_user=5000)).on(h100, 1)
    assert not impossible.fits and "target" in (impossible.reason or "")
    ttft = prepare_serving(make_serving_job("llama-3.1-8b", max_ttft_s=0.05)).on(h100, 1)
    assert ttft.ttft_s <= 0.05


def test_bad_layouts_name_the_field() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-8b", tensor_parallel=4))
    with pytest.raises(InvalidJob) as exc:
        p.layout(card("H100-SXM-80GB"), 2)
    assert exc.value.field == "tensor_parallel"
    # Placed on such an offer (a ranking does that for every offer of the market) it does not fit.
    two = p.on(card("H100-SXM-80GB"), 2)
    assert not two.fits and "does not divide" in str(two.reason) and math.isfinite(two.tokens_per_second)
    assert not p.on(card("H100-SXM-80GB"), 0.5, memory_gb=40).fits
    assert p.on(card("H100-SXM-80GB"), 8).layout.replicas == 2
    with pytest.raises(InvalidJob) as exc:
        prepare_serving(make_serving_job("llama-3.1-8b")).on(card("H100-SXM-80GB"), 0.5)
    assert exc.value.field == "memory_gb"
    mig = prepare_serving(make_serving_job("llama-3.1-8b", concurrency=1)).on(
        card("H100-SXM-80GB"), 3 / 7, memory_gb=40
    )
    assert (
        mig.memory_gb == 40
        and mig.tokens_per_second
        < prepare_serving(make_serving_job("llama-3.1-8b", concurrency=1))
        .on(card("H100-SXM-80GB"), 1)
        .tokens_per_second
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"precision": "fp4"}, "precision"),
        ({"kv_precision": "int2"}, "kv_precision"),
        ({"engine": "tgi"}, "engine"),
        ({"prompt_tokens": 0}, "prompt_tokens"),
        ({"prompt_tokens": 200_000}, "prompt_tokens"),
        ({"concurrency": -1}, "concurrency"),
        ({"tensor_parallel": 3}, "tensor_parallel"),
        ({"tokens_per_month": "lots"}, "tokens_per_month"),
        ({"tokens_per_month": "1e30"}, "tokens_per_month"),
        ({"tokens_per_month": "1B", "requests_per_second": 2.0}, "tokens_per_month"),
        ({"requests_per_second": float("nan")}, "requests_per_second"),
        ({"concurrency": 4, "target_tokens_per_user": 20}, "concurrency"),
    ],
)
def test_bad_serving_jobs_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidJob) as exc:
        make_serving_job("llama-3.1-8b", **kwargs)  # type: ignore[arg-type]
    assert exc.value.field == field


def test_moe_reads_only_the_experts_its_tokens_route_to() -> None:
    p = prepare_serving(make_serving_job("mixtral-8x7b", concurrency=1))
    a = p.job.model
    one = p._touched_weight_bytes(1, 1)
    full = p._touched_weight_bytes(1, 10_000)
    assert one < full and full == pytest.approx(
        p.weight_bytes(1) - p.unquantized * 2 + a.vocab * a.hidden * 2, rel=1e-3
    )


def test_job_schema_builds_the_serving_job() -> None:
    job = JobInput(
        kind="inference",
        model="llama-3.1-70b",
        precision="fp8",
        prompt_tokens=1000,
        output_tokens=200,
        concurrency=64,
        tokens_per_month="10B",
    )
    spec = job.serving_spec()
    assert (spec.precision, spec.kv_precision, spec.concurrency, spec.tokens_per_month) == ("fp8", "fp8", 64, 1e10)
    with pytest.raises(InvalidJob) as exc:
        job.spec()
    assert exc.value.field == "kind"
    with pytest.raises(InvalidJob) as exc:
        JobInput(model="llama-3.1-8b", tokens="1M").serving_spec()
    assert exc.value.field == "kind"


def test_trt_llm_is_refused_off_nvidia_naming_engine() -> None:
    from tracker.estimate.serving import check_support

    job = make_serving_job("llama-3.1-8b", engine="trt-llm")
    with pytest.raises(InvalidJob) as exc:
        check_support(job, card("MI300X-192GB"))
    assert exc.value.field == "engine"
    assert not prepare_serving(job).on(card("MI300X-192GB"), 1).fits
    assert prepare_serving(make_serving_job("llama-3.1-8b", engine="vllm")).on(card("MI300X-192GB"), 1).fits


def test_an_8_gpu_node_serves_replicas_and_matches_one_card_per_token_at_a_load_that_fills_it() -> None:
    # 8B bf16 fits one H100: at 8 x vLLM's 256 running sequences the node runs 8 copies of 256 users,
    # priced like 8 single cards (within 15 %), not one copy over all eight at a fixed 64 users.
    for gpu_id in ("H100-SXM-80GB", "MI300X-192GB"):
        p = prepare_serving(make_serving_job("llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=2048))
        one = p.on(card(gpu_id), 1, price_per_gpu_hour="2.00")
        node = p.on(card(gpu_id), 8, price_per_gpu_hour="2.00")
        assert node.fits and node.layout.replicas == 8 and node.layout.tp == 1 and node.layout.idle == 0
        assert node.as_dict()["layout"] == "8 x TP1" and node.as_dict()["concurrency_per_replica"] == 256
        assert one.queued_per_replica > 0  # one card queues what the node runs
        assert node.usd_per_mtok is not None and one.usd_per_mtok is not None  # both fit, so both are priced
        assert float(node.usd_per_mtok) == pytest.approx(float(one.usd_per_mtok), rel=0.15)


def test_the_layout_follows_the_load_and_names_idle_gpus() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=512))
    est = p.on(card("H100-SXM-80GB"), 8)
    assert est.fits and est.layout.tp >= 2  # 70B fp8 does not fit one H100 beside a KV cache
    assert est.as_dict()["gpus_used"] + est.as_dict()["gpus_idle"] == 8
    row = est.as_dict()
    assert "cost_per_run" not in row and "hours" not in row  # traffic, not a run
    # The job's own TP is kept: TP 8 over the node.
    fixed = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=512, tensor_parallel=8))
    assert fixed.on(card("H100-SXM-80GB"), 8).layout.replicas == 1


def test_gaudi_runs_fp8_as_the_catalog_says() -> None:
    p = prepare_serving(make_serving_job("llama-3.1-70b", precision="fp8", concurrency=16))
    for gpu_id in ("GAUDI2-96GB", "GAUDI3-128GB"):
        gaudi = card(gpu_id)
        assert gaudi.fp8_tflops
        p.check(gaudi)
        est = p.on(gaudi, 2)
        assert est.fits and est.reason is None
    trt = prepare_serving(make_serving_job("llama-3.1-8b", precision="fp8", engine="trt-llm"))
    assert not trt.on(card("GAUDI3-128GB"), 1).fits  # TensorRT-LLM is NVIDIA-only


def test_old_vllm_runs_eager_above_8k_and_pays_per_layer_launches() -> None:
    long = partial(make_serving_job, "llama-3.1-8b", prompt_tokens=10_000, output_tokens=1_000, concurrency=8)
    old = long(engine_version="v0.6.3.post1")
    new = long(engine_version="0.10.1")
    short_old = make_serving_job("llama-3.1-8b", engine_version="0.6.3", prompt_tokens=2000, concurrency=8)
    assert old.eager and not new.eager and not short_old.eager
    h100 = card("H100-SXM-80GB")
    slow, fast = prepare_serving(old).on(h100, 1), prepare_serving(new).on(h100, 1)
    assert slow.step_terms["launch"] > 5 * fast.step_terms["launch"]
    assert slow.tokens_per_second < fast.tokens_per_second
    assert old.describe()["engine_version"] == "0.6.3" and old.describe()["eager"]
    with pytest.raises(InvalidJob) as exc:
        make_serving_job("llama-3.1-8b", engine_version="latest")
    assert exc.value.field == "engine_version"
    job = JobInput(kind="inference", model="llama-3.1-8b", engine_version="0.5.2", prompt_tokens=9000)
    assert job.serving_spec().eager

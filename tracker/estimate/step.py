"""The step-time model: seconds per micro-step as named terms, so the card's bandwidth matters.

A training step is not only GEMMs. Per micro-step on one GPU (T tokens of `seq_len × batch`):

    gemm           max(counted FLOPs / (peak × gemm_fraction[class]), weight bytes / bandwidth)
    attention      attention FLOPs at `attention_vs_gemm` of the GEMM rate (FlashAttention / SDPA)
    activations    norms, residuals, RoPE, SwiGLU: T·L·(19h + 3i)·2 B per forward-equivalent pass
    logits         the loss: T·V·(bytes per stack) — materialised, chunked or fused cross-entropy
    adapters       LoRA A/B GEMMs are skinny, hence memory-bound: T·Σ(d_in + d_out)·2 B per pass
    dequant        QLoRA: NF4 read + bf16 written for every frozen linear, every pass that uses it
    optimizer      AdamW reads and writes the trained parameters' state: 1.75 × state bytes, once per
                   optimizer step, so divided by `grad_accum` micro-batches (as DDP's all-reduce is);
                   launches and the data loader (`overhead`) are paid every micro-batch
    overhead       fixed seconds per step (launches, Python, data loading)
    offload        checkpoints copied to and from CPU RAM, mostly hidden behind compute
    communication  DDP all-reduce of gradients, FSDP all-gather of weights + reduce-scatter of
                   gradients within each data-parallel group (hidden behind compute up to `comm_overlap`,
                   across nodes at the network's rate), TP activation all-reduces (FSDP x TP: 2 per layer
                   and pass inside the node, bytes / link + a latency each, never hidden)

Memory-bound terms are bytes / (card bandwidth × bandwidth_fraction × bandwidth_relative[class]);
attention runs at attention_vs_gemm × attention_relative[class] of the class's GEMM rate (the class
factors are priors: ROCm's memory-bound kernels, FlashAttention-2 on Hopper/Blackwell). The stack's `non_gemm`
multiplier scales activations, dequantisation and overhead (what fused/compiled kernels save).
tokens/s = useful tokens per step (padding excluded) × replicas / step time.

`raw_step` does the arithmetic that does not depend on fitted numbers (per job and card), so the
fit (calibration.fit.fit_step) re-times rows cheaply. What the estimate uses is that fit as data
(`fitted_params`, data/step_fit.toml): an estimate never fits, and a test refits and compares.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.architectures import DATA_DIR
from tracker.estimate.flops import FlopsBreakdown
from tracker.estimate.job import JobSpec
from tracker.estimate.memory import MemoryParts
from tracker.estimate.stacks import Stack, raw_stacks_file

TERMS: dict[str, str] = {
    "gemm": "dense GEMMs (and adapters' FLOPs) at the achievable fraction of peak, or the weight stream if slower",
    "attention": "attention FLOPs (FlashAttention/SDPA) below GEMM rate",
    "activations": "memory-bound elementwise kernels: norms, residual adds, RoPE, SwiGLU",
    "logits": "loss: logits, their up-cast, softmax and gradient (per stack: materialised / chunked / fused)",
    "adapters": "LoRA adapter GEMMs, dropout, scale and add: memory-bound",
    "dequant": "QLoRA: dequantising NF4 frozen weights to bf16 on every pass",
    "optimizer": "AdamW update: trained parameters' weights, gradients and state read and written",
    "overhead": "fixed per-step overhead: kernel launches, Python, data loading",
    "offload": "checkpointed activations to and from CPU RAM, not hidden behind compute",
    "communication": "gradient all-reduce (DDP), weight all-gather + gradient reduce-scatter (FSDP), "
    "activation all-reduces (TP), not hidden behind compute",
}
ADAM_TRAFFIC = 1.75  # reads weights, grads, m, v; writes weights, m, v: 7/4 of the state bytes
FIT_FILE = DATA_DIR / "step_fit.toml"


@dataclass(frozen=True, slots=True)
class StepParams:
    """The shared physics: fitted numbers and priors from stacks.toml `[step]`."""

    gemm_fraction: dict[str, float]  # per efficiency class, "default" included
    bandwidth_fraction: float
    overhead_s: float
    non_gemm: dict[str, float]  # per stack
    activation_elements_per_hidden: float
    activation_elements_per_intermediate: float
    attention_vs_gemm: float
    offload_gb_s: float
    offload_overlap: float
    comm_overlap: float
    link_gb_s: dict[str, float]
    source: dict[str, str] = field(default_factory=dict)  # "gemm:ampere" -> "fit (12 rows)" | "prior ..."
    # Per class: achievable bandwidth relative to the shared fraction (ROCm's elementwise kernels).
    bandwidth_relative: dict[str, float] = field(default_factory=dict)
    # Per class: attention rate relative to `attention_vs_gemm` (FlashAttention-2 is tuned for Ampere).
    attention_relative: dict[str, float] = field(default_factory=dict)
    # Fixed seconds per tensor-parallel collective on top of its bytes / link (a prior).
    tp_collective_latency_s: float = 0.0

    def gemm(self, cls: str) -> float:
        return self.gemm_fraction.get(cls, self.gemm_fraction["default"])

    def link(self, interconnect: str) -> float:
        return self.link_gb_s.get(interconnect, self.link_gb_s["default"]) * 1e9

    def describe(self) -> dict[str, Any]:
        return {
            "gemm_fraction": {k: round(v, 4) for k, v in self.gemm_fraction.items()},
            "bandwidth_fraction": round(self.bandwidth_fraction, 4),
            "bandwidth_relative": dict(self.bandwidth_relative),
            "attention_relative": dict(self.attention_relative),
            "overhead_s": round(self.overhead_s, 5),
            "non_gemm": {k: round(v, 4) for k, v in self.non_gemm.items()},
            "attention_vs_gemm": self.attention_vs_gemm,
            "activation_elements": {
                "per_hidden": self.activation_elements_per_hidden,
                "per_intermediate": self.activation_elements_per_intermediate,
            },
            "offload_gb_s": self.offload_gb_s,
            "offload_overlap": self.offload_overlap,
            "comm_overlap": self.comm_overlap,
            "link_gb_s": dict(self.link_gb_s),
            "tp_collective_latency_s": self.tp_collective_latency_s,
            "source": dict(self.source),
        }


def prior_params() -> StepParams:
    """Every value as written in stacks.toml (fitted ones at their starting values)."""
    raw = raw_stacks_file()
    step = raw["step"]
    gf = step["gemm_fraction"]
    base = {k: float(v["value"]) for k, v in gf.items() if "value" in v}
    ref = base["ampere"]
    fractions = dict(base) | {k: ref * float(v["relative"]) for k, v in gf.items() if "relative" in v}
    source = {f"gemm:{k}": ("fit" if v.get("fit") else "prior") + f": {v['why']}" for k, v in gf.items()}
    source |= {
        "bandwidth_fraction": f"fit: {step['bandwidth_fraction']['why']}",
        "attention_vs_gemm": "fit: long-context rows",
        "overhead_s": f"fit: {step['overhead_s']['why']}",
    }
    source |= {
        f"bandwidth_relative:{k}": ("fit" if v.get("fit") else "prior") + f": {v['why']}"
        for k, v in step.get("bandwidth_relative", {}).items()
    }
    source |= {
        f"non_gemm:{k}": ("fit" if v.get("non_gemm_fit") else "prior") + f": {v['non_gemm_why']}"
        for k, v in raw["stacks"].items()
    }
    return StepParams(
        gemm_fraction=fractions,
        bandwidth_fraction=float(step["bandwidth_fraction"]["value"]),
        overhead_s=float(step["overhead_s"]["value"]),
        non_gemm={k: float(v["non_gemm"]) for k, v in raw["stacks"].items()},
        activation_elements_per_hidden=float(step["activation_elements_per_hidden"]),
        activation_elements_per_intermediate=float(step["activation_elements_per_intermediate"]),
        attention_vs_gemm=float(step["attention_vs_gemm"]),
        offload_gb_s=float(step["offload_gb_s"]),
        offload_overlap=float(step["offload_overlap"]),
        comm_overlap=float(step["comm_overlap"]),
        link_gb_s={k: float(v) for k, v in step["link_gb_s"].items()},
        source=source,
        bandwidth_relative={k: float(v["value"]) for k, v in step.get("bandwidth_relative", {}).items()},
        attention_relative={k: float(v["value"]) for k, v in step.get("attention_relative", {}).items()},
        tp_collective_latency_s=float(step["tp_collective_latency_s"]),
    )


@cache
def fitted_params() -> StepParams:
    """The step model fitted to every calibration row (what `hf-peft` and `optimized` estimate with).

    Stored, not fitted here: data/step_fit.toml is written by `python -m tracker.estimate.calibration
    --write`, and tests/tracker/estimate/test_stored_fit.py refits and checks the file is that fit."""
    with FIT_FILE.open("rb") as fh:
        return StepParams(**tomllib.load(fh))


@cache
def power_limits() -> dict[str, tuple[float, float]]:
    """Per efficiency class where sustained GEMMs are power-capped: (dense TFLOP/s a card sustains per
    watt of its board power, the least share of its peak the cap is taken to leave) from stacks.toml
    [step.power_tflops_per_watt]."""
    table = raw_stacks_file()["step"].get("power_tflops_per_watt", {})
    return {k: (float(v["value"]), float(v["min_share"])) for k, v in table.items()}


def sustained_peak(gpu: GpuSpec, cls: str, peak: float) -> float:
    """The GEMM peak a card holds under training load: its own catalog peak, capped by its own power
    limit where the class is power-capped. L40 (181 TF at 300 W, half-rate FP32 accumulate) and L40S
    (362 TF at 350 W) are one class but not one card: the cap binds on the L40S, not the L40."""
    limit = power_limits().get(cls)
    if limit is None or not gpu.tdp_w:
        return peak
    per_watt, min_share = limit
    return max(min(peak, per_watt * gpu.tdp_w * 1e12), min_share * peak)


@cache
def card_classes() -> dict[str, str]:
    """stacks.toml [step.card_class]: cards whose step-model class is not their efficiency class."""
    return {k: str(v["class"]) for k, v in raw_stacks_file()["step"].get("card_class", {}).items()}


def step_class(gpu: GpuSpec, cls: str) -> str:
    """The class whose GEMM fraction, bandwidth and attention factors time this card (`cls`: its
    efficiency class). A card whose catalog peak is rated like another class's (the L40's half-rate FP32
    accumulate, as GeForce cards are rated) is timed as that class, not as its architecture's."""
    return card_classes().get(gpu.id, cls)


def relative_classes() -> dict[str, float]:
    """Classes whose GEMM fraction is a prior relative to Ampere's (re-applied after every fit)."""
    gf = raw_stacks_file()["step"]["gemm_fraction"]
    return {k: float(v["relative"]) for k, v in gf.items() if "relative" in v}


class StepJob(Protocol):
    """What the step model reads of a prepared job (tracker.estimate.core.PreparedJob, which imports this module)."""

    @property
    def job(self) -> JobSpec: ...
    @property
    def flops(self) -> FlopsBreakdown: ...
    @property
    def memory(self) -> MemoryParts: ...


@dataclass(frozen=True, slots=True)
class RawStep:
    """Work per micro-step before any fitted number is applied."""

    stack: str
    tokens: float  # processed by one replica per step
    useful_tokens: float  # tokens minus padding
    replicas: int  # GPUs each processing `tokens` (DDP / FSDP); 1 for tensor parallel
    split: float  # compute split across GPUs (tensor parallel), 1 otherwise
    optimizer_shards: float
    peak: float  # FLOP/s
    bandwidth: float  # B/s, catalog peak
    gemm_flops: float
    weight_bytes: float
    attention_flops: float
    activation_elements: tuple[float, float]  # (per-hidden, per-intermediate) element counts before coefficients
    logits_bytes: float
    adapter_bytes: float
    dequant_bytes: float
    optimizer_bytes: float
    offload_bytes: float
    comm_bytes: float  # DDP / FSDP collectives: over the slowest hop, hidden behind compute up to comm_overlap
    comm_hidden: bool  # overlappable with compute (DDP / FSDP)
    interconnect: str
    slice: float  # < 1: a fraction of one card
    # Set for an offer spanning several nodes (tracker.estimate.multinode): the network's B/s per GPU.
    inter_node_bytes_s: float | None = None
    # Tensor-parallel activation all-reduces: inside the node, on the critical path, each with a latency.
    tp_comm_bytes: float = 0.0
    tp_collectives: float = 0.0


def raw_step(prepared: StepJob, stack: Stack, gpu: GpuSpec, gpus: float, peak: float) -> RawStep:
    job = prepared.job
    arch = job.model
    p = arch.params
    mem = prepared.memory
    knobs = stack.memory_for(job.precision, job.loss)
    lora = job.lora_params()  # summed over the adapted modules: computed once per placement
    parallel, tp, dp = job.layout(gpus)
    tokens = float(job.seq_len * job.batch)
    gc = job.grad_checkpointing
    passes = 4.0 if gc else 3.0  # forward, backward (~2x forward's traffic), recompute forward (elementwise)
    # Forward, input-gradient GEMM, and the recompute of full checkpointing (selective re-runs no GEMM).
    weight_passes = 3.0 if job.recomputes_gemms else 2.0
    inter = arch.intermediate * arch.experts_per_token

    activation = (tokens * arch.layers * arch.hidden * 2.0 * passes, tokens * arch.layers * inter * 2.0 * passes)
    adapters = 0.0
    if job.trains_adapters:
        # lora_params = rank × Σ(d_in + d_out) over the adapted linears: the per-token elements moved.
        adapters = tokens * (lora / job.rank) * 2.0 * stack.adapter_traffic * passes
    dequant = p.linear * (knobs.nf4_bits / 8 + 2.0) * weight_passes if job.method == "qlora" else 0.0
    if job.method == "full":
        state = p.total * (knobs.full_weight_bytes + knobs.full_grad_bytes + knobs.full_optimizer_bytes)
        grad_bytes = p.total * knobs.full_grad_bytes
    else:
        state = lora * knobs.lora_bytes_per_param
        grad_bytes = lora * (4.0 if knobs.lora_bytes_per_param >= 16 else 2.0)
    offload = arch.layers * tokens * arch.hidden * 2.0 * 2.0 if (job.offload_activations and gc) else 0.0

    n = tp * dp
    comm, tp_comm, collectives, shards = 0.0, 0.0, 0.0, 1.0
    ga = float(job.grad_accum)  # the update and DDP's all-reduce happen once per optimizer step
    if parallel == "ddp":
        comm = 2.0 * (n - 1) / n * grad_bytes / ga
    elif parallel in ("fsdp", "tp-fsdp"):
        # FSDP within each data-parallel group gathers its TP rank's 1/tp of every layer for forward and
        # backward and reduce-scatters the gradients; a group of one (all of it TP) gathers nothing.
        comm = (dp - 1) / dp * (2.0 * mem.gathered_bytes + grad_bytes) / tp
        shards = float(n)
    if tp > 1:
        # Megatron TP: 2 all-reduces of the block's activations per layer and pass (forward, backward,
        # and the recompute of full checkpointing), each 2(t-1)/t of the bf16 tokens x hidden.
        collectives = arch.layers * (6.0 if job.recomputes_gemms else 4.0)
        tp_comm = collectives * 2.0 * (tp - 1) / tp * tokens * arch.hidden * 2.0

    useful = tokens * (1.0 - job.pad_fraction)
    return RawStep(
        stack=stack.name,
        tokens=tokens,
        useful_tokens=useful,
        replicas=dp,
        split=float(tp),
        optimizer_shards=shards,
        peak=peak,
        bandwidth=gpu.bandwidth_tbs * 1e12,
        gemm_flops=(prepared.flops.dense + prepared.flops.adapters) * tokens,
        weight_bytes=p.linear * 2.0 * weight_passes,
        attention_flops=prepared.flops.attention * tokens,
        activation_elements=activation,
        logits_bytes=tokens * arch.vocab * stack.logits_traffic_for(job.loss),
        adapter_bytes=adapters,
        dequant_bytes=dequant,
        optimizer_bytes=ADAM_TRAFFIC * state / ga,
        offload_bytes=offload,
        comm_bytes=comm,
        comm_hidden=True,
        interconnect=gpu.interconnect,
        slice=gpus if gpus < 1 else 1.0,
        tp_comm_bytes=tp_comm,
        tp_collectives=collectives,
    )


def step_terms(raw: RawStep, cls: str, params: StepParams) -> dict[str, float]:
    """Seconds per micro-step for each term (on the whole card; a slice runs the same step slower)."""
    g = params.gemm(cls)
    bw = raw.bandwidth * params.bandwidth_fraction * params.bandwidth_relative.get(cls, 1.0)
    m = params.non_gemm.get(raw.stack, 1.0)
    k = raw.split
    act_bytes = (
        params.activation_elements_per_hidden * raw.activation_elements[0]
        + params.activation_elements_per_intermediate * raw.activation_elements[1]
    )
    terms = {
        "gemm": max(raw.gemm_flops / (raw.peak * g), raw.weight_bytes / bw) / k,
        "attention": raw.attention_flops
        / (raw.peak * g * params.attention_vs_gemm * params.attention_relative.get(cls, 1.0))
        / k,
        "activations": act_bytes * m / bw / k,
        "logits": raw.logits_bytes / bw / k,
        "adapters": raw.adapter_bytes / bw / k,
        "dequant": raw.dequant_bytes * m / bw / k,
        "optimizer": raw.optimizer_bytes / bw / raw.optimizer_shards,
        "overhead": params.overhead_s * m,
        "offload": raw.offload_bytes / (params.offload_gb_s * 1e9) * (1.0 - params.offload_overlap) / k,
    }
    compute = sum(terms.values())
    link = params.link(raw.interconnect)
    if raw.inter_node_bytes_s is not None:  # a ring across nodes runs at its slowest hop
        link = min(link, raw.inter_node_bytes_s)
    comm = raw.comm_bytes / link
    if raw.comm_hidden:
        comm = max(0.0, comm - params.comm_overlap * compute)
    # TP's all-reduces stay inside the node (a TP group never spans nodes) and wait on every layer.
    tp = raw.tp_comm_bytes / params.link(raw.interconnect) + raw.tp_collectives * params.tp_collective_latency_s
    terms["communication"] = comm + tp
    return terms


def tokens_per_second(raw: RawStep, terms: dict[str, float]) -> float:
    return raw.useful_tokens * raw.replicas / sum(terms.values()) * raw.slice

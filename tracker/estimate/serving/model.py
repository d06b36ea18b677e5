"""The serving model: memory, decode and prefill time, and what they cost, as named terms.

Per GPU of a tensor-parallel group of n GPUs serving B sequences (B = the offer's concurrency over
its n-GPU replicas), c = prompt + output/2 the mean context a decode step attends over:

memory (bytes per GPU)
    weights         block linears × bytes of the precision (int4: 4.25 bits with group scales) +
                    embeddings, lm_head, norms at 2 B; all split over n (vocab-parallel embeddings)
    kv_cache        2 (K and V) × layers × max(kv_heads / n, 1) × head_dim × KV bytes × (prompt + output) × B
    activations     the engine's profiled chunk of prefill tokens through one block (residual,
                    qkv, gate/up) + fp32 logits and probabilities for its largest batch
    runtime         CUDA context, cuBLAS workspace, CUDA graphs (+ NCCL buffers when n > 1)
    engine_reserve  the share of the card the engine leaves free (vLLM gpu_memory_utilization 0.9)

decode step (seconds; one output token for each of the B sequences)
    weights         weight bytes touched (MoE: the experts B tokens route to) / achievable bandwidth
    kv_cache        B × c × KV bytes per token / achievable bandwidth
    compute_excess  what the step's FLOPs (2 × matmul weights + 4·layers·c·q_dim per token) at the
                    achievable share of the tensor peak take beyond the memory time: the step is
                    max(memory, compute), so this is 0 while decode is memory-bound
    overhead        the engine's fixed seconds per step (scheduler, sampling launch, Python)
    per_sequence    the engine's seconds per running sequence per step (block tables, sampling, detokenise),
                    stated at an H100 SXM's bandwidth and scaled by the card's (`PER_SEQUENCE_AT_TBS`)
    launch          layers × the engine's per-layer kernel-launch cost (CUDA graphs, or eager mode)
    communication   2 all-reduces per layer, each (link latency + the engine's own cost per call)
                    + 2(n-1)/n × B × hidden × 2 B / link bandwidth, by the catalog's interconnect

prefill (one prompt of P tokens): max(FLOPs / (peak × prefill share), weights / bandwidth) +
    its all-reduces (P × hidden × 2 B each) + the fixed overhead.

Layouts: an offer of N GPUs is served as replicas × TP (each power of two up to N that splits the
heads; the job's TP when it names one); `on` takes the layout with the most tokens/s at the load.
The load (users) splits over the replicas; each runs what its KV cache and the engine's cap
(max_num_seqs) hold and queues the rest: throughput is that of the running batch, and TTFT adds the
wait for a slot (queued × cycle / running) and the wait behind other prefills (M/D/1 at the prefill
share of time, ρ/2(1−ρ) prefills).

Continuous batching interleaves prefills with decode steps, so over one request's life the replica
spends output × step + B × prefill-in-step (an engine that chunks prompts into decode steps pays
only their FLOPs and all-reduces: the step reads the weights anyway): aggregate output tokens/s =
running × output / that, per-user tokens/s = output / that, requests/s = aggregate / output. The
offer's cost splits by time: the prefill share of it is the input tokens' cost, the decode share the
output tokens'; `usd_per_mtok` (what rankings sort on) puts the whole price on the output tokens.
Achievable bandwidth = catalog peak × bandwidth_fraction[memory class] × the engine's bandwidth
multiplier × the vendor's (ROCm vs CUDA); compute shares × the vendor's compute multiplier. What is
fitted to serving_calibration.toml (serving/calibration.py) and what is a prior is marked in
serving_model.toml.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from tracker import money
from tracker.catalog.gpus import GpuSpec
from tracker.estimate.errors import InvalidJob
from tracker.estimate.serving.job import (
    HOURS_PER_MONTH,
    KV_BYTES,
    WEIGHT_BYTES,
    ServingSpec,
    check_support,
)
from tracker.estimate.serving.params import ServingParams, get_params, memory_class
from tracker.estimate.throughput import as_price

GB = 1e9
# The per-sequence step cost is stated at this memory bandwidth (an H100 SXM's, TB/s) and scales inversely
# with the card's: most of it is GPU work on every sequence's row (sampling over the vocabulary, logits
# processing, block-table gathers), memory-bound. Held constant, it made fast cards slow: GB200 runs were
# under-predicted by 28 % and a PCIe A40 over-predicted by 41 %, leave-one-source-out; scaled, −2 % and
# +26 % (MdAPE over all runs 16.0 → 14.7 %).
PER_SEQUENCE_AT_TBS = 3.35
MEMORY_COMPONENTS: tuple[str, ...] = ("weights", "kv_cache", "activations", "runtime", "engine_reserve")
STEP_TERMS: dict[str, str] = {
    "weights": "weight bytes read per decode step over achievable bandwidth",
    "kv_cache": "KV cache bytes read per decode step over achievable bandwidth",
    "compute_excess": "decode FLOPs at the achievable tensor rate beyond the memory time (0 when memory-bound)",
    "overhead": "engine's fixed seconds per step (scheduler, sampling launch)",
    "launch": "kernel launches per layer per step (CUDA graphs, or eager mode)",
    "per_sequence": "engine's seconds per running sequence per step",
    "communication": "tensor-parallel all-reduces (2 per layer) over the interconnect",
}
MILLION = 1e6


@dataclass(frozen=True, slots=True)
class ServingBand:
    low: float  # factor on tokens/s
    high: float
    rows: int  # calibration rows behind it
    basis: str = "5th-95th percentile of measured / leave-one-source-out prediction, serving_calibration.toml"


@dataclass(frozen=True, slots=True)
class Layout:
    """How an offer's GPUs serve the model: `replicas` copies, each tensor-parallel over `tp` GPUs
    (people run 8 copies of an 8B model on an 8-GPU node, not one copy over all eight)."""

    tp: int  # GPUs per tensor-parallel group
    replicas: int  # groups in the offer
    slice: float  # < 1: a fraction of one card (MIG)
    idle: int = 0  # GPUs of the offer no replica uses (6 GPUs at TP 4)

    @property
    def used(self) -> int:
        return self.tp * self.replicas

    def describe(self) -> str:
        return f"{self.replicas} x TP{self.tp}" + (f" ({self.idle} idle)" if self.idle else "")


@dataclass(frozen=True, slots=True)
class PreparedServing:
    """A serving job with everything that depends only on the job computed once; `on` places it."""

    job: ServingSpec
    params: ServingParams
    attn_weights: float  # block attention linears, elements
    expert_weights: float  # one expert's MLP (all layers), elements
    unquantized: float  # embeddings, lm_head, norms, biases, routers: kept 16-bit
    lm_head_read: float  # elements read per step for the output projection (tied: the embedding)
    matmul_per_token: float  # weights each token multiplies through (routed experts + lm_head)
    kv_per_token_layer_head: float  # bytes of K+V per token per layer per KV head
    eager: bool = False  # no CUDA graphs: every kernel launched from Python (`enforce_eager`, old vLLM > 8k)
    max_num_seqs: int | None = None  # the engine's cap on running sequences (None: its default)
    _cache: dict[tuple[Any, ...], ServingEstimate] = field(default_factory=dict, repr=False, compare=False)

    @property
    def assumptions(self) -> ServingParams:
        """The parameter set, under the name rankings use for the fine-tuning job's assumption set."""
        return self.params

    @property
    def seq_cap(self) -> int:
        return self.max_num_seqs or self.params.engine(self.job.engine).max_num_seqs

    def layout(self, gpu: GpuSpec, gpus: float) -> Layout:
        """The layout the job's own tensor parallelism makes of the offer (all GPUs in one group when the
        job names none); `layouts` lists every layout `on` chooses from."""
        if not (gpus > 0) or math.isinf(gpus):
            raise InvalidJob(f"GPU count must be positive, got {gpus!r}", field="gpus")
        if gpus < 1:
            if self.job.tensor_parallel not in (None, 1):
                raise InvalidJob("a GPU slice cannot be tensor-parallel", field="tensor_parallel")
            return Layout(1, 1, float(gpus))
        if gpus != int(gpus):
            raise InvalidJob(f"a multi-GPU offer needs a whole number of GPUs, got {gpus!r}", field="gpus")
        n = int(gpus)
        tp = self.job.tensor_parallel or n
        if tp > n or n % tp:
            raise InvalidJob(f"tensor parallelism {tp} does not divide the offer's {n} GPUs", field="tensor_parallel")
        return Layout(tp, n // tp, 1.0)

    def layouts(self, gpu: GpuSpec, gpus: float) -> list[Layout]:
        """Every replicas x TP layout of the offer: the job's TP if it names one, else each power of two
        up to the GPU count whose group splits the attention heads evenly (vLLM requires it)."""
        if gpus < 1 or self.job.tensor_parallel is not None:
            return [self.layout(gpu, gpus)]
        self.layout(gpu, gpus)  # validates the count
        n, heads = int(gpus), self.job.model.heads
        out, tp = [], 1
        while tp <= n:
            if heads % tp == 0:
                out.append(Layout(tp, n // tp, 1.0, idle=n - (n // tp) * tp))
            tp *= 2
        return out or [Layout(n, 1, 1.0)]

    # --- memory ------------------------------------------------------------------------------
    def weight_bytes(self, tp: int) -> float:
        a = self.job.model
        stored = (self.attn_weights + self.expert_weights * a.experts) * WEIGHT_BYTES[self.job.precision]
        return (stored + self.unquantized * 2.0) / tp

    def kv_bytes_per_token(self, tp: int) -> float:
        """KV bytes one token adds per GPU: KV heads split over the group, replicated below one per GPU."""
        heads = max(self.job.model.kv_heads / tp, 1.0)
        return self.kv_per_token_layer_head * self.job.model.layers * heads

    def activation_bytes(self, tp: int) -> float:
        a = self.job.model
        e = self.params.engine(self.job.engine)
        chunk = min(e.chunk_tokens, max(self.job.prompt_tokens, 1))
        per_token = 4.0 * a.hidden + (a.q_dim + 2 * a.kv_dim + 2 * a.intermediate * a.experts_per_token) / tp
        logits = e.max_num_seqs * a.vocab * 4.0 * 2.0  # fp32 logits + probabilities of the largest batch
        return chunk * per_token * 2.0 + logits

    def runtime_bytes(self, tp: int) -> float:
        return (self.params.runtime_gb + (self.params.nccl_gb if tp > 1 else 0.0)) * GB

    def max_concurrency(self, gpu: GpuSpec, gpus: float = 1, memory_gb: float | None = None) -> int:
        """The most sequences of prompt + output tokens whose KV cache fits in the offer (all replicas)."""
        lay = self.layout(gpu, gpus)
        return self._max_per_replica(lay, memory_gb if memory_gb is not None else gpu.memory_gb) * lay.replicas

    def _max_per_replica(self, lay: Layout, memory_gb: float) -> int:
        util = self.params.engine(self.job.engine).memory_utilization
        free = memory_gb * GB * util - self.weight_bytes(lay.tp) - self.activation_bytes(lay.tp)
        free -= self.runtime_bytes(lay.tp)
        per_seq = self.kv_bytes_per_token(lay.tp) * self.job.context
        return max(0, int(free // per_seq))

    # --- time --------------------------------------------------------------------------------

    def _touched_weight_bytes(self, tp: int, batch: float) -> float:
        """Weight bytes a decode step of `batch` tokens reads per GPU (MoE: only the experts routed to)."""
        a = self.job.model
        experts = float(a.experts)
        if a.experts > 1:
            k = a.experts_per_token
            experts = a.experts * (1.0 - (1.0 - k / a.experts) ** batch)
        linear = (self.attn_weights + self.expert_weights * experts) * WEIGHT_BYTES[self.job.precision]
        return (linear + self.lm_head_read * 2.0) / tp

    def _comm(self, gpu: GpuSpec, tp: int, tokens: float) -> float:
        if tp <= 1:
            return 0.0
        p = self.params
        a = self.job.model
        ring = 2.0 * (tp - 1) / tp
        latency = p.latency_s(gpu.interconnect) + p.engine(self.job.engine).allreduce_us * 1e-6
        return 2.0 * a.layers * (latency + ring * tokens * a.hidden * 2.0 / p.link(gpu.interconnect))

    def step_terms(self, gpu: GpuSpec, lay: Layout, batch: int) -> dict[str, float]:
        """Seconds of one decode step of `batch` sequences on one replica, by term (they sum to the step)."""
        p = self.params
        a = self.job.model
        e = p.engine(self.job.engine)
        ctx = self.job.prompt_tokens + self.job.output_tokens / 2.0
        bw = self.bandwidth(gpu, lay)
        weights = self._touched_weight_bytes(lay.tp, batch) / bw
        kv = batch * ctx * self.kv_bytes_per_token(lay.tp) / bw
        flops = batch * (2.0 * self.matmul_per_token + 4.0 * a.layers * ctx * a.q_dim) / lay.tp
        compute = flops / (self.peak(gpu) * lay.slice * p.decode_compute_fraction * p.vendor_flops(gpu.vendor))
        return {
            "weights": weights,
            "kv_cache": kv,
            "compute_excess": max(0.0, compute - weights - kv),
            "overhead": e.overhead_s,
            "launch": a.layers * (e.eager_layer_us if self.eager else e.layer_us) * 1e-6,
            "per_sequence": e.per_sequence_s * batch * PER_SEQUENCE_AT_TBS / gpu.bandwidth_tbs,
            "communication": self._comm(gpu, lay.tp, batch),
        }

    def prefill_seconds(self, gpu: GpuSpec, lay: Layout) -> float:
        p = self.params
        a = self.job.model
        e = p.engine(self.job.engine)
        n_tok = float(self.job.prompt_tokens)
        flops = n_tok * (2.0 * self.matmul_per_token + 2.0 * a.layers * n_tok * a.q_dim) / lay.tp
        compute = flops / (self.peak(gpu) * lay.slice * p.prefill_compute_fraction * p.vendor_flops(gpu.vendor))
        bw = self.bandwidth(gpu, lay)
        return (
            max(compute, self._touched_weight_bytes(lay.tp, n_tok) / bw) + self._comm(gpu, lay.tp, n_tok) + e.overhead_s
        )

    def prefill_in_step_seconds(self, gpu: GpuSpec, lay: Layout) -> float:
        """What one prompt adds to the replica's time under load. An engine that chunks prompts into
        decode steps pays their FLOPs and all-reduces only (the step reads the weights anyway); one that
        runs prefill as its own pass batches prompts up to its token budget (`chunk_tokens`), so a
        prompt pays its share of that pass's weight read and fixed cost."""
        e = self.params.engine(self.job.engine)
        p = self.params
        a = self.job.model
        n_tok = float(self.job.prompt_tokens)
        flops = n_tok * (2.0 * self.matmul_per_token + 2.0 * a.layers * n_tok * a.q_dim) / lay.tp
        compute = flops / (self.peak(gpu) * lay.slice * p.prefill_compute_fraction * p.vendor_flops(gpu.vendor))
        comm = self._comm(gpu, lay.tp, n_tok)
        if e.chunked_prefill:
            return compute + comm
        share = min(1.0, n_tok / e.chunk_tokens)
        weights = self._touched_weight_bytes(lay.tp, n_tok) / self.bandwidth(gpu, lay)
        return max(compute, weights * share) + comm + e.overhead_s * share

    def bandwidth(self, gpu: GpuSpec, lay: Layout) -> float:
        """Achievable bytes/s per GPU: catalog peak x the memory class's share x the engine's kernels x
        the vendor's software stack (x the slice)."""
        p = self.params
        return (
            gpu.bandwidth_tbs
            * 1e12
            * p.bandwidth(memory_class(gpu))
            * p.engine(self.job.engine).bandwidth
            * p.vendor(gpu.vendor)
            * lay.slice
        )

    def peak(self, gpu: GpuSpec) -> float:
        """Dense tensor FLOP/s the job's GEMMs run at: FP8 for fp8 weights (W8A8), else bf16 (weight-only
        integer kernels de-quantise to bf16 and multiply there)."""
        if self.job.precision == "fp8" and gpu.fp8_tflops:
            return gpu.fp8_tflops * 1e12
        return gpu.bf16_tflops * 1e12

    # --- placing the job ---------------------------------------------------------------------

    def on(
        self,
        gpu: GpuSpec,
        gpus: float = 1,
        *,
        price_per_gpu_hour: Decimal | float | str | None = None,
        memory_gb: float | None = None,
        concurrency: int | None = None,
    ) -> ServingEstimate:
        """Serve the job on `gpus` × `gpu` (one machine; < 1 is a slice whose memory is `memory_gb`).

        Never raises for a card the job cannot use: an unsupported precision, a tensor-parallel degree the
        offer's GPUs do not divide or a KV cache that does not fit is an estimate with `fits` False and the
        `reason` (`check(gpu)` and `layout(gpu, gpus)` raise instead). `concurrency` overrides the job's
        (the $/Mtok-vs-concurrency curve)."""
        if gpus < 1 and memory_gb is None:
            raise InvalidJob("a fractional GPU needs the slice's memory (memory_gb)", field="memory_gb")
        if memory_gb is not None and not (memory_gb > 0):
            raise InvalidJob(f"memory_gb must be positive, got {memory_gb!r}", field="memory_gb")
        price = as_price(price_per_gpu_hour)
        key = (gpu.id, float(gpus), memory_gb, concurrency)
        est = self._cache.get(key)
        if est is None:
            est = self._cache[key] = self._place(gpu, gpus, memory_gb, concurrency)
        return est if price is None else replace(est, price_per_gpu_hour=price)

    def check(self, gpu: GpuSpec) -> None:
        """Raise InvalidJob (naming `precision` or `kv_precision`) if the card cannot run the job's precisions."""
        check_support(self.job, gpu)

    def _place(self, gpu: GpuSpec, gpus: float, memory_gb: float | None, concurrency: int | None) -> ServingEstimate:
        mem = float(memory_gb) if memory_gb is not None else gpu.memory_gb
        try:
            candidates = self.layouts(gpu, gpus)
        except InvalidJob as exc:
            # An offer the job's TP degree does not fit (TP 2 on a 1-GPU machine, TP on a slice) is an
            # offer it cannot use, like FP8 on an A100: a ranking over a market of such offers must not
            # fail as a whole. Priced as one group over the offer so every figure stays defined.
            if exc.field != "tensor_parallel":
                raise
            lay = Layout(1, 1, float(gpus)) if gpus < 1 else Layout(int(gpus), 1, 1.0)
            return self._estimate(gpu, gpus, lay, mem, concurrency, exc.message)
        reason = None
        try:
            check_support(self.job, gpu)
        except InvalidJob as exc:
            reason = exc.message
        options = [self._estimate(gpu, gpus, lay, mem, concurrency, reason) for lay in candidates]
        # The best layout: one that fits, then the most output tokens/s at the load (the offer's price is
        # the same whatever the layout, so that is the lowest $/Mtok), then the one meeting the targets
        # with the fewest GPUs per copy.
        return max(options, key=lambda e: (e.fits, e.targets_met, e.tokens_per_second, -e.layout.tp))

    def _estimate(
        self, gpu: GpuSpec, gpus: float, lay: Layout, mem: float, concurrency: int | None, reason: str | None
    ) -> ServingEstimate:
        per_replica_max = self._max_per_replica(lay, mem)
        wanted = concurrency if concurrency is not None else self.job.concurrency
        targets_met = True
        if wanted is not None:
            # The load splits over the replicas as evenly as it can; each replica runs what its KV cache
            # and the engine's cap hold and queues the rest. Fewer users than replicas leave some idle.
            demand = max(1, math.ceil(wanted / lay.replicas))
            running = max(1, min(demand, per_replica_max, self.seq_cap))
            users = wanted
        else:
            running, targets_met = self._choose_batch(gpu, lay, max(1, min(per_replica_max, self.seq_cap)))
            demand, users = running, running * lay.replicas
        running_total = min(users, running * lay.replicas)
        if reason is None and per_replica_max < 1:
            reason = (
                f"KV cache for one sequence of {self.job.context:,} tokens does not fit beside the weights "
                f"on {lay.describe()} {gpu.name}"
            )
        if reason is None and not targets_met:
            reason = "no concurrency meets the per-user tokens/s or TTFT target on this offer"
        terms = self.step_terms(gpu, lay, running)
        util = self.params.engine(self.job.engine).memory_utilization
        components = {
            "weights": self.weight_bytes(lay.tp),
            "kv_cache": self.kv_bytes_per_token(lay.tp) * self.job.context * running,
            "activations": self.activation_bytes(lay.tp),
            "runtime": self.runtime_bytes(lay.tp),
            "engine_reserve": (1.0 - util) * mem * GB,
        }
        step = sum(terms.values())
        ctx = self.job.prompt_tokens + self.job.output_tokens / 2.0
        roofline = (self._touched_weight_bytes(lay.tp, running) + running * ctx * self.kv_bytes_per_token(lay.tp)) / (
            gpu.bandwidth_tbs * 1e12 * lay.slice
        )
        return ServingEstimate(
            prepared=self,
            gpu=gpu,
            gpus=gpus,
            layout=lay,
            memory_gb=mem,
            concurrency=users,
            running=running_total,
            batch_per_replica=running,
            max_concurrency=per_replica_max * lay.replicas,
            step_terms=terms,
            step_seconds=step,
            prefill_seconds=self.prefill_seconds(gpu, lay),
            prefill_in_cycle_seconds=self.prefill_in_step_seconds(gpu, lay),
            memory_components=components,
            reason=reason,
            efficiency=roofline / step,
            multi_gpu_efficiency=(step - terms["communication"]) / step,
            price_per_gpu_hour=None,
            queued_per_replica=demand - running,
            targets_met=targets_met,
        )

    def _choose_batch(self, gpu: GpuSpec, lay: Layout, upper: int) -> tuple[int, bool]:
        """The largest batch per replica up to `upper` that keeps the per-user and TTFT targets (both
        worsen as the batch grows, so a bisection finds it); (1, False) when even one sequence misses."""
        job = self.job
        if job.target_tokens_per_user is None and job.max_ttft_s is None:
            return upper, True
        prefill = self.prefill_seconds(gpu, lay)
        in_cycle = self.prefill_in_step_seconds(gpu, lay)

        def ok(b: int) -> bool:
            step = sum(self.step_terms(gpu, lay, b).values())
            per_user = job.output_tokens / (job.output_tokens * step + b * in_cycle)
            if job.target_tokens_per_user is not None and per_user < job.target_tokens_per_user:
                return False
            rho = min(b * in_cycle / (job.output_tokens * step + b * in_cycle), 0.95)
            return job.max_ttft_s is None or prefill * (1.0 + rho / (2.0 * (1.0 - rho))) + step <= job.max_ttft_s

        if not ok(1):
            return 1, False
        lo, hi = 1, upper
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
        return lo, True

    def curve(
        self,
        gpu: GpuSpec,
        gpus: float,
        concurrencies: list[int],
        price_per_gpu_hour: Decimal | float | str | None = None,
        memory_gb: float | None = None,
    ) -> list[ServingEstimate]:
        """The estimate at each concurrency (the $/Mtok-vs-concurrency trade-off people pick a batch by)."""
        return [
            self.on(gpu, gpus, price_per_gpu_hour=price_per_gpu_hour, memory_gb=memory_gb, concurrency=c)
            for c in concurrencies
        ]


@dataclass(frozen=True, slots=True)
class ServingEstimate:
    """The job on one offer. Mirrors `tracker.estimate.Estimate` where rankings read it (fits, vram_gb,
    memory_gb, tokens_per_second, hours, efficiency, multi_gpu_efficiency)."""

    prepared: PreparedServing
    gpu: GpuSpec
    gpus: float
    layout: Layout
    memory_gb: float  # available per GPU
    concurrency: int  # users of the offer: sequences running or queued
    running: int  # sequences decoding at once over all replicas
    batch_per_replica: int  # sequences decoding at once on each replica (KV cache and engine cap bound it)
    max_concurrency: int  # most sequences whose KV cache fits on the offer
    step_terms: dict[str, float]  # seconds per decode step, by term
    step_seconds: float
    prefill_seconds: float  # one prompt
    memory_components: dict[str, float]  # bytes per GPU
    reason: str | None  # why it does not fit (None when it does)
    efficiency: float  # share of the bandwidth roofline the decode step reaches
    multi_gpu_efficiency: float  # share of the step that is not tensor-parallel communication
    price_per_gpu_hour: Decimal | None
    prefill_in_cycle_seconds: float = 0.0  # what one prompt adds to the replica's time (chunked: no weight pass)
    queued_per_replica: int = 0  # users waiting for a KV-cache slot on each replica
    targets_met: bool = True

    @property
    def job(self) -> ServingSpec:
        return self.prepared.job

    @property
    def fits(self) -> bool:
        return self.reason is None and self.vram_gb <= self.memory_gb

    @property
    def vram_bytes(self) -> float:
        return sum(self.memory_components.values())

    @property
    def vram_gb(self) -> float:
        return self.vram_bytes / GB

    @property
    def cycle_seconds(self) -> float:
        """One request's life on its replica: its output's decode steps plus the batch's prefills (each
        prefill as it costs the replica: chunked into the steps where the engine does that)."""
        return self.job.output_tokens * self.step_seconds + self.batch_per_replica * self.prefill_in_cycle_seconds

    @property
    def tokens_per_second(self) -> float:
        """Aggregate output tokens/s of the whole offer."""
        return self.running * self.job.output_tokens / self.cycle_seconds

    @property
    def per_user_tokens_per_second(self) -> float:
        return self.job.output_tokens / self.cycle_seconds

    @property
    def decode_tokens_per_second(self) -> float:
        """Output tokens/s while only decoding (no prefill in between): what decode benchmarks report."""
        return self.running / self.step_seconds

    @property
    def queue_wait_s(self) -> float:
        """Mean wait for a KV-cache slot when more users than fit are in flight: the replica finishes
        `batch_per_replica` requests per cycle, so a request behind `queued_per_replica` others waits
        that many over the completion rate."""
        return self.queued_per_replica * self.cycle_seconds / self.batch_per_replica

    @property
    def prefill_wait_s(self) -> float:
        """Mean wait behind other prompts being prefilled: an M/D/1 queue whose utilisation is the
        replica's share of time on prefill (ρ / 2(1 − ρ) prefill times)."""
        rho = min(self.prefill_share, 0.95)
        return self.prefill_seconds * rho / (2.0 * (1.0 - rho))

    @property
    def ttft_s(self) -> float:
        """Time to first token at the load: waiting for a slot and behind other prefills, the prompt's own
        prefill and one step of the running batch."""
        return self.queue_wait_s + self.prefill_wait_s + self.prefill_seconds + self.step_seconds

    @property
    def request_seconds(self) -> float:
        """One request's life from arrival to its last token: waiting for a slot and behind other prefills,
        then its cycle on the replica (what an interruption throws away half of, on average)."""
        return self.queue_wait_s + self.prefill_wait_s + self.cycle_seconds

    @property
    def requests_per_second(self) -> float:
        return self.tokens_per_second / self.job.output_tokens

    @property
    def input_tokens_per_second(self) -> float:
        return self.requests_per_second * self.job.prompt_tokens

    @property
    def prefill_share(self) -> float:
        """Share of the offer's time spent on prompts: the input tokens' share of the cost."""
        return self.batch_per_replica * self.prefill_in_cycle_seconds / self.cycle_seconds

    @property
    def band(self) -> ServingBand:
        """Factors on tokens/s: the 5th-95th percentile of the calibration's leave-one-source-out ratios
        (the fine-tuning estimate's `Band` has the same `low` / `high`, so rankings read either)."""
        low, high = self.prepared.params.band
        return ServingBand(low=low, high=high, rows=self.prepared.params.band_rows)

    @property
    def tokens_per_second_band(self) -> tuple[float, float]:
        """Aggregate output tokens/s at the band's low and high factors."""
        b = self.band
        return self.tokens_per_second * b.low, self.tokens_per_second * b.high

    @property
    def load_tokens(self) -> float:
        """Output tokens of the priced amount of work: a month of the stated load, else one million."""
        need = self.job.load_tokens_per_second
        return need * HOURS_PER_MONTH * 3600.0 if need is not None else MILLION

    @property
    def hours(self) -> float:
        """Hours of this offer that generate `load_tokens` (what `cost_per_run` charges)."""
        return self.load_tokens / self.tokens_per_second / 3600.0

    @property
    def offers_needed(self) -> int | None:
        """Copies of this offer that carry the stated load at once (None without a load)."""
        need = self.job.load_tokens_per_second
        return None if need is None else max(1, math.ceil(need / self.tokens_per_second))

    @property
    def gpus_needed(self) -> float | None:
        n = self.offers_needed
        return None if n is None else n * self.gpus

    @property
    def price_per_hour(self) -> Decimal | None:
        if self.price_per_gpu_hour is None:
            return None
        return money.machine_price(self.price_per_gpu_hour, self.gpus)

    @property
    def usd_per_mtok(self) -> Decimal | None:
        """The whole price over the output tokens: what rankings sort serving offers on."""
        per_hour = self.price_per_hour
        return None if per_hour is None else money.per_million_tokens(per_hour, self.tokens_per_second)

    @property
    def usd_per_mtok_output(self) -> Decimal | None:
        """The decode share of the price over the output tokens."""
        per_hour = self.price_per_hour
        if per_hour is None:
            return None
        return money.per_million_tokens(per_hour * Decimal(repr(1.0 - self.prefill_share)), self.tokens_per_second)

    @property
    def usd_per_mtok_input(self) -> Decimal | None:
        """The prefill share of the price over the prompt tokens."""
        per_hour = self.price_per_hour
        if per_hour is None:
            return None
        return money.per_million_tokens(per_hour * Decimal(repr(self.prefill_share)), self.input_tokens_per_second)

    @property
    def monthly_cost(self) -> Decimal | None:
        """The offers the stated load needs, each rented for a whole month (730 h)."""
        per_hour, n = self.price_per_hour, self.offers_needed
        if per_hour is None or n is None:
            return None
        return money.cost(per_hour * n, HOURS_PER_MONTH)

    @property
    def cost_per_run(self) -> Decimal | None:
        per_hour = self.price_per_hour
        return None if per_hour is None else money.cost(per_hour, self.hours)

    @property
    def components(self) -> dict[str, Any]:
        """Every term of the estimate by name: memory in GB per GPU, decode step and prefill in seconds."""
        return {
            "memory_gb": {k: round(v / GB, 3) for k, v in self.memory_components.items()},
            "decode_step_s": {k: round(v, 7) for k, v in self.step_terms.items()},
            "prefill_s": round(self.prefill_seconds, 6),
        }

    def as_dict(self) -> dict[str, Any]:
        job = self.job
        gpus: float | int = int(self.gpus) if self.gpus == int(self.gpus) else self.gpus
        low, high = self.tokens_per_second_band
        per_hour = self.price_per_hour
        band_usd = None
        if per_hour is not None:
            band_usd = [money.per_million_tokens(per_hour, high), money.per_million_tokens(per_hour, low)]
        return {
            "kind": "inference",
            "gpu": self.gpu.id,
            "gpu_name": self.gpu.name,
            "gpus": gpus,
            "layout": self.layout.describe(),
            "tensor_parallel": self.layout.tp,
            "replicas": self.layout.replicas,
            "gpus_used": self.layout.used if self.gpus >= 1 else gpus,
            "gpus_idle": self.layout.idle,
            "concurrency_per_replica": self.batch_per_replica + self.queued_per_replica,
            "running_per_replica": self.batch_per_replica,
            "queued_per_replica": self.queued_per_replica,
            "engine": job.engine,
            "precision": job.precision,
            "kv_precision": job.kv_precision,
            "memory_gb": round(self.memory_gb, 2),
            "vram_gb": round(self.vram_gb, 2),
            "vram_breakdown": self.components["memory_gb"],
            "fits": self.fits,
            "reason": self.reason,
            "concurrency": self.concurrency,
            "max_concurrency": self.max_concurrency,
            "tokens_per_second": round(self.tokens_per_second, 1),
            "decode_tokens_per_second": round(self.decode_tokens_per_second, 1),
            "per_user_tokens_per_second": per_user_rate(self.per_user_tokens_per_second),
            "input_tokens_per_second": round(self.input_tokens_per_second, 1),
            "ttft_s": round(self.ttft_s, 4),
            "queue_wait_s": round(self.queue_wait_s, 4),
            "requests_per_second": round(self.requests_per_second, 4),
            "step_seconds": round(self.step_seconds, 7),
            "step_time_breakdown": self.components["decode_step_s"],
            "prefill_seconds": round(self.prefill_seconds, 6),
            "components": self.components,
            "band": {
                "tokens_per_second": [round(low, 1), round(high, 1)],
                "usd_per_mtok": band_usd,
                "quantiles": [0.1, 0.9],
                "rows": self.prepared.params.band_rows,
            },
            "efficiency": round(self.efficiency, 4),
            "efficiency_meaning": "share of the bandwidth roofline (weights + KV bytes at peak bandwidth)",
            "multi_gpu_efficiency": round(self.multi_gpu_efficiency, 4),
            "price_per_gpu_hour": self.price_per_gpu_hour,
            "price_per_hour": per_hour,
            "usd_per_mtok": self.usd_per_mtok,
            "usd_per_mtok_output": self.usd_per_mtok_output,
            "usd_per_mtok_input": self.usd_per_mtok_input,
            "prefill_share": round(self.prefill_share, 4),
            "load_tokens": self.load_tokens,
            "offers_needed": self.offers_needed,
            "gpus_needed": self.gpus_needed,
            "monthly_cost": self.monthly_cost,
            "model": job.model.id,
            "model_approximate": job.model.approximate,
            "vram_scope": "per GPU, with the engine's reserved share of the card",
        }


def per_user_rate(tokens_per_second: float) -> float:
    """Per-user tokens/s as shown: two decimals from 1 up, three significant digits below (65,536 users
    sharing a node get 0.00473, not a misleading 0.0 that reads as "no output at all")."""
    if tokens_per_second >= 1 or tokens_per_second <= 0 or not math.isfinite(tokens_per_second):
        return round(tokens_per_second, 2)
    return float(f"{tokens_per_second:.3g}")


def prepare_serving(
    job: ServingSpec, params: ServingParams | None = None, *, eager: bool = False, max_num_seqs: int | None = None
) -> PreparedServing:
    """Everything about the job that does not depend on the card, computed once. `eager`: the engine
    runs without CUDA graphs; `max_num_seqs`: its cap on running sequences (default: the engine's)."""
    a = job.model
    shapes = a.module_shapes()
    attn = sum(d_in * d_out for m, (d_in, d_out, _) in shapes.items() if m in ("q", "k", "v", "o")) * a.layers
    expert = sum(d_in * d_out for m, (d_in, d_out, _) in shapes.items() if m in ("gate", "up", "down")) * a.layers
    p = a.params
    return PreparedServing(
        job=job,
        params=params or get_params(),
        attn_weights=float(attn),
        expert_weights=float(expert),
        unquantized=float(p.unquantized),
        lm_head_read=float(a.vocab * a.hidden),
        matmul_per_token=float(p.matmul_per_token(a.vocab, a.hidden)),
        kv_per_token_layer_head=2.0 * a.head_dim * KV_BYTES[job.kv_precision],
        eager=eager or job.eager,
        max_num_seqs=max_num_seqs,
    )

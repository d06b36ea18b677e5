"""The estimate itself: prepare a job once, then place it on any number of offers cheaply.

`prepare(job, assumptions)` does everything that depends only on the job (parameter counts,
FLOPs per token, memory components before sharding). `PreparedJob.on(gpu, gpus, ...)` is then a
handful of multiplications, so ranking thousands of offers for one request costs microseconds
each. `estimate(...)` is the one-shot convenience wrapper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from tracker import money
from tracker.catalog.gpus import GpuSpec
from tracker.estimate.assumptions import AssumptionSet, efficiency_class, get_assumptions
from tracker.estimate.errors import InvalidJob
from tracker.estimate.flops import FlopsBreakdown, flops_per_token
from tracker.estimate.job import JobSpec
from tracker.estimate.memory import COMPONENTS, GB, SHARDED, MemoryParts, memory_parts
from tracker.estimate.multinode import seed_link_key
from tracker.estimate.stacks import Stack, get_stack
from tracker.estimate.step import RawStep, raw_step, step_class, step_terms, sustained_peak
from tracker.estimate.step import tokens_per_second as step_tokens_per_second
from tracker.estimate.throughput import as_price, hours_for, tokens_per_second
from tracker.estimate.uncertainty import Band, tokens_band, vram_band


@dataclass(frozen=True, slots=True)
class PreparedJob:
    job: JobSpec
    assumptions: AssumptionSet
    flops: FlopsBreakdown
    memory: MemoryParts
    flops_per_token: float
    sharded_bytes: float
    replicated_bytes: float
    stack: Stack | None = None  # step-time sets only: the job's stack, or the set's default
    # Efficiency depends only on (GPU class, method); memoised because offers repeat classes.
    _efficiency: dict[tuple[str, str], float] = field(default_factory=dict, repr=False, compare=False)

    def efficiency(self, gpu: GpuSpec) -> float:
        key = (gpu.architecture, gpu.form_factor)
        eff = self._efficiency.get(key)
        if eff is None:
            eff = self._efficiency[key] = self.assumptions.efficiency(efficiency_class(*key), self.job.method)
        return eff

    def vram_components(self, gpus: float = 1) -> dict[str, float]:
        """Bytes per GPU for each component on `gpus` GPUs of one offer, by the job's layout
        (JobSpec.layout): fsdp (default) shards weights, adapters, grads and optimizer state over every
        GPU and holds two gathered layers; ddp replicates everything; a tensor-parallel degree t (FSDP x
        TP, or tp-fsdp) also splits the gathered layers, the activations (sequence parallel), the
        logits (vocabulary-parallel loss) and the dequantisation buffer t ways."""
        mem = self.memory
        out = dict(mem.components)
        layout, tp, dp = self.job.layout(gpus)
        if layout not in ("single", "ddp"):
            for name in SHARDED:
                out[name] /= tp * dp
            if dp > 1:  # FSDP all-gathers each layer within its data-parallel group
                out["fsdp_buffers"] = mem.prefetch_layers * mem.layer_bytes / tp
        if tp > 1:
            for name in ("activations", "recompute_working_set", "logits", "dequant_buffer"):
                out[name] /= tp
        # The caching allocator reserves beyond its allocated peak; the CUDA context is outside it.
        allocated = sum(v for k, v in out.items() if k not in ("runtime_overhead", "allocator_reserve"))
        out["allocator_reserve"] = mem.reserve_fraction * allocated
        return {name: out[name] for name in COMPONENTS}

    def vram_bytes(self, gpus: float = 1) -> float:
        """Peak bytes per GPU (reserved + CUDA context: what nvidia-smi shows)."""
        return sum(self.vram_components(gpus).values())

    def on(
        self,
        gpu: GpuSpec,
        gpus: float = 1,
        *,
        price_per_gpu_hour: Decimal | float | str | None = None,
        memory_gb: float | None = None,
        inter_node_gb_s: float | None = None,
    ) -> Estimate:
        """Place the job on `gpus` × `gpu` (one machine). `gpus` < 1 is a slice of one card: its
        compute is that fraction of the card's and its memory must be given as `memory_gb`.
        `inter_node_gb_s`: the offer spans several nodes joined by a network of that achieved bandwidth
        per GPU (tracker.estimate.multinode), which then bounds its communication."""
        if not (gpus > 0) or math.isinf(gpus):
            raise InvalidJob(f"GPU count must be positive, got {gpus!r}", field="gpus")
        if gpus > 1 and gpus != int(gpus):
            raise InvalidJob(f"a multi-GPU offer needs a whole number of GPUs, got {gpus!r}", field="gpus")
        if gpus < 1 and memory_gb is None:
            raise InvalidJob("a fractional GPU needs the slice's memory (memory_gb)", field="memory_gb")
        if memory_gb is not None and not (memory_gb > 0):
            raise InvalidJob(f"memory_gb must be positive, got {memory_gb!r}", field="memory_gb")
        a = self.assumptions
        peak = a.peak_flops(gpu.id, gpu.bf16_tflops)
        price = as_price(price_per_gpu_hour)
        breakdown: dict[str, float] | None = None
        if a.step_params is not None and self.stack is not None:
            cls = step_class(gpu, efficiency_class(gpu.architecture, gpu.form_factor))
            raw = raw_step(self, self.stack, gpu, gpus, sustained_peak(gpu, cls, peak))
            if inter_node_gb_s is not None:
                raw = replace(raw, inter_node_bytes_s=inter_node_gb_s * 1e9)
            breakdown = step_terms(raw, cls, a.step_params)
            tps = step_tokens_per_second(raw, breakdown)
            step = sum(breakdown.values())
            scaling = (step - breakdown["communication"]) / step if gpus > 1 else 1.0
            # Reported like the seed's efficiency: processed tokens × counted FLOPs / (GPUs × peak).
            eff = tps / (1.0 - self.job.pad_fraction) * self.flops_per_token / (peak * gpus)
        else:
            eff = self.efficiency(gpu)
            scaling = a.multi_gpu_efficiency(gpu.interconnect, gpus)
            if inter_node_gb_s is not None:  # across nodes: no better than the network's own scaling
                scaling = min(scaling, a.multi_gpu_efficiency(seed_link_key(inter_node_gb_s), gpus))
            tps = tokens_per_second(peak, gpus, eff, scaling, self.flops_per_token)
            raw = None
        return Estimate(
            prepared=self,
            gpu=gpu,
            gpus=gpus,
            memory_gb=float(memory_gb) if memory_gb is not None else gpu.memory_gb,
            vram_bytes=self.vram_bytes(gpus),
            tokens_per_second=tps,
            efficiency=eff,
            multi_gpu_efficiency=scaling,
            peak_flops=peak,
            hours=hours_for(self.job.tokens, tps),
            price_per_gpu_hour=price,
            step_time_breakdown=breakdown,
            raw_step=raw,
        )


@dataclass(frozen=True, slots=True)
class Estimate:
    prepared: PreparedJob
    gpu: GpuSpec
    gpus: float
    memory_gb: float  # available per GPU
    vram_bytes: float  # needed per GPU
    tokens_per_second: float  # whole offer
    efficiency: float
    multi_gpu_efficiency: float
    peak_flops: float  # per GPU, after any assumption-set override
    hours: float
    price_per_gpu_hour: Decimal | None
    step_time_breakdown: dict[str, float] | None = None  # seconds per micro-step per term (step-time sets)
    raw_step: RawStep | None = field(default=None, repr=False)

    @property
    def step_seconds(self) -> float | None:
        return None if self.step_time_breakdown is None else sum(self.step_time_breakdown.values())

    @property
    def vram_gb(self) -> float:
        return self.vram_bytes / GB

    @property
    def fits(self) -> bool:
        # Vendors' "80GB" is compared in the same decimal unit the estimate reports, as the seed did;
        # cards labelled in GiB therefore keep a few percent of slack.
        return self.vram_gb <= self.memory_gb

    @property
    def headroom_gb(self) -> float:
        return self.memory_gb - self.vram_gb

    @property
    def vram_breakdown(self) -> dict[str, float]:
        """GB per GPU for each component, in display order."""
        return {name: value / GB for name, value in self.prepared.vram_components(self.gpus).items()}

    @property
    def price_per_hour(self) -> Decimal | None:
        if self.price_per_gpu_hour is None:
            return None
        return money.machine_price(self.price_per_gpu_hour, self.gpus)

    @property
    def cost_per_run(self) -> Decimal | None:
        per_hour = self.price_per_hour
        return None if per_hour is None else money.cost(per_hour, self.hours)

    @property
    def usd_per_mtok(self) -> Decimal | None:
        per_hour = self.price_per_hour
        return None if per_hour is None else money.per_million_tokens(per_hour, self.tokens_per_second)

    # --- uncertainty (tracker/estimate/uncertainty.py): step-time sets only, None for the seed -------

    @property
    def band(self) -> Band | None:
        """The tokens/s band of this job's stack on this card's class (hours and cost follow it)."""
        stack = self.prepared.stack
        if stack is None:
            return None
        return tokens_band(stack.name, efficiency_class(self.gpu.architecture, self.gpu.form_factor))

    @property
    def vram_band(self) -> Band | None:
        stack = self.prepared.stack
        if stack is None:
            return None
        return vram_band(stack.name, self.prepared.job.method)

    @property
    def tokens_per_second_low(self) -> float | None:
        band = self.band
        return None if band is None else self.tokens_per_second * band.low

    @property
    def tokens_per_second_high(self) -> float | None:
        band = self.band
        return None if band is None else self.tokens_per_second * band.high

    @property
    def hours_low(self) -> float | None:
        high = self.tokens_per_second_high
        return None if high is None else hours_for(self.prepared.job.tokens, high)

    @property
    def hours_high(self) -> float | None:
        low = self.tokens_per_second_low
        return None if low is None else hours_for(self.prepared.job.tokens, low)

    def _cost(self, hours: float | None) -> Decimal | None:
        per_hour = self.price_per_hour
        return None if per_hour is None or hours is None else money.cost(per_hour, hours)

    @property
    def cost_per_run_low(self) -> Decimal | None:
        return self._cost(self.hours_low)

    @property
    def cost_per_run_high(self) -> Decimal | None:
        return self._cost(self.hours_high)

    @property
    def vram_gb_low(self) -> float | None:
        band = self.vram_band
        return None if band is None else self.vram_gb * band.low

    @property
    def vram_gb_high(self) -> float | None:
        band = self.vram_band
        return None if band is None else self.vram_gb * band.high

    def band_dict(self) -> dict[str, Any]:
        """The band fields of `as_dict` (also what the ranking shows per offer)."""
        band, vband = self.band, self.vram_band
        if band is None or vband is None:
            return {"band": None}
        per_hour = self.price_per_hour
        lo, hi = self.tokens_per_second_low, self.tokens_per_second_high
        assert lo is not None and hi is not None
        fits = self.memory_gb
        return {
            "tokens_per_second_low": round(lo, 1),
            "tokens_per_second_high": round(hi, 1),
            "hours_low": _round4(self.hours_low),
            "hours_high": _round4(self.hours_high),
            "cost_per_run_low": self.cost_per_run_low,
            "cost_per_run_high": self.cost_per_run_high,
            "usd_per_mtok_low": None if per_hour is None else money.per_million_tokens(per_hour, hi),
            "usd_per_mtok_high": None if per_hour is None else money.per_million_tokens(per_hour, lo),
            "vram_gb_low": round(self.vram_gb * vband.low, 2),
            "vram_gb_high": round(self.vram_gb * vband.high, 2),
            # "yes": fits even at the top of the VRAM band; "maybe": only the estimate or less fits.
            "fits_band": "yes"
            if self.vram_gb * vband.high <= fits
            else "maybe"
            if self.vram_gb * vband.low <= fits
            else "no",
            "band": {
                "tokens_per_second": band.describe(),
                "vram": vband.describe(),
                "efficiency_class": efficiency_class(self.gpu.architecture, self.gpu.form_factor),
            },
        }

    def as_dict(self) -> dict[str, Any]:
        job = self.prepared.job
        a = self.prepared.assumptions
        gpus: float | int = int(self.gpus) if self.gpus == int(self.gpus) else self.gpus
        return {
            "gpu": self.gpu.id,
            "gpu_name": self.gpu.name,
            "gpus": gpus,
            "memory_gb": round(self.memory_gb, 2),
            "vram_gb": round(self.vram_gb, 2),
            "vram_breakdown": {k: round(v, 3) for k, v in self.vram_breakdown.items()},
            "fits": self.fits,
            "headroom_gb": round(self.headroom_gb, 2),
            "tokens_per_second": round(self.tokens_per_second, 1),
            "tokens_per_second_per_gpu": round(self.tokens_per_second / self.gpus, 1),
            "peak_tflops": round(self.peak_flops / 1e12, 2),
            "efficiency": round(self.efficiency, 4),
            "efficiency_class": efficiency_class(self.gpu.architecture, self.gpu.form_factor),
            "efficiency_source": a.efficiency.provenance(
                efficiency_class(self.gpu.architecture, self.gpu.form_factor), job.method
            ),
            "multi_gpu_efficiency": self.multi_gpu_efficiency,
            "flops_per_token": self.prepared.flops_per_token,
            "hours": round(self.hours, 4),
            "price_per_gpu_hour": self.price_per_gpu_hour,
            "price_per_hour": self.price_per_hour,
            "cost_per_run": self.cost_per_run,
            "usd_per_mtok": self.usd_per_mtok,
            "model": job.model.id,
            "model_approximate": job.model.approximate,
            "method": job.method,
            "tokens": job.tokens,
            "assumptions": a.name,
            "stack": self.prepared.stack.name if self.prepared.stack is not None else None,
            "precision": (job.precision or self.prepared.stack.default_precision)
            if self.prepared.stack is not None and job.method == "full"
            else job.precision,
            "parallel": (job.parallel or "fsdp") if self.gpus > 1 else None,
            "tensor_parallel": job.layout(self.gpus)[1],
            "selective_checkpointing": job.selective_checkpointing,
            "loss": (job.loss or self.prepared.stack.loss) if self.prepared.stack is not None else None,
            "pad_fraction": job.pad_fraction,
            "vram_scope": "reserved + CUDA context (as nvidia-smi shows)",
            "step_seconds": None if self.step_seconds is None else round(self.step_seconds, 6),
            "step_time_breakdown": None
            if self.step_time_breakdown is None
            else {k: round(v, 6) for k, v in self.step_time_breakdown.items()},
            "tokens_per_step": None if self.raw_step is None else self.raw_step.useful_tokens * self.raw_step.replicas,
        } | self.band_dict()


def _round4(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def prepare(job: JobSpec, assumptions: AssumptionSet | str | None = None) -> PreparedJob:
    a = assumptions if isinstance(assumptions, AssumptionSet) else get_assumptions(assumptions)
    flops = flops_per_token(job, a.flops)
    stack = None
    knobs = a.memory
    if a.default_stack is not None:
        stack = get_stack(job.stack or a.default_stack)
        stack.check_options(job.selective_checkpointing, job.loss)  # the set's default stack, if none was named
        knobs = stack.memory_for(job.precision, job.loss)
    elif job.loss is not None:
        raise InvalidJob(f"assumption set {a.name} models no loss kinds: give a stack, or no loss", field="loss")
    mem = memory_parts(job, knobs)
    return PreparedJob(
        job=job,
        assumptions=a,
        flops=flops,
        memory=mem,
        flops_per_token=flops.total,
        sharded_bytes=mem.sharded_bytes,
        replicated_bytes=mem.replicated_bytes,
        stack=stack,
    )


def estimate(
    job: JobSpec,
    gpu: GpuSpec,
    gpus: float = 1,
    assumptions: AssumptionSet | str | None = None,
    *,
    price_per_gpu_hour: Decimal | float | str | None = None,
    memory_gb: float | None = None,
) -> Estimate:
    return prepare(job, assumptions).on(gpu, gpus, price_per_gpu_hour=price_per_gpu_hour, memory_gb=memory_gb)

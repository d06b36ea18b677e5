"""Training FLOPs per token (§D1).

Full fine-tuning costs 2N forward + 4N backward (input and weight gradients) = 6N, plus 2N when
activations are recomputed. Frozen weights need no weight-gradient GEMM, so (Q)LoRA is 4N, or 6N
with recompute; the small adapters themselves are trained fully. Selective checkpointing re-runs no
GEMM: its FLOPs are those without checkpointing. Attention adds 4·L·s·d_attn per
token forward, whatever the method (it has no weights to freeze), halved for causal kernels. QLoRA
dequantisation is memory-bound and shows up as lower efficiency, not as FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tracker.estimate.job import JobSpec


@dataclass(frozen=True, slots=True)
class FlopsKnobs:
    params: Literal["total", "matmul"]
    full: float
    full_recompute: float
    lora: float
    lora_recompute: float
    adapter_flops: bool
    attention: bool
    causal_attention_factor: float = 0.5

    def multiplier(self, method: str, recompute: bool) -> float:
        if method == "full":
            return self.full_recompute if recompute else self.full
        return self.lora_recompute if recompute else self.lora


@dataclass(frozen=True, slots=True)
class FlopsBreakdown:
    n_params: float  # the N that the multiplier applies to
    multiplier: float  # 4, 6 or 8
    dense: float  # multiplier × N
    adapters: float
    attention: float

    @property
    def total(self) -> float:
        return self.dense + self.adapters + self.attention

    def as_dict(self) -> dict[str, float]:
        return {
            "n_params": self.n_params,
            "multiplier": self.multiplier,
            "dense": self.dense,
            "adapters": self.adapters,
            "attention": self.attention,
            "total": self.total,
        }


def flops_per_token(job: JobSpec, knobs: FlopsKnobs) -> FlopsBreakdown:
    arch = job.model
    counts = arch.params
    recompute = job.recomputes_gemms  # selective checkpointing keeps GEMM (and attention) outputs
    total = knobs.params == "total"
    n = float(counts.total if total else counts.matmul_per_token(arch.vocab, arch.hidden))
    mult = knobs.multiplier(job.method, recompute)
    adapters = 0.0
    if knobs.adapter_flops and job.trains_adapters:
        # Adapters get forward, both backward GEMMs, and the recompute forward.
        adapters = (8.0 if recompute else 6.0) * job.lora_params()
    attention = 0.0
    if knobs.attention:
        passes = 4.0 if recompute else 3.0  # forward, backward = 2× forward, recompute forward
        attention = 4.0 * arch.layers * job.seq_len * arch.q_dim * passes * knobs.causal_attention_factor
    return FlopsBreakdown(n_params=n, multiplier=mult, dense=mult * n, adapters=adapters, attention=attention)

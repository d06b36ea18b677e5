"""Software stacks (tracker/estimate/data/stacks.toml): the `stack` and `precision` job inputs.

A stack decides how much memory a job needs (storage widths, chunked or materialised logits, the
adapters' and optimizer's dtypes) and how much memory-bound work each step does (fused kernels or
not). The step-time physics every stack shares lives in `[step]` of the same file (step.py).

The assumption sets `hf-peft` and `optimized` predate stacks; they are now names for the step
model with a default stack (`hf-peft` → `hf`, `optimized` → `unsloth`), so old requests and saved
alerts keep their meaning. A job's explicit `stack` wins over the set's default.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

from tracker.estimate.architectures import DATA_DIR
from tracker.estimate.errors import InvalidJob

STACKS_FILE = DATA_DIR / "stacks.toml"
Precision = Literal["bf16", "mixed"]
PRECISIONS: tuple[str, ...] = ("bf16", "mixed")

# Bytes per parameter of full fine-tuning (weights, gradients, optimizer state) per precision.
# bf16: pure-bf16 AdamW, everything in bf16 (2 + 2 + 2x2); LLaMA-Factory's "pure_bf16" 8 B/param.
# mixed: bf16 working copy + fp32 master (2 + 4), fp32 gradients (4), fp32 m and v (8): §B7.
FULL_BYTES: dict[str, tuple[float, float, float]] = {"bf16": (2.0, 2.0, 4.0), "mixed": (6.0, 4.0, 8.0)}


@dataclass(frozen=True, slots=True)
class MemoryKnobs:
    quantize_all_params: bool
    nf4_bits: float
    upcast_unquantized_qlora: bool
    lora_bytes_per_param: float
    full_weight_bytes: float
    full_grad_bytes: float
    full_optimizer_bytes: float
    checkpoint_bytes_per_hidden: float
    working_set_per_hidden: float
    working_set_per_intermediate: float
    no_checkpoint_per_hidden: float
    no_checkpoint_per_kv: float
    no_checkpoint_per_intermediate: float
    logits_bytes_per_vocab: float
    logits_chunk_tokens: int  # 0: the whole micro-batch's logits are materialised at once
    dequant_buffer: bool
    fsdp_prefetch_layers: int
    runtime_overhead_gb: float
    # PyTorch's caching allocator reserves more than it has allocated at the peak (fragmentation);
    # VRAM figures are what the card shows, i.e. reserved + CUDA context. 0 in the seed's accounting.
    allocator_reserve_fraction: float = 0.0


@dataclass(frozen=True, slots=True)
class Stack:
    name: str
    title: str
    non_gemm: float  # prior (or placeholder for a fitted value): multiplier on memory-bound work vs hf
    non_gemm_fit: bool
    non_gemm_why: str
    adapter_traffic: float
    logits_traffic: float
    default_precision: str
    memory: MemoryKnobs  # full_* at the default precision

    def memory_for(self, precision: str | None) -> MemoryKnobs:
        w, g, o = FULL_BYTES[precision or self.default_precision]
        return replace(self.memory, full_weight_bytes=w, full_grad_bytes=g, full_optimizer_bytes=o)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "default_precision": self.default_precision,
            "adapter_traffic": self.adapter_traffic,
            "logits_traffic": self.logits_traffic,
            "non_gemm_prior": self.non_gemm,
            "non_gemm_fitted": self.non_gemm_fit,
            "non_gemm_why": self.non_gemm_why,
            "memory": {k: getattr(self.memory, k) for k in MemoryKnobs.__slots__},
        }


@cache
def raw_stacks_file() -> dict[str, Any]:
    with STACKS_FILE.open("rb") as fh:
        return tomllib.load(fh)


@cache
def stacks() -> dict[str, Stack]:
    out = {}
    for name, raw in raw_stacks_file()["stacks"].items():
        w, g, o = FULL_BYTES[raw["default_precision"]]
        memory = MemoryKnobs(**raw["memory"], full_weight_bytes=w, full_grad_bytes=g, full_optimizer_bytes=o)
        out[name] = Stack(
            name=name,
            title=raw["title"],
            non_gemm=float(raw["non_gemm"]),
            non_gemm_fit=bool(raw.get("non_gemm_fit", False)),
            non_gemm_why=raw["non_gemm_why"],
            adapter_traffic=float(raw["adapter_traffic"]),
            logits_traffic=float(raw["logits_traffic"]),
            default_precision=raw["default_precision"],
            memory=memory,
        )
    return out


def stack_names() -> list[str]:
    return list(stacks())


def get_stack(name: str) -> Stack:
    known = stacks()
    key = name.strip().lower()
    if key not in known:
        raise InvalidJob(f"stack must be one of {', '.join(known)}, got {name!r}", field="stack")
    return known[key]

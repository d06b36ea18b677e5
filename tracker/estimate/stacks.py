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
    loss: str = "materialized"  # the loss this stack runs unless the job names another
    losses: tuple[str, ...] = ("materialized",)  # the losses it can run (the `loss` job option)
    selective_checkpointing: bool = False  # whether it offers selective activation checkpointing

    def check_options(self, selective: bool, loss: str | None) -> None:
        """Refuse a job option this stack does not do (naming the field), rather than estimate a run
        nobody can launch."""
        if selective and not self.selective_checkpointing:
            raise InvalidJob(
                f"stack {self.name} has no selective activation checkpointing (torchtune and nemo do)",
                field="selective_checkpointing",
            )
        if loss is not None and loss not in self.losses:
            raise InvalidJob(f"stack {self.name} runs the loss {' or '.join(self.losses)}, not {loss}", field="loss")

    def memory_for(self, precision: str | None, loss: str | None = None) -> MemoryKnobs:
        # Placing one job on thousands of offers asks this each time: built once per stack and option.
        return _knobs(self, precision, loss)

    def _build_knobs(self, precision: str | None, loss: str | None) -> MemoryKnobs:
        w, g, o = FULL_BYTES[precision or self.default_precision]
        knobs = replace(self.memory, full_weight_bytes=w, full_grad_bytes=g, full_optimizer_bytes=o)
        if loss is not None and loss != self.loss:  # the stack's own loss keeps the stack's own figures
            knobs = replace(knobs, logits_chunk_tokens=loss_kinds()[loss].chunk_tokens)
        return knobs

    def logits_traffic_for(self, loss: str | None) -> float:
        """Bytes per token and vocabulary entry the loss moves (step.py's `logits` term)."""
        if loss is None or loss == self.loss:
            return self.logits_traffic
        return loss_kinds()[loss].traffic

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "default_precision": self.default_precision,
            "loss": self.loss,
            "losses": list(self.losses),
            "selective_checkpointing": self.selective_checkpointing,
            "adapter_traffic": self.adapter_traffic,
            "logits_traffic": self.logits_traffic,
            "non_gemm_prior": self.non_gemm,
            "non_gemm_fitted": self.non_gemm_fit,
            "non_gemm_why": self.non_gemm_why,
            "memory": {k: getattr(self.memory, k) for k in MemoryKnobs.__slots__},
        }


@cache
def _knobs(stack: Stack, precision: str | None, loss: str | None) -> MemoryKnobs:
    return stack._build_knobs(precision, loss)


@dataclass(frozen=True, slots=True)
class LossKind:
    traffic: float  # bytes per token per vocabulary entry moved, forward + backward
    chunk_tokens: int  # tokens whose logits are alive at once; 0: the whole micro-batch
    why: str


@cache
def loss_kinds() -> dict[str, LossKind]:
    """stacks.toml [step.loss]: each loss kind's traffic and chunk, for a job that names a loss other
    than its stack's default."""
    table = raw_stacks_file()["step"]["loss"]
    return {k: LossKind(float(v["traffic"]), int(v["chunk_tokens"]), v["why"]) for k, v in table.items()}


@dataclass(frozen=True, slots=True)
class SelectiveCheckpointing:
    """Bytes per token and layer that selective activation checkpointing keeps (stacks.toml
    [step.selective_checkpointing]): the bf16 GEMM outputs and attention output, per hidden, KV and
    intermediate element."""

    per_hidden: float
    per_kv: float
    per_intermediate: float


@cache
def selective_checkpointing() -> SelectiveCheckpointing:
    t = raw_stacks_file()["step"]["selective_checkpointing"]
    return SelectiveCheckpointing(float(t["per_hidden"]), float(t["per_kv"]), float(t["per_intermediate"]))


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
            loss=raw["loss"],
            losses=tuple(raw["losses"]),
            selective_checkpointing=bool(raw["selective_checkpointing"]),
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

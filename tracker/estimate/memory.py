"""Peak GPU memory as named components (§B9, §B10).

Components are computed once per job, before the job meets a card. Each is either *sharded*
(FSDP / ZeRO-3 splits it across the GPUs of one machine: weights, adapters, gradients, optimizer
state) or *replicated* (every GPU holds its own: activations of its micro-batch, logits, scratch,
CUDA context). Placing the job on n GPUs is then sharded/n + replicated + the FSDP gather buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.estimate.job import JobSpec
from tracker.estimate.stacks import MemoryKnobs, selective_checkpointing

GB = 1e9  # decimal, as vendors label cards ("80GB") and as the seed article reports

# Display order and a one-line meaning for every component, shared by CLI, API and docs.
COMPONENTS: dict[str, str] = {
    "base_weights": "frozen or trained block weights at their storage width (bf16, or NF4 + scales)",
    "unquantized_weights": "embeddings, lm_head, norms, biases: never 4-bit (fp32 when PEFT up-casts them)",
    "trainable_state": "trained parameters' weights, gradients and optimizer state",
    "activations": "checkpointed activations (all of them without checkpointing) for the micro-batch",
    "recompute_working_set": "one block's activations while it is recomputed during backward",
    "logits": "output logits, their fp32 up-cast and gradient for the loss",
    "dequant_buffer": "one weight matrix dequantised to bf16 at a time (QLoRA)",
    "fsdp_buffers": "all-gathered full layers while FSDP computes and prefetches (multi-GPU only)",
    "runtime_overhead": "CUDA context and kernels (outside PyTorch's allocator)",
    "allocator_reserve": "caching-allocator reserve beyond the allocated peak (fragmentation): VRAM is reserved",
}
SHARDED: frozenset[str] = frozenset({"base_weights", "unquantized_weights", "trainable_state"})


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """Bytes per component before sharding, plus what FSDP needs to size its gather buffer."""

    components: dict[str, float]
    layer_bytes: float  # one block's weights at the width FSDP all-gathers them: its unit
    prefetch_layers: int
    reserve_fraction: float = 0.0  # allocator_reserve = this × allocated bytes per GPU (set on placement)
    gathered_bytes: float = 0.0  # the whole model's weights as FSDP all-gathers them, per pass (step.py)

    @property
    def sharded_bytes(self) -> float:
        return sum(v for k, v in self.components.items() if k in SHARDED)

    @property
    def replicated_bytes(self) -> float:
        return sum(v for k, v in self.components.items() if k not in SHARDED)


def memory_parts(job: JobSpec, knobs: MemoryKnobs) -> MemoryParts:
    arch = job.model
    p = arch.params
    s, b, h = job.seq_len, job.batch, arch.hidden
    tokens = float(s * b)
    # A token passes through experts_per_token MLPs, and keeps activations for each.
    inter = arch.intermediate * arch.experts_per_token

    if job.method == "full":
        width = knobs.full_weight_bytes
        base = p.linear * width
        unquant = p.unquantized * width
        trainable = p.total * (knobs.full_grad_bytes + knobs.full_optimizer_bytes)
    else:
        width = knobs.nf4_bits / 8 if job.method == "qlora" else 2.0
        if knobs.quantize_all_params:
            base, unquant = p.total * width, 0.0
        else:
            base = p.linear * width
            upcast = job.method == "qlora" and knobs.upcast_unquantized_qlora
            unquant = p.unquantized * (4.0 if upcast else 2.0)
        trainable = job.lora_params() * knobs.lora_bytes_per_param

    if job.selective_checkpointing:
        # Every layer keeps its GEMM outputs; only the elementwise ops are recomputed, layer by layer.
        sel = selective_checkpointing()
        per_token = sel.per_hidden * h + sel.per_kv * arch.kv_dim + sel.per_intermediate * inter
        stored_layers = 1 if job.offload_activations else arch.layers
        activations = stored_layers * tokens * per_token
        working = 0.0
    elif job.grad_checkpointing:
        stored_layers = 1 if job.offload_activations else arch.layers
        activations = stored_layers * knobs.checkpoint_bytes_per_hidden * tokens * h
        working = tokens * (knobs.working_set_per_hidden * h + knobs.working_set_per_intermediate * inter)
    else:
        per_token = (
            knobs.no_checkpoint_per_hidden * h
            + knobs.no_checkpoint_per_kv * arch.kv_dim
            + knobs.no_checkpoint_per_intermediate * inter
        )
        stored_layers = 1 if job.offload_activations else arch.layers
        activations = stored_layers * tokens * per_token
        working = 0.0

    # Chunked / fused cross-entropy only ever holds one chunk of logits, however long the batch.
    chunk = knobs.logits_chunk_tokens
    logit_tokens = min(tokens, float(chunk)) if chunk > 0 else tokens

    components = {
        "base_weights": base,
        "unquantized_weights": unquant,
        "trainable_state": trainable,
        "activations": activations,
        "recompute_working_set": working,
        "logits": logit_tokens * arch.vocab * knobs.logits_bytes_per_vocab,
        "dequant_buffer": p.largest_linear * 2.0 if job.method == "qlora" and knobs.dequant_buffer else 0.0,
        "fsdp_buffers": 0.0,
        "runtime_overhead": knobs.runtime_overhead_gb * GB,
        "allocator_reserve": 0.0,  # depends on the placement: PreparedJob.vram_components
    }
    # FSDP gathers one block at a time: its linears plus its norms/biases/router, never the embeddings.
    small_width = (unquant / p.unquantized) if unquant else (base / p.total if knobs.quantize_all_params else 2.0)
    linear_width = base / p.total if knobs.quantize_all_params else base / p.linear
    gathered = base + unquant
    if job.method == "full":
        # Mixed precision keeps an fp32 master in the shard; FSDP gathers (and computes with) the bf16 copy.
        small_width = linear_width = min(knobs.full_weight_bytes, 2.0)
        gathered = (p.linear + p.unquantized) * linear_width
    layer_bytes = (p.linear * linear_width + (p.norms + p.biases + p.routers) * small_width) / arch.layers
    return MemoryParts(
        components=components,
        layer_bytes=layer_bytes,
        prefetch_layers=knobs.fsdp_prefetch_layers,
        reserve_fraction=knobs.allocator_reserve_fraction,
        gathered_bytes=gathered,
    )

"""The job being priced: which model, how it is trained, and how much training it gets.

`JobInput` is the one job schema: the HTTP request bodies extend it, the CLI's job options are
generated from its fields (`tracker.cli.job_options`), an alert saves a job as its JSON, and
`JobInput.spec()` turns it into the estimate's input. Adding a field here adds it everywhere.
`make_job` is the single semantic validation point behind it (the model must exist, a LoRA rank
must fit the model, ...), so a bad input produces the same message, naming the same field, in
every shell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from tracker.estimate.architectures import ALL_LINEAR, ModelArch, normalize_targets, resolve_model
from tracker.estimate.errors import InvalidJob
from tracker.estimate.serving.job import ServingSpec, make_serving_job
from tracker.estimate.stacks import PRECISIONS, get_stack
from tracker.estimate.tokens import parse_tokens

Kind = Literal["fine-tune", "inference"]
# Which JobInput fields belong to which kind: one given (not at its default) on the other kind is refused.
FINE_TUNE_ONLY: tuple[str, ...] = (
    "method",
    "rank",
    "lora_targets",
    "seq_len",
    "batch",
    "grad_checkpointing",
    "offload_activations",
    "tokens",
    "examples",
    "tokens_per_example",
    "epochs",
    "assumptions",
    "stack",
    "packing",
    "pad_fraction",
    "parallel",
    "grad_accum",
    "selective_checkpointing",
    "loss",
)
# `tensor_parallel` belongs to both kinds: GPUs per model copy when serving, the TP degree inside FSDP
# when fine-tuning (tracker.estimate.core.PreparedJob.layout).
INFERENCE_ONLY: tuple[str, ...] = (
    "prompt_tokens",
    "output_tokens",
    "concurrency",
    "engine",
    "kv_precision",
    "tokens_per_month",
    "requests_per_second",
    "target_tokens_per_user",
    "max_ttft_s",
    "engine_version",
)
SERVING_PRECISIONS = frozenset({"fp8", "int8", "int4"})
Method = Literal["full", "lora", "qlora"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora")
Parallel = Literal["ddp", "fsdp", "tp-fsdp"]
PARALLELS: tuple[str, ...] = ("ddp", "fsdp", "tp-fsdp")
# How the loss turns hidden states into a gradient (tracker/estimate/stacks.py says which stack does which):
# materialized: the micro-batch's logits, their fp32 up-cast and gradient all alive at once;
# chunked: the output projection and cross-entropy run a chunk of tokens at a time (torchtune);
# fused: the projection and the loss fused, logits never stored whole (Liger FLCE, cut cross-entropy).
Loss = Literal["materialized", "chunked", "fused"]
LOSSES: tuple[str, ...] = ("materialized", "chunked", "fused")
# A tensor-parallel group lives inside one node (its all-reduces run every layer over NVLink/PCIe).
MAX_FINE_TUNE_TP = 64
# Share of a micro-batch that is padding when packing is off and nothing says how long examples are:
# instruction data padded to the longest sequence of a batch (typical Alpaca-style length spread).
DEFAULT_PAD_FRACTION = 0.3

# Plausibility limits that keep every derived figure finite. The largest published pretraining runs
# are ~1.5e13 tokens and ~5e25 FLOPs; a fine-tuning job 70x and 2000x past them is a typo or a probe
# (tokens: 1e308 made hours infinite and the cost a Decimal no money column can hold).
MAX_TRAINING_TOKENS = 1e15
MAX_TRAINING_FLOPS = 1e29
# An inline config.json nests a level or two (text_config); a 900-deep one exhausted the serializer.
MAX_CONFIG_DEPTH = 32


@dataclass(frozen=True, slots=True)
class JobSpec:
    model: ModelArch
    method: Method
    rank: int
    lora_targets: tuple[str, ...]
    seq_len: int
    batch: int  # micro-batch per GPU
    grad_checkpointing: bool
    tokens: float  # training tokens in the whole run (all epochs)
    offload_activations: bool = False  # checkpointed activations parked in CPU RAM (Unsloth, torchtune)
    stack: str | None = None  # None: the assumption set's default stack
    precision: str | None = None  # full fine-tuning only; None: the stack's default
    packing: bool = True
    pad_fraction: float = 0.0  # share of processed tokens that are padding (0 when packed)
    parallel: str | None = None  # multi-GPU layout; None: fsdp (shard over the machine's GPUs)
    grad_accum: int = 1  # micro-batches per optimizer step (the update is paid once per step)
    # Selective activation checkpointing (torchtune ac_mode selective, Megatron selective recompute,
    # torchtitan op-level AC): GEMM outputs are kept, only the elementwise ops are recomputed.
    selective_checkpointing: bool = False
    loss: str | None = None  # materialized | chunked | fused; None: the stack's own
    tensor_parallel: int = 1  # TP degree inside FSDP (FSDP x TP); tp-fsdp without it: all of the machine's GPUs

    def layout(self, gpus: float) -> tuple[str, int, int]:
        """(layout, tensor-parallel degree, data-parallel groups) on `gpus` GPUs of one offer.

        One GPU (or a slice): ("single", 1, 1). Otherwise fsdp by default; the TP degree is the job's
        `tensor_parallel` (tp-fsdp without it: every GPU), lowered to the largest divisor of the GPU count
        at most that (an offer of 4 GPUs runs a TP8 job as TP4), so every offer gets an estimate, and
        the FSDP (or DDP) groups are the GPUs / TP."""
        n = int(gpus) if gpus > 1 else 1
        if n == 1:
            return "single", 1, 1
        parallel = self.parallel or "fsdp"
        if self.tensor_parallel == 1 and parallel != "tp-fsdp":  # the common case, kept cheap for ranking
            return parallel, 1, n
        want = n if parallel == "tp-fsdp" and self.tensor_parallel == 1 else min(self.tensor_parallel, n)
        tp = max(d for d in range(1, want + 1) if n % d == 0)
        return parallel, tp, n // tp

    @property
    def recomputes_gemms(self) -> bool:
        """Full checkpointing re-runs each block's forward (GEMMs included); selective keeps GEMM outputs."""
        return self.grad_checkpointing and not self.selective_checkpointing

    @property
    def trains_adapters(self) -> bool:
        return self.method != "full"

    def lora_params(self) -> int:
        return self.model.lora_params(self.rank, self.lora_targets) if self.trains_adapters else 0

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.model.id,
            "model_name": self.model.name,
            "model_source": self.model.source,
            "model_approximate": self.model.approximate,
            "method": self.method,
            "rank": self.rank if self.trains_adapters else None,
            "lora_targets": list(self.lora_targets) if self.trains_adapters else None,
            "seq_len": self.seq_len,
            "batch": self.batch,
            "grad_checkpointing": self.grad_checkpointing,
            "offload_activations": self.offload_activations,
            "stack": self.stack,
            "precision": self.precision,
            "packing": self.packing,
            "pad_fraction": self.pad_fraction,
            "parallel": self.parallel,
            "grad_accum": self.grad_accum,
            "selective_checkpointing": self.selective_checkpointing,
            "loss": self.loss,
            "tensor_parallel": self.tensor_parallel,
            "tokens": self.tokens,
            "params": self.model.params.total,
            "trainable_params": self.lora_params() if self.trains_adapters else self.model.params.total,
        }


def make_job(
    model: str | ModelArch | Mapping[str, Any],
    method: str = "qlora",
    *,
    rank: int = 16,
    lora_targets: str | Iterable[str] = ALL_LINEAR,
    seq_len: int = 2048,
    batch: int = 1,
    grad_checkpointing: bool = True,
    tokens: str | float | int | None = None,
    examples: int | None = None,
    tokens_per_example: int | None = None,
    epochs: float = 1,
    offload_activations: bool = False,
    stack: str | None = None,
    precision: str | None = None,
    packing: bool = True,
    pad_fraction: float | None = None,
    parallel: str | None = None,
    grad_accum: int = 1,
    selective_checkpointing: bool = False,
    loss: str | None = None,
    tensor_parallel: int | None = None,
    enforce_max_seq_len: bool = True,
    allow_model_files: bool = False,
) -> JobSpec:
    """Validate and normalise a job. The amount of training is `tokens`, or examples × tokens per
    example × epochs (exactly one of the two forms). `allow_model_files` lets `model` be a path to
    a config.json; only local, trusted callers (the CLI) should set it."""
    arch = resolve_model(model, allow_files=allow_model_files)
    method_key = str(method).strip().lower()
    if method_key not in METHODS:
        raise InvalidJob(f"method must be one of {', '.join(METHODS)}, got {method!r}", field="method")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        raise InvalidJob(f"LoRA rank must be a positive integer, got {rank!r}", field="rank")
    if rank > min(arch.hidden, arch.intermediate):
        raise InvalidJob(f"LoRA rank {rank} exceeds the model's hidden size {arch.hidden}", field="rank")
    targets = normalize_targets(lora_targets)
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
        raise InvalidJob(f"sequence length must be a positive integer, got {seq_len!r}", field="seq_len")
    if enforce_max_seq_len and seq_len > arch.max_seq_len:
        raise InvalidJob(
            f"sequence length {seq_len:,} exceeds {arch.name}'s maximum context of {arch.max_seq_len:,} tokens",
            field="seq_len",
        )
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise InvalidJob(f"micro-batch must be a positive integer, got {batch!r}", field="batch")

    stack_key = get_stack(stack).name if stack is not None else None
    if precision is not None and str(precision).strip().lower() not in PRECISIONS:
        raise InvalidJob(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}", field="precision")
    precision_key = str(precision).strip().lower() if precision is not None else None
    if parallel is not None and str(parallel).strip().lower() not in PARALLELS:
        raise InvalidJob(f"parallel must be one of {', '.join(PARALLELS)}, got {parallel!r}", field="parallel")
    parallel_key = str(parallel).strip().lower() if parallel is not None else None
    pad = _pad_fraction(packing, pad_fraction, tokens_per_example, seq_len)
    if isinstance(grad_accum, bool) or not isinstance(grad_accum, int) or grad_accum <= 0:
        raise InvalidJob(f"grad_accum must be a positive integer, got {grad_accum!r}", field="grad_accum")

    selective, loss_key = _checkpointing_and_loss(stack_key, grad_checkpointing, selective_checkpointing, loss)
    tp = _tensor_parallel(tensor_parallel, parallel_key, arch)

    per_run = _training_tokens(tokens, examples, tokens_per_example, epochs)
    _check_compute(arch, targets if method_key != "full" else (), rank, seq_len, per_run)
    return JobSpec(
        model=arch,
        method=method_key,  # type: ignore[arg-type]  # checked against METHODS above
        rank=rank,
        lora_targets=targets,
        seq_len=seq_len,
        batch=batch,
        grad_checkpointing=bool(grad_checkpointing),
        tokens=per_run,
        offload_activations=bool(offload_activations),
        stack=stack_key,
        precision=precision_key,
        packing=bool(packing),
        pad_fraction=pad,
        parallel=parallel_key,
        grad_accum=grad_accum,
        selective_checkpointing=selective,
        loss=loss_key,
        tensor_parallel=tp,
    )


def _checkpointing_and_loss(
    stack: str | None, grad_checkpointing: bool, selective: bool, loss: str | None
) -> tuple[bool, str | None]:
    """Selective checkpointing and the loss kind, checked against what the stack does (stacks.toml:
    `selective_checkpointing`, `losses`). With no stack named, the check waits for the assumption set's
    default stack (tracker.estimate.core.prepare)."""
    if not isinstance(selective, bool):
        raise InvalidJob(
            f"selective_checkpointing must be true or false, got {selective!r}", field="selective_checkpointing"
        )
    if selective and not grad_checkpointing:
        raise InvalidJob(
            "selective checkpointing is a kind of activation checkpointing: it needs grad_checkpointing on",
            field="selective_checkpointing",
        )
    key = None
    if loss is not None:
        key = str(loss).strip().lower()
        if key not in LOSSES:
            raise InvalidJob(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}", field="loss")
    if stack is not None:
        get_stack(stack).check_options(selective, key)
    return selective, key


def _tensor_parallel(value: int | None, parallel: str | None, arch: ModelArch) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not (1 <= value <= MAX_FINE_TUNE_TP):
        raise InvalidJob(
            f"tensor_parallel must be an integer from 1 to {MAX_FINE_TUNE_TP}, got {value!r}", field="tensor_parallel"
        )
    if value > 1 and parallel == "ddp":
        raise InvalidJob(
            "tensor parallel shards the model; ddp replicates it: give fsdp or tp-fsdp", field="tensor_parallel"
        )
    # Megatron-style TP splits attention heads and the MLP's columns: the degree must divide both.
    # KV heads fewer than the degree are replicated, as Megatron does.
    if arch.heads % value or (arch.kv_heads % value and value % arch.kv_heads) or arch.intermediate % value:
        raise InvalidJob(
            f"tensor_parallel {value} does not divide {arch.name}'s {arch.heads} attention heads "
            f"({arch.kv_heads} KV heads) and MLP width {arch.intermediate:,}",
            field="tensor_parallel",
        )
    return value


def _pad_fraction(packing: bool, pad_fraction: float | None, tokens_per_example: int | None, seq_len: int) -> float:
    """Padding is processed but is not training: with packing off it lowers useful tokens/s.
    An explicit pad_fraction wins; else examples shorter than seq_len pad up to it; else a prior."""
    if pad_fraction is not None:
        if isinstance(pad_fraction, bool) or not (0.0 <= float(pad_fraction) < 1.0):
            raise InvalidJob(f"pad_fraction must be in [0, 1), got {pad_fraction!r}", field="pad_fraction")
        if packing and pad_fraction:
            raise InvalidJob("pad_fraction needs packing off: packed batches carry no padding", field="pad_fraction")
        return float(pad_fraction)
    if packing:
        return 0.0
    if tokens_per_example is not None:
        return max(0.0, 1.0 - min(tokens_per_example, seq_len) / seq_len)
    return DEFAULT_PAD_FRACTION


def _training_tokens(
    tokens: str | float | int | None, examples: int | None, tokens_per_example: int | None, epochs: float
) -> float:
    by_examples = examples is not None or tokens_per_example is not None
    if tokens is not None and by_examples:
        raise InvalidJob("give either tokens or examples × tokens-per-example × epochs, not both", field="tokens")
    if tokens is None and not by_examples:
        raise InvalidJob("give the amount of training: tokens, or examples with tokens-per-example", field="tokens")
    if tokens is not None:
        value = parse_tokens(tokens)
        if not value > 0:  # NaN included
            raise InvalidJob(f"training tokens must be positive, got {_brief(tokens)}", field="tokens")
        if not value <= MAX_TRAINING_TOKENS:  # infinity included
            raise InvalidJob(
                f"training tokens must be at most {MAX_TRAINING_TOKENS:.0e}, got {_brief(tokens)}", field="tokens"
            )
        return value
    if examples is None or isinstance(examples, bool) or examples <= 0:
        raise InvalidJob(f"examples must be a positive integer, got {examples!r}", field="examples")
    if tokens_per_example is None or isinstance(tokens_per_example, bool) or tokens_per_example <= 0:
        raise InvalidJob(
            f"tokens per example must be a positive integer, got {tokens_per_example!r}", field="tokens_per_example"
        )
    if isinstance(epochs, bool) or not isinstance(epochs, int | float) or not math.isfinite(epochs) or epochs <= 0:
        raise InvalidJob(f"epochs must be positive, got {epochs!r}", field="epochs")
    total = float(examples) * float(tokens_per_example) * float(epochs)
    if total > MAX_TRAINING_TOKENS:
        raise InvalidJob(
            f"examples × tokens per example × epochs is {total:.3g} training tokens; at most {MAX_TRAINING_TOKENS:.0e}",
            field="examples",
        )
    return total


def _brief(value: object) -> str:
    # A 100,000-character token count is echoed as a hint, not in full.
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _check_compute(arch: ModelArch, adapted: tuple[str, ...], rank: int, seq_len: int, tokens: float) -> None:
    """Refuse a job whose training compute is past any plausible run (MAX_TRAINING_FLOPS).

    The figure is a ceiling of what tracker.estimate.flops counts under any assumption set: 8 FLOPs
    per weight and token (6 plus the recompute), adapters likewise, and attention at 4·L·s·d_attn
    over four passes. Under it, hours and costs stay finite on any offer, whatever its price."""
    weights = arch.params.total + arch.vocab * arch.hidden + (arch.lora_params(rank, adapted) if adapted else 0)
    per_token = 8.0 * weights + 16.0 * arch.layers * seq_len * arch.q_dim
    flops = per_token * tokens
    if flops > MAX_TRAINING_FLOPS:
        raise InvalidJob(
            f"{tokens:.3g} training tokens of {seq_len:,}-token sequences on {arch.name} is ~{flops:.1e} FLOPs, "
            f"past any plausible fine-tuning run ({MAX_TRAINING_FLOPS:.0e}); check tokens, seq_len and the model",
            field="tokens",
        )


class JobInput(BaseModel):
    """A fine-tuning job as people write it: model, method, shape, and the amount of training.

    Field names are the CLI's option names (`seq_len` is `--seq-len`) and the API's JSON keys. Bounds
    here are plausibility limits that keep arithmetic finite; `make_job` checks the job against
    the model (rank vs hidden size, sequence length vs context).
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), frozen=True)

    # First, so the field validators below see it: it decides which of the other fields apply.
    kind: Kind = Field("fine-tune", description="fine-tune | inference (serving: tracker.estimate.serving).")
    model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Catalog id (llama-3.1-8b), HF repo id, or a size like 7B (the CLI also takes a config.json path).",
    )
    hf_config: dict[str, Any] | None = Field(None, description="A Hugging Face config.json, inline (API only).")
    method: Method = Field("qlora", description="full | lora | qlora")
    rank: int = Field(16, gt=0, le=65536, description="LoRA rank.")
    lora_targets: str | list[str] = Field(
        "all-linear", description="Adapted modules: all-linear, attn, mlp, or names like q,v,o."
    )
    seq_len: int = Field(2048, gt=0, le=10_000_000, description="Tokens per sequence.")
    batch: int = Field(1, gt=0, le=65536, description="Micro-batch per GPU.")
    grad_checkpointing: bool = Field(True, description="Recompute activations in the backward pass.")
    offload_activations: bool = Field(
        False, description="Checkpointed activations live in CPU RAM (Unsloth, torchtune)."
    )
    tokens: float | str | None = Field(
        None, description="Training tokens for the whole run: 22500000 or 22.5M (or give examples)."
    )
    examples: int | None = Field(None, gt=0, le=10**12, description="Training examples per epoch.")
    tokens_per_example: int | None = Field(None, gt=0, le=10**9, description="Tokens per example.")
    epochs: float = Field(1, gt=0, le=1e6, description="Passes over the examples.")
    assumptions: str | None = Field(
        None,
        max_length=50,
        description="Assumption set: seed, hf-peft (default; stack hf), optimized (stack unsloth).",
    )
    stack: str | None = Field(
        None,
        max_length=50,
        description="Training stack: hf, hf-liger, unsloth, torchtune, torchtune-compile, nemo, composer "
        "(default: the set's).",
    )
    precision: Literal["bf16", "mixed", "fp8", "int8", "int4"] | None = Field(
        None,
        description="Full fine-tuning: bf16 (pure bf16 AdamW) or mixed (fp32 master); default: the stack's. "
        "Inference: the weights, bf16 (default) | fp8 | int8 | int4.",
    )
    packing: bool = Field(True, description="Sequences packed to seq_len (off: padding is processed, not trained).")
    pad_fraction: float | None = Field(
        None, ge=0, lt=1, description="With packing off: share of tokens that are padding (default from examples)."
    )
    parallel: Parallel | None = Field(None, description="Multi-GPU layout: ddp | fsdp (default) | tp-fsdp.")
    grad_accum: int = Field(1, ge=1, le=4096, description="Micro-batches accumulated per optimizer step.")
    selective_checkpointing: bool = Field(
        False,
        description="Selective activation checkpointing: keep GEMM outputs, recompute only elementwise ops "
        "(torchtune, NeMo; needs grad_checkpointing).",
    )
    loss: Loss | None = Field(
        None,
        description="Loss: materialized (all logits at once) | chunked (torchtune) | fused (Liger, cut CE); "
        "default: the stack's.",
    )
    # What the run costs beyond GPU hours (tracker.costs.plan): data, checkpoints, setup, interruptions.
    # None: derived from the job and the offer (the defaults are documented in tracker.costs.plan).
    dataset_gb: float | None = Field(None, ge=0, le=1e5, description="Training data to download, GB.")
    checkpoint_gb: float | None = Field(None, ge=0, le=1e5, description="One checkpoint, GB (default: derived).")
    checkpoints_kept: int = Field(2, ge=0, le=1000, description="Checkpoints kept on disk at once.")
    output_gb: float | None = Field(None, ge=0, le=1e5, description="Result uploaded at the end, GB.")
    image_gb: float = Field(10, ge=0, le=1e3, description="Container image to download, GB.")
    setup_minutes: float | None = Field(None, ge=0, le=1e5, description="Setup (default: downloads at the bandwidth).")
    checkpoint_minutes: float = Field(30, ge=1, le=1e6, description="Minutes between checkpoints.")
    restart_minutes: float | None = Field(None, ge=0, le=1e5, description="Resuming (default: the setup again).")
    deadline_hours: float | None = Field(None, gt=0, le=1e6, description="Finish within this many hours.")

    @field_validator("hf_config", mode="before")
    @classmethod
    def _shallow(cls, value: object) -> object:
        # Checked before pydantic copies it: a 900-deep value passed dict[str, Any], then broke every
        # serialization of the job (the rank cache key, a saved alert) with a RecursionError.
        if _depth(value, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH:
            raise ValueError(f"hf_config nests deeper than {MAX_CONFIG_DEPTH} levels")
        return value

    # Serving (kind inference): tracker.estimate.serving.job.make_serving_job says what each means.
    prompt_tokens: int | None = Field(
        None, gt=0, le=10_000_000, description="Inference: prompt tokens per request (1000)."
    )
    output_tokens: int | None = Field(
        None, gt=0, le=10_000_000, description="Inference: output tokens per request (200)."
    )
    concurrency: int | None = Field(
        None, gt=0, le=65536, description="Inference: requests in flight (default: the most that fit and meet targets)."
    )
    tensor_parallel: int | None = Field(
        None,
        gt=0,
        le=64,
        description="Tensor-parallel degree. Inference: GPUs per model copy (default: all). Fine-tuning: TP "
        "inside FSDP, e.g. 8 for FSDP x TP8 (default 1; tp-fsdp: the whole machine).",
    )
    engine: Literal["vllm", "sglang", "trt-llm"] | None = Field(
        None, description="Inference: vllm (default) | sglang | trt-llm."
    )
    kv_precision: Literal["bf16", "fp8"] | None = Field(
        None, description="Inference: KV cache, bf16 | fp8 (default: fp8 with fp8 weights)."
    )
    engine_version: str | None = Field(
        None,
        max_length=40,
        description="Inference: the engine's version, e.g. 0.6.3 (default: current). vLLM "
        "before 0.8 (the V0 engine) runs eager, without CUDA graphs, once a sequence passes 8,192 tokens.",
    )
    tokens_per_month: float | str | None = Field(
        None, description="Inference load: output tokens per month, 10B or 1e10."
    )
    requests_per_second: float | None = Field(None, gt=0, le=1e7, description="Inference load: requests per second.")
    target_tokens_per_user: float | None = Field(
        None, gt=0, le=1e5, description="Inference: per-user output tokens/s the concurrency must keep."
    )
    max_ttft_s: float | None = Field(
        None, gt=0, le=3600, description="Inference: longest time to first token, seconds."
    )

    @field_validator(*FINE_TUNE_ONLY, *INFERENCE_ONLY, mode="after")
    @classmethod
    def _fits_kind(cls, value: object, info: ValidationInfo) -> object:
        # Runs only on fields the caller gave (pydantic does not validate defaults): `rank: 16` on an
        # inference job is refused like `rank: 32`. The CLI drops options left at their default
        # (tracker.cli.job_options.build_job); null counts as not given.
        kind = info.data.get("kind")
        name = str(info.field_name)
        if kind is None or value is None:
            return value
        if kind == "inference" and name in FINE_TUNE_ONLY:
            raise ValueError(f"{name} is a fine-tuning field; an inference job does not take it")
        if kind == "fine-tune" and name in INFERENCE_ONLY:
            raise ValueError(f"{name} is a serving field; give kind inference to use it")
        return value

    @field_validator("precision", mode="after")
    @classmethod
    def _precision_for_kind(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("kind")
        if value in SERVING_PRECISIONS and kind == "fine-tune":
            raise ValueError(
                f"precision {value} is a serving precision (kind inference); fine-tuning takes bf16 or mixed"
            )
        if value == "mixed" and kind == "inference":
            raise ValueError("precision mixed is a training precision; serving takes bf16, fp8, int8 or int4")
        return value

    @model_validator(mode="after")
    def _one_model(self) -> JobInput:
        if (self.model is None) == (self.hf_config is None):
            raise ValueError("give exactly one of model or hf_config")
        return self

    def spec(self, *, allow_model_files: bool = False) -> JobSpec:
        """The validated job; raises tracker.estimate errors naming the field. `allow_model_files`
        lets `model` be a path to a config.json: only for local, trusted callers (the CLI)."""
        if self.kind == "inference":
            raise InvalidJob("an inference job is priced by serving_spec(), not as a fine-tuning run", field="kind")
        return make_job(
            self.hf_config if self.hf_config is not None else str(self.model),
            self.method,
            rank=self.rank,
            lora_targets=self.lora_targets,
            seq_len=self.seq_len,
            batch=self.batch,
            grad_checkpointing=self.grad_checkpointing,
            offload_activations=self.offload_activations,
            stack=self.stack,
            precision=self.precision,
            packing=self.packing,
            pad_fraction=self.pad_fraction,
            parallel=self.parallel,
            grad_accum=self.grad_accum,
            selective_checkpointing=self.selective_checkpointing,
            loss=self.loss,
            tensor_parallel=self.tensor_parallel,
            tokens=self.tokens,
            examples=self.examples,
            tokens_per_example=self.tokens_per_example,
            epochs=self.epochs,
            allow_model_files=allow_model_files,
        )

    def serving_spec(self, *, allow_model_files: bool = False) -> ServingSpec:
        """The validated inference job (kind inference); raises tracker.estimate errors naming the field."""
        if self.kind != "inference":
            raise InvalidJob("a fine-tuning job has no serving estimate; give kind inference", field="kind")
        return make_serving_job(
            self.hf_config if self.hf_config is not None else str(self.model),
            precision=self.precision,
            kv_precision=self.kv_precision,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.output_tokens,
            concurrency=self.concurrency,
            tensor_parallel=self.tensor_parallel,
            engine=self.engine,
            tokens_per_month=self.tokens_per_month,
            requests_per_second=self.requests_per_second,
            target_tokens_per_user=self.target_tokens_per_user,
            max_ttft_s=self.max_ttft_s,
            engine_version=self.engine_version,
            allow_model_files=allow_model_files,
        )

    def saved(self) -> dict[str, Any]:
        """The JSON an alert stores: only what the user set, so later default changes still apply."""
        return self.model_dump(mode="json", exclude_unset=True)


def _depth(value: object, limit: int) -> int:
    """How deep `value` nests (a scalar is 0), counted without recursion and only up to `limit` + 1."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= limit:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node)
    return deepest

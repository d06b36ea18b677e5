"""The job being priced: which model, how it is trained, and how much training it gets.

`make_job` is the single validation point; the CLI and the HTTP API both go through it, so a bad
input produces the same message (and names the same field) everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tracker.estimate.architectures import ALL_LINEAR, ModelArch, normalize_targets, resolve_model
from tracker.estimate.errors import InvalidJob

Method = Literal["full", "lora", "qlora"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora")

_TOKENS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_TOKEN_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_tokens(value: str | float | int) -> float:
    """'22.5M' -> 22_500_000.0; also accepts plain numbers and K/B/T suffixes."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _TOKENS_RE.match(str(value))
    if not m:
        raise InvalidJob(f"cannot read {value!r} as a token count (examples: 22.5M, 800K, 1.2B)", field="tokens")
    return float(m.group(1)) * _TOKEN_SCALE[m.group(2).lower()]


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

    per_run = _training_tokens(tokens, examples, tokens_per_example, epochs)
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
    )


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
        if not math.isfinite(value) or value <= 0:
            raise InvalidJob(f"training tokens must be positive, got {tokens!r}", field="tokens")
        return value
    if examples is None or isinstance(examples, bool) or examples <= 0:
        raise InvalidJob(f"examples must be a positive integer, got {examples!r}", field="examples")
    if tokens_per_example is None or isinstance(tokens_per_example, bool) or tokens_per_example <= 0:
        raise InvalidJob(f"tokens per example must be a positive integer, got {tokens_per_example!r}",
                         field="tokens_per_example")
    if isinstance(epochs, bool) or not isinstance(epochs, int | float) or not math.isfinite(epochs) or epochs <= 0:
        raise InvalidJob(f"epochs must be positive, got {epochs!r}", field="epochs")
    return float(examples) * float(tokens_per_example) * float(epochs)

"""The serving job: which model, at which precision, under which traffic, on which engine.

`make_serving_job` is the one semantic validation point of an inference job (the fine-tuning job's
is `tracker.estimate.job.make_job`); `JobInput.serving_spec()` calls it, so the CLI, the API and an
alert's saved job refuse the same input with the same message naming the same field. What depends
on the card (FP8 on Ampere, the largest concurrency that fits) is checked when the job is placed on
one (`tracker.estimate.serving.model.PreparedServing.on`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.architectures import ModelArch, resolve_model
from tracker.estimate.errors import InvalidJob
from tracker.estimate.tokens import parse_tokens

ENGINES: tuple[str, ...] = ("vllm", "sglang", "trt-llm")
WEIGHT_PRECISIONS: tuple[str, ...] = ("bf16", "fp8", "int8", "int4")
KV_PRECISIONS: tuple[str, ...] = ("bf16", "fp8")
DEFAULT_PROMPT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 200
# A month as clouds bill it (730 h = 8760 h / 12): the load and the monthly cost use the same month.
HOURS_PER_MONTH = 730.0
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0
# Plausibility limits that keep every derived figure finite (a 1e308-token month made the GPU count infinite).
MAX_TOKENS_PER_MONTH = 1e18
MAX_CONCURRENCY = 65536
# vLLM V0's default max_seq_len_to_capture: longer sequences ran without CUDA graphs.
V0_GRAPH_TOKENS = 8192

# Bytes per weight of the block linears by precision. int4 is group-wise (AWQ/GPTQ, group 128, a
# 16-bit scale and zero per group: 4 + 32/128 bits); int8 carries per-channel scales (negligible).
# Embeddings, lm_head and norms stay 16-bit in every engine's quantised checkpoints.
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 4.25 / 8}
KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0}

# Hardware support, by the catalog's architecture. FP8 needs FP8 tensor cores (Hopper, Ada, Blackwell,
# CDNA3 and later; the Gaudi 2/3 matrix engines, whose FP8 rate the catalog gives, through vLLM's HPU
# backend): Ampere and older have none, and the engines' FP8 paths there are weight-only
# emulation that reads like FP8 on the price sheet but runs at bf16 speed. Integer weight-only kernels
# (AWQ/GPTQ/Marlin, TensorRT-LLM's W8A16/W4A16) need Turing (sm75) or later, CDNA2 or later on AMD.
FP8_ARCHITECTURES = frozenset({"hopper", "ada", "blackwell", "cdna3", "cdna4", "gaudi2", "gaudi3"})
INT_ARCHITECTURES = frozenset({"turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4"})
# An FP8 KV cache is stored as FP8 and up-cast in the attention kernel: vLLM and SGLang do it from Ampere on.
FP8_KV_ARCHITECTURES = FP8_ARCHITECTURES | {"ampere"}
# TensorRT-LLM builds CUDA kernels only; vLLM and SGLang also run on ROCm.
NVIDIA_ONLY_ENGINES = frozenset({"trt-llm"})


@dataclass(frozen=True, slots=True)
class ServingSpec:
    """A validated inference job. `concurrency` None: the largest that fits (and meets the targets)."""

    model: ModelArch
    precision: str  # weights: bf16 | fp8 | int8 | int4
    kv_precision: str  # bf16 | fp8
    prompt_tokens: int
    output_tokens: int
    concurrency: int | None
    tensor_parallel: int | None  # None: every GPU of the offer
    engine: str
    tokens_per_month: float | None  # generated (output) tokens per month of the stated load
    requests_per_second: float | None
    target_tokens_per_user: float | None  # per-user output tokens/s the concurrency must keep
    max_ttft_s: float | None
    engine_version: tuple[int, ...] | None = None  # None: the engine as it is now

    @property
    def eager(self) -> bool:
        """The engine runs without CUDA graphs: vLLM's V0 engine (before 0.8) captures graphs only up to
        max_seq_len_to_capture = 8,192 tokens and falls back to eager mode for longer sequences."""
        old_vllm = self.engine == "vllm" and self.engine_version is not None and self.engine_version < (0, 8)
        return old_vllm and self.context > V0_GRAPH_TOKENS

    kind = "inference"

    @property
    def context(self) -> int:
        """Tokens a sequence holds in the KV cache at its end."""
        return self.prompt_tokens + self.output_tokens

    @property
    def load_tokens_per_second(self) -> float | None:
        """Output tokens/s the stated load needs (a month of tokens, or requests/s × output tokens)."""
        if self.tokens_per_month is not None:
            return self.tokens_per_month / SECONDS_PER_MONTH
        if self.requests_per_second is not None:
            return self.requests_per_second * self.output_tokens
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "inference",
            "model": self.model.id,
            "model_name": self.model.name,
            "model_source": self.model.source,
            "model_approximate": self.model.approximate,
            "params": self.model.params.total,
            "active_params": self.model.params.active,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "concurrency": self.concurrency,
            "tensor_parallel": self.tensor_parallel,
            "engine": self.engine,
            "tokens_per_month": self.tokens_per_month,
            "requests_per_second": self.requests_per_second,
            "target_tokens_per_user": self.target_tokens_per_user,
            "max_ttft_s": self.max_ttft_s,
            "engine_version": None if self.engine_version is None else ".".join(map(str, self.engine_version)),
            "eager": self.eager,
        }


def _positive_int(value: object, field: str, what: str, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidJob(f"{what} must be a positive integer, got {value!r}", field=field)
    if value > upper:
        raise InvalidJob(f"{what} must be at most {upper:,}, got {value:,}", field=field)
    return value


def _positive(value: object, field: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InvalidJob(f"{what} must be a positive number, got {value!r}", field=field)
    return float(value)


def _choice(value: str | None, default: str, known: tuple[str, ...], field: str) -> str:
    key = default if value is None else str(value).strip().lower()
    if key not in known:
        raise InvalidJob(f"{field} must be one of {', '.join(known)}, got {value!r}", field=field)
    return key


def _monthly(tokens_per_month: str | float | int) -> float:
    try:
        monthly = parse_tokens(tokens_per_month)
    except InvalidJob as exc:
        raise InvalidJob(exc.message, field="tokens_per_month") from exc
    if not (0 < monthly <= MAX_TOKENS_PER_MONTH):
        raise InvalidJob(
            f"tokens per month must be in (0, {MAX_TOKENS_PER_MONTH:.0e}], got {tokens_per_month!r}",
            field="tokens_per_month",
        )
    return monthly


def make_serving_job(
    model: str | ModelArch | Mapping[str, Any],
    *,
    precision: str | None = None,
    kv_precision: str | None = None,
    prompt_tokens: int | None = None,
    output_tokens: int | None = None,
    concurrency: int | None = None,
    tensor_parallel: int | None = None,
    engine: str | None = None,
    tokens_per_month: str | float | int | None = None,
    requests_per_second: float | None = None,
    target_tokens_per_user: float | None = None,
    max_ttft_s: float | None = None,
    engine_version: str | None = None,
    allow_model_files: bool = False,
) -> ServingSpec:
    """Validate and normalise an inference job. Defaults: bf16 weights, KV cache in the weights'
    width when that is fp8 (else bf16), 1000 prompt and 200 output tokens, vLLM, every GPU of the offer
    in one tensor-parallel group, the largest concurrency that fits."""
    arch = resolve_model(model, allow_files=allow_model_files)
    weights = _choice(precision, "bf16", WEIGHT_PRECISIONS, "precision")
    kv = _choice(kv_precision, "fp8" if weights == "fp8" else "bf16", KV_PRECISIONS, "kv_precision")
    prompt = _positive_int(
        DEFAULT_PROMPT_TOKENS if prompt_tokens is None else prompt_tokens, "prompt_tokens", "prompt tokens", 10_000_000
    )
    output = _positive_int(
        DEFAULT_OUTPUT_TOKENS if output_tokens is None else output_tokens, "output_tokens", "output tokens", 10_000_000
    )
    if prompt + output > arch.max_seq_len:
        raise InvalidJob(
            f"prompt + output tokens ({prompt + output:,}) exceed {arch.name}'s maximum context of "
            f"{arch.max_seq_len:,} tokens",
            field="prompt_tokens",
        )
    users = None if concurrency is None else _positive_int(concurrency, "concurrency", "concurrency", MAX_CONCURRENCY)
    tp = (
        None if tensor_parallel is None else _positive_int(tensor_parallel, "tensor_parallel", "tensor parallelism", 64)
    )
    if tp is not None and tp & (tp - 1):
        raise InvalidJob(
            f"tensor parallelism must be a power of two (1, 2, 4, 8 ...), got {tp}", field="tensor_parallel"
        )
    engine_key = _choice(engine, "vllm", ENGINES, "engine")
    monthly = None if tokens_per_month is None else _monthly(tokens_per_month)
    rps = None if requests_per_second is None else _positive(requests_per_second, "requests_per_second", "requests/s")
    if monthly is not None and rps is not None:
        raise InvalidJob("give the load as tokens_per_month or requests_per_second, not both", field="tokens_per_month")
    target = None
    if target_tokens_per_user is not None:
        target = _positive(target_tokens_per_user, "target_tokens_per_user", "target per-user tokens/s")
    ttft = None if max_ttft_s is None else _positive(max_ttft_s, "max_ttft_s", "max time to first token")
    if users is not None and (target is not None or ttft is not None):
        raise InvalidJob(
            "give a concurrency or a target (per-user tokens/s, TTFT) to choose it, not both", field="concurrency"
        )
    return ServingSpec(
        model=arch,
        precision=weights,
        kv_precision=kv,
        prompt_tokens=prompt,
        output_tokens=output,
        concurrency=users,
        tensor_parallel=tp,
        engine=engine_key,
        tokens_per_month=monthly,
        requests_per_second=rps,
        target_tokens_per_user=target,
        max_ttft_s=ttft,
        engine_version=_version(engine_version),
    )


def _version(value: str | None) -> tuple[int, ...] | None:
    """'0.6.3', 'v0.6.3.post1', '0.9.0rc1' -> (0, 6, 3) (the numeric release); None stays None."""
    if value is None:
        return None
    match = re.match(r"^v?(\d+(?:\.\d+){0,3})", str(value).strip())
    if not match:
        raise InvalidJob(f"engine_version must look like 0.6.3, got {value!r}", field="engine_version")
    return tuple(int(x) for x in match.group(1).split("."))


def check_support(job: ServingSpec, gpu: GpuSpec) -> None:
    """Refuse a precision the card's hardware cannot run, naming the field."""
    arch = gpu.architecture
    if job.precision == "fp8" and (arch not in FP8_ARCHITECTURES or gpu.fp8_tflops is None):
        raise InvalidJob(
            f"precision fp8 unsupported: it needs FP8 tensor cores (Hopper, Ada, Blackwell, CDNA3, Gaudi 2/3); "
            f"{gpu.name} is {arch}: "
            "use bf16, int8 or int4",
            field="precision",
        )
    if job.precision in ("int8", "int4") and arch not in INT_ARCHITECTURES:
        raise InvalidJob(
            f"precision {job.precision} needs integer weight-only kernels (Turing/CDNA2 or later); "
            f"{gpu.name} is {arch}: use bf16",
            field="precision",
        )
    if job.kv_precision == "fp8" and arch not in FP8_KV_ARCHITECTURES:
        raise InvalidJob(
            f"kv_precision fp8 needs Ampere or later; {gpu.name} is {arch}: use bf16", field="kv_precision"
        )
    if job.engine in NVIDIA_ONLY_ENGINES and gpu.vendor != "nvidia":
        raise InvalidJob(
            f"engine {job.engine} runs on NVIDIA GPUs only; {gpu.name} is {gpu.vendor}: use vllm or sglang",
            field="engine",
        )


def supports(job: ServingSpec, gpu: GpuSpec) -> bool:
    try:
        check_support(job, gpu)
    except InvalidJob:
        return False
    return True

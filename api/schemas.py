"""Request bodies shared by several routes: a fine-tuning job uses the CLI's option names everywhere."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tracker.estimate import make_job
from tracker.estimate.job import JobSpec


class ErrorBody(BaseModel):
    """Every error: what went wrong, which input field (if one), and what to try instead."""

    detail: Any
    field: str | None = None
    suggestions: list[str] | None = None
    candidates: list[str] | None = None


# Documented on every operation, so clients (and schemathesis) know the error shapes.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Malformed request body (not JSON)"},
    401: {"model": ErrorBody, "description": "Missing or invalid bearer token (mutating endpoints)"},
    403: {"model": ErrorBody, "description": "Mutating endpoints disabled: no TRACKER_API_TOKEN configured"},
    404: {"model": ErrorBody, "description": "Unknown GPU, model or resource; suggestions included"},
    422: {"description": "Invalid input; the field is named"},
    503: {"model": ErrorBody, "description": "Database unavailable"},
}


class JobBody(BaseModel):
    """A fine-tuning job: model, method, shape, and the amount of training."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(
        None, min_length=1, max_length=200, description="Catalog id (llama-3.1-8b), HF repo id, or a size like 7B."
    )
    hf_config: dict[str, Any] | None = Field(None, description="A Hugging Face config.json, inline.")
    method: Literal["full", "lora", "qlora"] = "qlora"
    rank: int = Field(16, gt=0, le=65536)
    lora_targets: str | list[str] = Field("all-linear", description="all-linear, attn, mlp, or names like q,v,o")
    seq_len: int = Field(2048, gt=0, le=10_000_000)
    batch: int = Field(1, gt=0, le=65536)
    grad_checkpointing: bool = True
    offload_activations: bool = False
    tokens: float | str | None = Field(None, description="Training tokens in the run: 22500000 or '22.5M'.")
    examples: int | None = Field(None, gt=0, le=10**12)
    tokens_per_example: int | None = Field(None, gt=0, le=10**9)
    epochs: float = Field(1, gt=0, le=1e6)
    assumptions: str | None = Field(None, max_length=50, description="seed, hf-peft (default), optimized")

    @model_validator(mode="after")
    def _one_model(self) -> JobBody:
        if (self.model is None) == (self.hf_config is None):
            raise ValueError("give exactly one of model or hf_config")
        return self

    def job(self) -> JobSpec:
        """Validated job; raises tracker.estimate errors naming the field."""
        return make_job(
            self.hf_config if self.hf_config is not None else str(self.model),
            self.method, rank=self.rank, lora_targets=self.lora_targets, seq_len=self.seq_len, batch=self.batch,
            grad_checkpointing=self.grad_checkpointing, offload_activations=self.offload_activations,
            tokens=self.tokens, examples=self.examples, tokens_per_example=self.tokens_per_example,
            epochs=self.epochs, allow_model_files=False,
        )  # fmt: skip

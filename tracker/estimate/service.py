"""One request shape for `gpu-tracker estimate` and `POST /v1/estimate`.

Both shells hand the same fields to `run_estimate`, so they validate the same way, name the same
fields in errors, and return the same JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tracker.catalog.gpus import GpuSpec, get_catalog
from tracker.estimate.architectures import ALL_LINEAR
from tracker.estimate.assumptions import default_name, get_assumptions
from tracker.estimate.core import Estimate, prepare
from tracker.estimate.job import make_job
from tracker.estimate.memory import COMPONENTS
from tracker.estimate.throughput import as_price


@dataclass(frozen=True, slots=True)
class EstimateRequest:
    model: str | Mapping[str, Any]  # id, HF repo id, size like "7B", config.json path, or the config itself
    method: str = "qlora"
    rank: int = 16
    lora_targets: str | Sequence[str] = ALL_LINEAR
    seq_len: int = 2048
    batch: int = 1
    grad_checkpointing: bool = True
    offload_activations: bool = False
    tokens: str | float | None = None
    examples: int | None = None
    tokens_per_example: int | None = None
    epochs: float = 1
    gpu: str | None = None
    gpus: float = 1
    memory_gb: float | None = None
    price: Decimal | float | str | None = None  # $/GPU-hour
    assumptions: str | None = None
    allow_model_files: bool = False  # True only for local users (the CLI): `model` may then be a file path


def resolve_gpus(name: str | None) -> list[GpuSpec]:
    """Every catalog card when no name is given; otherwise every card the name covers
    ("H100" is all H100 variants). Raises tracker.catalog.gpus.GpuNameError for names it cannot place."""
    catalog = get_catalog()
    return catalog.all() if not name else catalog.resolve(name)


def _sort_key(est: Estimate) -> tuple[bool, float]:
    # Cards the job fits on come first, cheapest (or, without a price, fastest) run first.
    cost = est.cost_per_run
    return (not est.fits, float(cost) if cost is not None else est.hours)


def run_estimate(req: EstimateRequest) -> dict[str, Any]:
    job = make_job(
        req.model, req.method, rank=req.rank, lora_targets=req.lora_targets, seq_len=req.seq_len,
        batch=req.batch, grad_checkpointing=req.grad_checkpointing, tokens=req.tokens, examples=req.examples,
        tokens_per_example=req.tokens_per_example, epochs=req.epochs, offload_activations=req.offload_activations,
        allow_model_files=req.allow_model_files,
    )
    aset = get_assumptions(req.assumptions)
    price = as_price(req.price)
    prepared = prepare(job, aset)
    cards = resolve_gpus(req.gpu)
    estimates = sorted(
        (prepared.on(card, req.gpus, price_per_gpu_hour=price, memory_gb=req.memory_gb) for card in cards),
        key=_sort_key,
    )
    return {
        "assumptions": {
            "name": aset.name,
            "title": aset.title,
            "default": aset.name == default_name(),
            "fitted": aset.fitted,
        },
        "job": job.describe(),
        "model_note": job.model.note,
        "flops_per_token": prepared.flops.as_dict(),
        "vram_components": COMPONENTS,
        "price_unit": "USD per GPU-hour; a multi-GPU offer costs price x gpus per hour",
        "rows": [e.as_dict() for e in estimates],
    }

"""One request shape for `gpu-tracker estimate` and `POST /v1/estimate`: the job schema plus the offer.

Both shells hand the same model to `run_estimate`, so they validate the same way, name the same
fields in errors, and return the same JSON.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import Field, field_validator

from tracker.catalog.gpus import GpuSpec, get_catalog
from tracker.estimate.assumptions import default_name, get_assumptions
from tracker.estimate.core import Estimate, prepare
from tracker.estimate.job import JobInput
from tracker.estimate.memory import COMPONENTS
from tracker.estimate.serving.service import run_serving_estimate
from tracker.money import parse_amount

MIN_SLICE = 1 / 1024


class EstimateRequest(JobInput):
    """The job plus the offer to price it on (every card when `gpu` is omitted)."""

    gpu: str | None = Field(None, max_length=100, description="Card or family; all cards when omitted.")
    # The thinnest slice worth pricing, with room to spare (MIG's smallest is 1/7): thinner ones only reach
    # infinite hours and a cost no Decimal can round (gpus: 1e-300 was a 500). Here, so CLI and API agree.
    gpus: float = Field(1, ge=MIN_SLICE, le=1024, description="GPUs in the offer (one machine); < 1 is a slice.")
    memory_gb: float | None = Field(None, gt=0, le=100_000, description="Per-GPU memory; required for a slice.")
    price: Decimal | None = Field(None, ge=0, le=1_000_000, description="USD per GPU-hour.")

    @field_validator("price", mode="before")
    @classmethod
    def _amount(cls, value: object) -> object:
        # "$2.69" as people type it; anything else is left to the Decimal field's own checks.
        if isinstance(value, str):
            try:
                return parse_amount(value)
            except ValueError:
                return value
        return value


def resolve_gpus(name: str | None) -> list[GpuSpec]:
    """Every catalog card when no name is given; otherwise every card the name covers
    ("H100" is all H100 variants). Raises tracker.catalog.gpus.GpuNameError for names it cannot place."""
    catalog = get_catalog()
    return catalog.all() if not name else catalog.resolve(name)


def _sort_key(est: Estimate) -> tuple[bool, float]:
    # Cards the job fits on come first, cheapest (or, without a price, fastest) run first.
    cost = est.cost_per_run
    return (not est.fits, float(cost) if cost is not None else est.hours)


def run_estimate(req: EstimateRequest, *, allow_model_files: bool = False) -> dict[str, Any]:
    """`allow_model_files`: only the CLI (a local user) may name a config.json path as the model."""
    if req.kind == "inference":  # serving cost: tracker.estimate.serving.service, same request shape
        return run_serving_estimate(req, resolve_gpus(req.gpu), allow_model_files=allow_model_files)
    job = req.spec(allow_model_files=allow_model_files)
    aset = get_assumptions(req.assumptions)
    price = req.price
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

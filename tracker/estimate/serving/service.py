"""`gpu-tracker estimate --kind inference` and `POST /v1/estimate` with kind inference: one answer for both.

`tracker.estimate.service.run_estimate` hands an inference request here, so the CLI and the API
validate alike and return the same JSON. Without a GPU count, each card is shown on the smallest
machine (1, 2, 4 or 8 GPUs) the job fits on — what "GPUs needed" means for one copy of the model.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from tracker.catalog.gpus import GpuSpec
from tracker.estimate.errors import InvalidJob
from tracker.estimate.serving.job import ServingSpec, supports
from tracker.estimate.serving.model import (
    MEMORY_COMPONENTS,
    STEP_TERMS,
    PreparedServing,
    ServingEstimate,
    per_user_rate,
    prepare_serving,
)

MACHINE_SIZES = (1, 2, 4, 8)
CURVE_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ServingRequest(Protocol):
    """What the estimate request carries (tracker.estimate.service.EstimateRequest)."""

    @property
    def gpu(self) -> str | None: ...
    @property
    def gpus(self) -> float: ...
    @property
    def memory_gb(self) -> float | None: ...
    @property
    def price(self) -> Decimal | None: ...
    @property
    def model_fields_set(self) -> set[str]: ...

    def serving_spec(self, *, allow_model_files: bool = False) -> ServingSpec: ...


def smallest_machine(
    prepared: PreparedServing, card: GpuSpec, price: Decimal | None = None
) -> tuple[int, ServingEstimate]:
    """The smallest machine of this card the job fits on, else the largest tried (not fitting). Only
    sizes the job's tensor parallelism divides are tried (TP 2: 2, 4, 8 GPUs; TP 16: 16)."""
    tp = prepared.job.tensor_parallel
    sizes = [n for n in MACHINE_SIZES if tp is None or n % tp == 0] or [tp or MACHINE_SIZES[-1]]
    for n in sizes:
        est = prepared.on(card, n, price_per_gpu_hour=price)
        if est.fits:
            return n, est
    return sizes[-1], est


def _sort_key(est: ServingEstimate) -> tuple[bool, float]:
    cost = est.usd_per_mtok
    return (not est.fits, float(cost) if cost is not None else -est.tokens_per_second)


def run_serving_estimate(
    req: ServingRequest, cards: list[GpuSpec], *, allow_model_files: bool = False
) -> dict[str, Any]:
    job = req.serving_spec(allow_model_files=allow_model_files)
    prepared = prepare_serving(job)
    if req.gpu:
        usable = [c for c in cards if supports(job, c)]
        if not usable:
            prepared.check(cards[0])  # raises, naming the field (precision fp8 on an A100 ...)
            raise InvalidJob(f"no card named {req.gpu!r} runs this job", field="gpu")  # pragma: no cover
        cards = usable
    if "gpus" in req.model_fields_set:
        for c in cards[:1]:  # the request's own GPU count: a TP degree it does not divide is the request's error
            prepared.layout(c, req.gpus)
        estimates = [prepared.on(c, req.gpus, price_per_gpu_hour=req.price, memory_gb=req.memory_gb) for c in cards]
    else:
        estimates = [smallest_machine(prepared, c, req.price)[1] for c in cards]
    estimates.sort(key=_sort_key)
    return {
        "kind": "inference",
        "job": job.describe(),
        "model_note": job.model.note,
        "params": prepared.params.describe(),
        "memory_components": list(MEMORY_COMPONENTS),
        "step_terms": STEP_TERMS,
        "price_unit": "USD per GPU-hour; a multi-GPU offer costs price x gpus per hour",
        "usd_per_mtok_meaning": "usd_per_mtok: the whole price over output tokens (what rankings sort on); "
        "usd_per_mtok_output / usd_per_mtok_input: the price split by decode and prefill time",
        "curve_concurrencies": list(CURVE_CONCURRENCIES),
        # Each row's $/Mtok-vs-concurrency trade-off on its machine (the dashboard draws it per card).
        "rows": [
            e.as_dict() | {"curve": curve(prepared, e.gpu, e.gpus, e.price_per_gpu_hour, e.memory_gb)}
            for e in estimates
        ],
    }


def curve(
    prepared: PreparedServing,
    card: GpuSpec,
    gpus: float,
    price: Decimal | None,
    memory_gb: float | None = None,
    concurrencies: tuple[int, ...] = CURVE_CONCURRENCIES,
) -> list[dict[str, Any]]:
    """$/Mtok, tokens/s and per-user tokens/s at each concurrency that fits (the dashboard's curve)."""
    points = []
    for est in prepared.curve(card, gpus, list(concurrencies), price_per_gpu_hour=price, memory_gb=memory_gb):
        if not est.fits:
            break
        points.append(
            {
                "concurrency": est.concurrency,
                "tokens_per_second": round(est.tokens_per_second, 1),
                "per_user_tokens_per_second": per_user_rate(est.per_user_tokens_per_second),
                "ttft_s": round(est.ttft_s, 4),
                "usd_per_mtok": est.usd_per_mtok,
            }
        )
    return points

"""The planner's view of the serving (inference) estimate: one small interface, found when it is installed.

The serving estimate lives in `tracker.estimate.serving` (`prepare_serving(make_serving_job(...)).on(card,
gpus)`). The planner needs only a few figures of a placement: aggregate generated tokens/s of one node,
tokens/s each user sees, time to first token, whether the model fits (and, to price spot, a request's
life and the weights' size). Where that package is
missing, `serving_estimator()` answers None and every serving workload is reported as unsupported, by
name; the plan never drops it or invents its cost. It is imported by name at run time so a build
without it still imports this module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol

from tracker.catalog.gpus import GpuSpec
from tracker.estimate import JobInput


@dataclass(frozen=True, slots=True)
class ServingFigures:
    tokens_per_second: float  # generated tokens/s of the whole node, all users together
    per_user_tokens_per_second: float
    ttft_s: float
    fits: bool
    output_tokens: float | None = None  # per request: turns requests/s into tokens/s
    reason: str | None = None  # why it does not fit
    request_s: float = float("nan")  # one request's life on a replica: spot uptime (tracker.costs.serving)
    weights_gb: float = 0.0  # the model a replacement machine downloads: spot uptime


class PreparedServing(Protocol):
    def on(self, card: GpuSpec, gpus: int) -> ServingFigures: ...


class ServingEstimator(Protocol):
    def __call__(self, job: JobInput, kind: str, constraints: Any = None) -> PreparedServing: ...


UNAVAILABLE = "the serving (inference) estimate is not installed in this build: the workload is not planned"


class _Adapted:
    """A prepared serving job seen through the four figures the planner reads."""

    def __init__(self, prepared: Any) -> None:
        self._prepared = prepared
        self._output_tokens = float(prepared.job.output_tokens)

    def on(self, card: GpuSpec, gpus: int) -> ServingFigures:
        est = self._prepared.on(card, gpus)
        fits = bool(est.fits)
        return ServingFigures(
            tokens_per_second=float(est.tokens_per_second) if fits else 0.0,
            per_user_tokens_per_second=float(est.per_user_tokens_per_second) if fits else 0.0,
            ttft_s=float(est.ttft_s) if fits else float("inf"),
            fits=fits,
            output_tokens=self._output_tokens,
            reason=est.reason,
            request_s=float(est.request_seconds) if fits else float("nan"),
            weights_gb=float(self._prepared.weight_bytes(1)) / 1e9,
        )


def serving_job(job: JobInput, constraints: Any = None) -> Any:
    """The serving spec of a mix's job (JobInput of kind inference); raises tracker.estimate errors naming
    the job's field."""
    if job.concurrency is None and constraints is not None:
        # No concurrency given: the serving estimate chooses the largest one that meets the targets.
        targets = {
            "target_tokens_per_user": constraints.min_user_tokens_per_second,
            "max_ttft_s": constraints.max_ttft_s,
        }
        job = job.model_copy(update={k: v for k, v in targets.items() if v is not None and getattr(job, k) is None})
    return job.serving_spec()


def _module() -> Any:
    try:
        module = importlib.import_module("tracker.estimate.serving")
    except ImportError:
        return None
    return module if hasattr(module, "prepare_serving") and hasattr(JobInput, "serving_spec") else None


def serving_estimator() -> ServingEstimator | None:
    """The installed serving estimate adapted to the planner, or None when there is none."""
    module = _module()
    if module is None:
        return None

    def estimator(job: JobInput, kind: str, constraints: Any = None) -> PreparedServing:
        return _Adapted(module.prepare_serving(serving_job(job, constraints)))

    return estimator


def validate_serving_job(job: JobInput) -> None:
    """Check a serving job when the serving estimate is installed (else it is reported unsupported later)."""
    if _module() is not None:
        serving_job(job)


__all__ = [
    "UNAVAILABLE",
    "PreparedServing",
    "ServingEstimator",
    "ServingFigures",
    "serving_estimator",
    "validate_serving_job",
]

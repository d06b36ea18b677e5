"""Cost metrics for alerts: what a saved fine-tuning job costs on a card at a given $/GPU-hour.

Alerts see the estimate model only through `CostModel`, so the rule engine does not depend on how
throughput is computed; `EstimateCostModel` adapts tracker.estimate's public API. A saved job is
the JSON of the one job schema (`tracker.estimate.JobInput`, the same fields as the CLI's options
and the API's job bodies), e.g. {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

COST_METRICS = ("cost_per_run", "usd_per_mtok")  # the names /v1/rank and /v1/estimate use
# Accepted on input and stored under the canonical name (migration 0007 renamed existing rules).
METRIC_ALIASES = {"usd_per_mtoken": "usd_per_mtok"}


class CostError(ValueError):
    """A job spec the estimate cannot price; `field` names the offending input."""

    def __init__(self, message: str, field: str = "job") -> None:
        super().__init__(message)
        self.field = field


class CostModel(Protocol):
    def check(self, job: dict[str, Any], gpu_id: str, gpus: Decimal) -> None:
        """Raise CostError if the job is invalid or cannot run on `gpus` × `gpu_id`."""

    def value(
        self,
        metric: str,
        job: dict[str, Any],
        gpu_id: str,
        gpus: Decimal,
        price_per_gpu_hour: Decimal,
        pricing: str = "on_demand",
    ) -> Decimal:
        """cost_per_run ($ for the whole job, under the default terms of `pricing`) or usd_per_mtok."""


class EstimateCostModel:
    """tracker.estimate behind the CostModel interface."""

    def _estimate(self, job: dict[str, Any], gpu_id: str, gpus: Decimal, price: Decimal | None) -> Any:
        from pydantic import ValidationError

        from tracker import estimate as est
        from tracker.catalog.gpus import get_catalog

        if not isinstance(job, dict) or not ({"model", "hf_config"} & set(job)):
            raise CostError(
                'job must be an object with at least "model", e.g. {"model": "llama-3.1-8b", '
                '"method": "qlora", "tokens": "22.5M"}'
            )
        try:
            spec = est.JobInput.model_validate(job)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in error["loc"])
            raise CostError(
                f"job{'.' + where if where else ''}: {error['msg']}", f"job.{where}" if where else "job"
            ) from None
        try:
            # Never `allow_model_files`: rules come from the API, and a path would read the server's disk.
            gpu = get_catalog().get(gpu_id)
            if spec.kind == "inference":  # serving: $ per million output tokens of the saved traffic
                from tracker.estimate.serving import prepare_serving

                return prepare_serving(spec.serving_spec()).on(gpu, float(gpus), price_per_gpu_hour=price)
            return est.estimate(spec.spec(), gpu, float(gpus), spec.assumptions, price_per_gpu_hour=price)
        except est.EstimateError as exc:
            raise CostError(str(exc), f"job.{exc.field}" if getattr(exc, "field", None) else "job") from None
        except (TypeError, ValueError) as exc:  # a value of the wrong type
            raise CostError(f"job: {exc}") from None

    def check(self, job: dict[str, Any], gpu_id: str, gpus: Decimal) -> None:
        result = self._estimate(job, gpu_id, gpus, None)
        if not result.fits:
            why = getattr(result, "reason", None) or f"{result.vram_gb:.1f} GB needed"
            raise CostError(f"the job does not fit in {gpus:g} × {gpu_id} memory ({why})", "job_gpus")

    def value(
        self,
        metric: str,
        job: dict[str, Any],
        gpu_id: str,
        gpus: Decimal,
        price_per_gpu_hour: Decimal,
        pricing: str = "on_demand",
    ) -> Decimal:
        result = self._estimate(job, gpu_id, gpus, price_per_gpu_hour)
        amount = result.cost_per_run if metric == "cost_per_run" else result.usd_per_mtok
        if amount is None:
            raise CostError(f"the estimate gives no {metric} for this job")
        if metric == "cost_per_run" and job.get("kind") != "inference":
            # The whole run (tracker.costs), as /v1/rank/history prices a card: a card's price statistic
            # has no one provider, so the default cost terms of the rule's pricing apply (spot: interruptions).
            from tracker import costs, estimate

            saved = estimate.JobInput.model_validate(job)
            plan = costs.plan_for(saved, saved.spec())
            price = Decimal(price_per_gpu_hour) * gpus
            return costs.run_total(price, result.hours, costs.resolve("", pricing), plan)
        if metric == "usd_per_mtok" and job.get("kind") == "inference" and pricing == "spot":
            # A spot replica serves only its uptime's share of the hours it is paid for (tracker.costs.serving),
            # as the ranking prices it; the default spot terms apply, as for a run above.
            from tracker import costs, money
            from tracker.costs.serving import offer_uptime

            weights_gb = result.prepared.weight_bytes(1) / 1e9
            share = offer_uptime(costs.resolve("", pricing), weights_gb, result.request_seconds)
            return money.to_money(Decimal(amount) / Decimal(repr(share)))
        return Decimal(amount)


def default_cost_model() -> CostModel:
    """The project's estimate model (tracker.estimate); tests substitute simpler ones."""
    return EstimateCostModel()

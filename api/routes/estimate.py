"""POST /v1/estimate, GET /v1/models, GET /v1/gpus, GET /v1/assumptions: the estimate model over HTTP.

The request uses the CLI's option names. A model may be a catalog id, a Hugging Face repo id, a
size like "7B", or an inline `hf_config` (the contents of config.json); server-side paths are
never opened. Bad values are 422 naming the field; unknown models, GPUs and assumption sets
are 404 with suggestions.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from api.cached import answer
from api.schemas import ErrorBody
from tracker.catalog.gpus import GpuNameError, UnknownGpuName, get_catalog
from tracker.estimate import (
    EstimateError,
    UnknownAssumptions,
    UnknownModel,
    all_models,
    default_name,
    get_assumptions,
    set_names,
)
from tracker.estimate.responses import AssumptionSets, EstimateAnswer, GpuList, ModelList
from tracker.estimate.service import EstimateRequest, resolve_gpus, run_estimate

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown model, GPU or assumption set; suggestions listed"}
}
router = APIRouter(prefix="/v1", tags=["estimate"], responses=_NOT_FOUND)


def _error(status: int, message: str, field: str | None, **extra: Any) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": message, "field": field, **extra})


@router.post("/estimate", response_model=EstimateAnswer)
def post_estimate(body: EstimateRequest) -> Any:
    try:
        return answer(run_estimate(body))  # Decimals as JSON numbers, like every other route
    except UnknownModel as exc:
        return _error(404, exc.message, "model", suggestions=exc.suggestions)
    except UnknownGpuName as exc:
        return _error(404, str(exc), "gpu", suggestions=exc.suggestions)
    except UnknownAssumptions as exc:  # an unknown name, like a model or GPU: 404, as everywhere in the API
        return _error(404, exc.message, "assumptions", suggestions=exc.suggestions)
    except GpuNameError as exc:
        return _error(422, str(exc), "gpu")
    except EstimateError as exc:
        return _error(422, exc.message, exc.field)


@router.get("/models", response_model=ModelList)
def list_models() -> Response:
    models = [m.summary() for m in all_models()]
    return answer({"models": models, "count": len(models)})


@router.get("/gpus", response_model=GpuList)
def list_gpus(
    gpu: Annotated[str | None, Query(max_length=100, description="Card or family filter, e.g. H100")] = None,
) -> Any:
    try:
        specs = resolve_gpus(gpu) if gpu else get_catalog().all()
    except UnknownGpuName as exc:
        return _error(404, str(exc), "gpu", suggestions=exc.suggestions)
    except GpuNameError as exc:
        return _error(422, str(exc), "gpu")
    return answer({"gpus": [asdict(s) for s in specs], "count": len(specs)})


@router.get("/assumptions", response_model=AssumptionSets)
def list_assumptions() -> Response:
    return answer({"default": default_name(), "sets": [get_assumptions(n).describe() for n in set_names()]})

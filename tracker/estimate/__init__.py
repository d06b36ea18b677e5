"""Estimate model: throughput, memory and cost of a fine-tuning job on any card.

Typical use — prepare a job once, place it on many offers::

    job = make_job("llama-3.1-8b", "qlora", tokens="22.5M")
    prepared = prepare(job, "seed")
    est = prepared.on(get_catalog().get("H100-SXM-80GB"), gpus=1, price_per_gpu_hour="2.69")
    est.tokens_per_second, est.vram_gb, est.fits, est.cost_per_run

Assumption sets (`seed`, `hf-peft` — the default —, `optimized`) live in
tracker/estimate/data/assumptions.toml; measured runs for calibration in tracker/estimate/data/calibration.toml.
"""

from tracker.estimate.architectures import (
    ModelArch,
    ParamCounts,
    all_models,
    from_hf_config,
    from_param_count,
    resolve_model,
)
from tracker.estimate.assumptions import (
    AssumptionSet,
    EfficiencyModel,
    all_assumptions,
    default_name,
    get_assumptions,
    set_names,
)
from tracker.estimate.calibration import CalibrationReport, MeasuredRow, RowResult, calibrate, load_rows
from tracker.estimate.core import Estimate, PreparedJob, estimate, prepare
from tracker.estimate.errors import (
    EstimateError,
    InvalidJob,
    InvalidModelConfig,
    UnknownAssumptions,
    UnknownModel,
)
from tracker.estimate.flops import FlopsBreakdown, flops_per_token
from tracker.estimate.job import METHODS, JobInput, JobSpec, make_job
from tracker.estimate.memory import COMPONENTS, MemoryParts, memory_parts
from tracker.estimate.tokens import parse_tokens

__all__ = [
    "COMPONENTS",
    "METHODS",
    "AssumptionSet",
    "CalibrationReport",
    "EfficiencyModel",
    "Estimate",
    "EstimateError",
    "FlopsBreakdown",
    "InvalidJob",
    "InvalidModelConfig",
    "JobInput",
    "JobSpec",
    "MeasuredRow",
    "MemoryParts",
    "ModelArch",
    "ParamCounts",
    "PreparedJob",
    "RowResult",
    "UnknownAssumptions",
    "UnknownModel",
    "all_assumptions",
    "all_models",
    "calibrate",
    "default_name",
    "estimate",
    "flops_per_token",
    "from_hf_config",
    "from_param_count",
    "get_assumptions",
    "load_rows",
    "make_job",
    "memory_parts",
    "parse_tokens",
    "prepare",
    "resolve_model",
    "set_names",
]

"""Inference serving cost: memory, throughput and $ per million tokens of serving a model on any card.

The fine-tuning estimate prices a run; this prices traffic. Typical use — prepare a job once, place
it on many offers (mirrors `tracker.estimate.prepare(job).on(...)`, so rankings take either)::

    job = make_serving_job("llama-3.1-70b", precision="fp8", prompt_tokens=1000, output_tokens=200,
                           concurrency=64, tokens_per_month="10B")
    prepared = prepare_serving(job)
    est = prepared.on(get_catalog().get("H100-SXM-80GB"), gpus=2, price_per_gpu_hour="2.69")
    est.fits, est.vram_gb, est.memory_gb, est.tokens_per_second  # aggregate output tokens/s
    est.per_user_tokens_per_second, est.ttft_s, est.requests_per_second, est.max_concurrency
    est.usd_per_mtok (whole price / output tokens), est.usd_per_mtok_output, est.usd_per_mtok_input
    est.gpus_needed, est.monthly_cost, est.components, est.layout (replicas x TP, chosen per offer),
    est.band (factors .low / .high on tokens/s, like the fine-tuning Band), est.tokens_per_second_band

`JobInput(kind="inference", ...).serving_spec()` builds the job from the one job schema. `on` never
raises for a card the job cannot use (FP8 on Ampere, a KV cache that does not fit): `fits` is False and
`reason` says why; `prepared.check(card)` raises InvalidJob naming `precision` instead. The model's
terms are in serving/model.py, its parameters in data/serving_model.toml, the measured runs they are
fitted to in data/serving_calibration.toml (serving/calibration.py).
"""

from tracker.estimate.serving.job import (
    ENGINES,
    KV_PRECISIONS,
    WEIGHT_PRECISIONS,
    ServingSpec,
    check_support,
    make_serving_job,
    supports,
)
from tracker.estimate.serving.model import (
    MEMORY_COMPONENTS,
    STEP_TERMS,
    PreparedServing,
    ServingEstimate,
    prepare_serving,
)
from tracker.estimate.serving.params import ServingParams, get_params

__all__ = [
    "ENGINES",
    "KV_PRECISIONS",
    "MEMORY_COMPONENTS",
    "STEP_TERMS",
    "WEIGHT_PRECISIONS",
    "PreparedServing",
    "ServingEstimate",
    "ServingParams",
    "ServingSpec",
    "check_support",
    "get_params",
    "make_serving_job",
    "prepare_serving",
    "supports",
]

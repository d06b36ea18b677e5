"""What a ranking of offers for an inference job says that a fine-tuning ranking does not.

A serving row prices traffic, not a run: `usd_per_mtok` (output, and the prefill share over input tokens),
`monthly_cost` and `gpus_needed` for the stated monthly load, and the layout the offer is served with
(replicas × tensor parallel, users per replica, GPUs used and idle). It never carries `hours` or
`cost_per_run`: those belong to a run. A card that cannot run the job says why in `reason` ("precision fp8
unsupported: ...", or the memory it lacks) and carries no throughput, latency or price. Serving defaults to
on-demand prices (spot only when named: a serving replica that is interrupted drops its users, which a price
per token does not show).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.estimate.serving import PreparedServing

SERVING_PRICING = ("on_demand",)
RUN_FIELDS = (
    "hours",
    "hours_low",
    "hours_high",
    "cost_per_run",
    "cost_per_run_low",
    "cost_per_run_high",
    "gpu_cost_per_run",
    "cost",
)


# What a card that cannot run the job has none of: it says why (`reason`), never a throughput or a price
# beside `fits: false` (its memory need, `vram_gb`, and the layout tried stay: they are the why).
UNFIT_NONE = (
    "tokens_per_second",
    "tokens_per_second_low",
    "tokens_per_second_high",
    "per_user_tokens_per_second",
    "ttft_s",
    "concurrency",
    "concurrency_per_replica",
    "running_per_replica",
    "queued_per_replica",
    "usd_per_mtok",
    "usd_per_mtok_output",
    "usd_per_mtok_input",
    "monthly_cost",
    "gpus_needed",
    "offers_needed",
)


# A run's sort keys (cost per run, hours) mean $ per million output tokens for traffic.
RUN_KEYS = ("cost_per_run", "hours")


def usd_per_mtok(prepared: PreparedServing, price_h: np.ndarray, tps: np.ndarray) -> np.ndarray:
    """$ per million output tokens at the job's load: with a monthly load, the offers it needs (whole
    offers, rented all month) over the tokens it asks for; without one, the offer kept busy."""
    load = prepared.job.load_tokens_per_second
    with np.errstate(divide="ignore", invalid="ignore"):
        if load is None:
            out: np.ndarray = price_h / (tps * 3600.0 / 1e6)
            return out
        offers = np.ceil(load / tps)
        at_load: np.ndarray = price_h * offers / (load * 3600.0 / 1e6)
        return at_load


def annotate(rows: list[dict[str, Any]], prepared: PreparedServing, memory_gb: Sequence[float]) -> None:
    """Replace a run's fields by traffic's on each returned row (the estimates are the ranking's own,
    cached in `prepared`)."""
    catalog = get_catalog()
    for r, mem in zip(rows, memory_gb, strict=True):
        gpus = float(r["gpus"])
        est = prepared.on(
            catalog.get(r["gpu"]),
            gpus,
            price_per_gpu_hour=r["price_per_gpu_hour"],
            memory_gb=float(mem) if gpus < 1 else None,
        )
        for key in RUN_FIELDS:
            r.pop(key, None)
        per_mtok, load, per_hour = est.usd_per_mtok, est.job.load_tokens_per_second, est.price_per_hour
        if load is not None and per_hour is not None and est.offers_needed is not None:
            per_mtok = money.per_million_tokens(per_hour * est.offers_needed, load)
        r.update(
            {
                "kind": "inference",
                "layout": est.layout.describe(),
                "tensor_parallel": est.layout.tp,
                "replicas": est.layout.replicas,
                "gpus_used": est.layout.used if gpus >= 1 else gpus,
                "gpus_idle": est.layout.idle,
                "concurrency": est.concurrency,
                "concurrency_per_replica": est.batch_per_replica + est.queued_per_replica,
                "running_per_replica": est.batch_per_replica,
                "queued_per_replica": est.queued_per_replica,
                "per_user_tokens_per_second": round(est.per_user_tokens_per_second, 2),
                "ttft_s": round(est.ttft_s, 4),
                "usd_per_mtok": per_mtok,
                "usd_per_mtok_output": est.usd_per_mtok_output,
                "usd_per_mtok_input": est.usd_per_mtok_input,
                "monthly_cost": est.monthly_cost,
                "gpus_needed": est.gpus_needed,
                "offers_needed": est.offers_needed,
            }
        )
        if not est.fits:
            if est.reason:
                r["reason"] = est.reason  # "precision fp8 unsupported: ...", not a memory figure
            r.update(dict.fromkeys(UNFIT_NONE))  # nothing runs there: no speed, latency or price to show

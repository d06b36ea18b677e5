"""What a ranking of offers for an inference job says that a fine-tuning ranking does not.

A serving row prices traffic, not a run: `usd_per_mtok` (output, and the prefill share over input tokens),
`monthly_cost` and `gpus_needed` for the stated monthly load, and the layout the offer is served with
(replicas × tensor parallel, users per replica, GPUs used and idle). It never carries `hours` or
`cost_per_run`: those belong to a run. A card that cannot run the job says why in `reason` ("precision fp8
unsupported: ...", or the memory it lacks) and carries no throughput, latency or price. Serving defaults to
on-demand prices; spot only when named, and then priced at its uptime (tracker.costs.serving): an
interrupted replica drops its users and serves nothing until a new machine has booted, downloaded the model
and started, so its tokens/s, $/Mtok and the copies a monthly load needs count only the hours it serves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from tracker import money
from tracker.catalog.gpus import get_catalog
from tracker.costs import TermColumns
from tracker.costs import serving as spot_serving
from tracker.estimate.serving import PreparedServing, ServingEstimate
from tracker.estimate.serving.job import HOURS_PER_MONTH

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


def uptime(prepared: PreparedServing, terms: TermColumns, idx: np.ndarray, request_s: np.ndarray) -> np.ndarray:
    """The share of hours each selected offer (`idx` into the live table) serves: 1 on-demand and reserved,
    below 1 on spot by its interruption rate and what one interruption costs (tracker.costs.serving)."""
    rate = terms.values["interruptions_per_hour"][idx]
    weights_gb = prepared.weight_bytes(1) / 1e9  # the whole model, downloaded once per machine
    down = spot_serving.down_hours(weights_gb, terms.values["download_mbps"][idx], request_s)
    return spot_serving.uptime(rate, down)


def annotate(
    rows: list[dict[str, Any]],
    prepared: PreparedServing,
    memory_gb: Sequence[float],
    spot: tuple[Sequence[float], Sequence[float]] | None = None,
) -> None:
    """Replace a run's fields by traffic's on each returned row (the estimates are the ranking's own,
    cached in `prepared`). `spot`: each row's uptime and interruption rate (`uptime` above) when the ranking
    priced them; the row then says both, and its prices and copies count the hours it serves (its
    `tokens_per_second` stays the machine's speed while it is up)."""
    catalog = get_catalog()
    shares, rates = spot if spot is not None else ([1.0] * len(rows), [0.0] * len(rows))
    for r, mem, share, rate in zip(rows, memory_gb, shares, rates, strict=True):
        gpus = float(r["gpus"])
        est = prepared.on(
            catalog.get(r["gpu"]),
            gpus,
            price_per_gpu_hour=r["price_per_gpu_hour"],
            memory_gb=float(mem) if gpus < 1 else None,
        )
        for key in RUN_FIELDS:
            r.pop(key, None)
        r.update(_fields(est) | _prices(est, share))
        if spot is not None:
            r.update({"uptime": round(share, 4), "interruptions_per_hour": rate})
        if not est.fits:
            if est.reason:
                r["reason"] = est.reason  # "precision fp8 unsupported: ...", not a memory figure
            r.update(dict.fromkeys(UNFIT_NONE))  # nothing runs there: no speed, latency or price to show


def _fields(est: ServingEstimate) -> dict[str, Any]:
    """The layout and latency fields of a serving row."""
    gpus = float(est.gpus)
    return {
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
    }


def _prices(est: ServingEstimate, share: float) -> dict[str, Any]:
    """The row's prices at `share` of its hours serving (1: the estimate's own figures): per token over the
    tokens it delivers; with a monthly load, the copies that carry it (whole offers, rented all month)
    over the tokens asked for."""
    per_hour, load = est.price_per_hour, est.job.load_tokens_per_second
    tps = est.tokens_per_second * share
    offers = None if load is None or not (tps > 0) else max(1, math.ceil(load / tps))
    out: dict[str, Any] = {
        "usd_per_mtok": None,
        "usd_per_mtok_output": None,
        "usd_per_mtok_input": None,
        "monthly_cost": None,
        "gpus_needed": None if offers is None else offers * est.gpus,
        "offers_needed": offers,
    }
    if per_hour is None or not (tps > 0):
        return out
    prefill = Decimal(repr(est.prefill_share))
    out["usd_per_mtok_output"] = money.per_million_tokens(per_hour * (1 - prefill), tps)
    out["usd_per_mtok_input"] = money.per_million_tokens(per_hour * prefill, est.input_tokens_per_second * share)
    if offers is None or load is None:
        out["usd_per_mtok"] = money.per_million_tokens(per_hour, tps)
    else:
        out["usd_per_mtok"] = money.per_million_tokens(per_hour * offers, load)
        out["monthly_cost"] = money.cost(per_hour * offers, HOURS_PER_MONTH)
    return out

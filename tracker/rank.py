"""Rank live offers for one fine-tuning job by cost per run, hours, or $ per million tokens.

The estimate depends only on (card, GPU count[, slice memory]), and a market of 20,000 offers has a
few hundred such combinations, so each combination is estimated once and the per-offer arithmetic
(price × GPUs × hours) is vectorised over the live frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import pandas as pd

from tracker.estimate import PreparedJob
from tracker.gpus import get_catalog

SortKey = Literal["cost_per_run", "hours", "usd_per_mtok"]
CENTS = Decimal("0.01")
MILLS = Decimal("0.0001")


@dataclass
class RankFilters:
    providers: Sequence[str] | None = None
    pricing: Sequence[str] | None = None
    regions: Sequence[str] | None = None  # exact, or a prefix such as "us"
    gpu_ids: Sequence[str] | None = None
    min_gpus: float | None = None
    max_gpus: float | None = None
    max_hours: float | None = None
    include_reference: bool = True
    available_only: bool = False


@dataclass
class RankOptions:
    sort_by: SortKey = "cost_per_run"
    include_unfit: bool = False
    best_per_card: bool = False
    limit: int = 50


def _region_mask(regions: pd.Series, wanted: Sequence[str]) -> np.ndarray:
    mask = np.zeros(len(regions), dtype=bool)
    for r in wanted:
        mask |= (regions == r).to_numpy() | regions.str.startswith(f"{r}-").to_numpy()
    return mask


def filter_mask(frame: pd.DataFrame, fresh: np.ndarray, f: RankFilters) -> np.ndarray:
    mask = fresh.copy()
    if f.providers:
        mask &= frame["provider"].isin(list(f.providers)).to_numpy()
    if f.pricing:
        mask &= frame["pricing"].isin(list(f.pricing)).to_numpy()
    if f.regions:
        mask &= _region_mask(frame["region"], f.regions)
    if f.gpu_ids:
        mask &= frame["gpu_id"].isin(list(f.gpu_ids)).to_numpy()
    if f.min_gpus is not None:
        mask &= frame["gpu_count_f"].to_numpy() >= f.min_gpus
    if f.max_gpus is not None:
        mask &= frame["gpu_count_f"].to_numpy() <= f.max_gpus
    if not f.include_reference:
        mask &= ~frame["reference"].to_numpy()
    if f.available_only:
        mask &= frame["available"].map(lambda a: a is None or bool(a)).to_numpy(dtype=bool)
    return mask


def _estimate_combos(prepared: PreparedJob, offers: pd.DataFrame) -> pd.DataFrame:
    """One estimate per distinct (card, GPU count, slice memory)."""
    catalog = get_catalog()
    slice_mem = offers["gpu_memory_gb_f"].where(offers["gpu_count_f"] < 1)
    combos = pd.DataFrame({"gpu_id": offers["gpu_id"], "gpus": offers["gpu_count_f"], "slice_gb": slice_mem})
    combos = combos.drop_duplicates().reset_index(drop=True)
    rows = []
    for gpu_id, gpus, slice_gb in combos.itertuples(index=False):
        est = prepared.on(catalog.get(gpu_id), gpus, memory_gb=None if pd.isna(slice_gb) else float(slice_gb))
        rows.append(
            (est.tokens_per_second, est.hours, est.vram_gb, est.memory_gb, est.fits, est.efficiency,
             est.multi_gpu_efficiency)
        )  # fmt: skip
    cols = ["tokens_per_second", "hours", "vram_gb", "card_memory_gb", "fits", "efficiency", "multi_gpu_efficiency"]
    return pd.concat([combos, pd.DataFrame(rows, columns=cols)], axis=1)


def rank(
    frame: pd.DataFrame,
    fresh: np.ndarray,
    prepared: PreparedJob,
    filters: RankFilters,
    options: RankOptions,
    now: datetime,
) -> dict[str, Any]:
    offers = frame[filter_mask(frame, fresh, filters)]
    considered = len(offers)
    if offers.empty:
        return {"considered": 0, "fitting": 0, "rows": []}
    combos = _estimate_combos(prepared, offers)
    key = offers["gpu_memory_gb_f"].where(offers["gpu_count_f"] < 1)
    joined = offers.assign(slice_gb=key).merge(
        combos, left_on=["gpu_id", "gpu_count_f", "slice_gb"], right_on=["gpu_id", "gpus", "slice_gb"], how="left"
    )
    price_h = joined["price_per_hour_f"].to_numpy()
    hours = joined["hours"].to_numpy()
    joined["cost_per_run"] = price_h * hours
    joined["usd_per_mtok"] = price_h / (joined["tokens_per_second"].to_numpy() * 3600.0 / 1e6)
    joined["age_s"] = (pd.Timestamp(now) - joined["last_seen"]).dt.total_seconds()
    fitting = int(joined["fits"].sum())
    keep = joined["fits"].to_numpy(dtype=bool) | options.include_unfit
    if filters.max_hours is not None:
        keep &= hours <= filters.max_hours
    ranked = joined[keep].sort_values(
        ["fits", options.sort_by, "price_per_hour_f", "id"], ascending=[False, True, True, True], kind="stable"
    )
    if options.best_per_card:
        ranked = ranked.drop_duplicates("gpu_id", keep="first")
    # Merges turn missing optional fields (instance type, reserved term) into NaN; JSON wants null.
    top = ranked.head(options.limit).astype(object)
    top = top.where(top.notna(), None)
    return {"considered": considered, "fitting": fitting, "rows": [_row(r) for r in top.itertuples(index=False)]}


def _money(value: float, unit: Decimal = CENTS) -> Decimal:
    return Decimal(repr(float(value))).quantize(unit)


def _row(r: Any) -> dict[str, Any]:
    fits = bool(r.fits)
    return {
        "offer_id": int(r.id),
        "provider": r.provider,
        "reference": bool(r.reference),
        "demo": bool(r.demo),
        "offer_key": r.offer_key,
        "gpu": r.gpu_id,
        "gpu_family": r.gpu_family,
        "gpus": float(r.gpu_count_f),
        "pricing": r.pricing,
        "reserved_term": r.reserved_term,
        "region": r.region,
        "instance_type": r.instance_type,
        "available": r.available,
        "price_per_hour": r.price_per_hour,
        "price_per_gpu_hour": r.price_per_gpu_hour,
        "fits": fits,
        "reason": None if fits else f"needs {r.vram_gb:.1f} GB per GPU, the card has {r.card_memory_gb:.0f} GB",
        "vram_gb": round(float(r.vram_gb), 2),
        "tokens_per_second": round(float(r.tokens_per_second), 1),
        "hours": round(float(r.hours), 3),
        "cost_per_run": _money(r.cost_per_run),
        "usd_per_mtok": _money(r.usd_per_mtok, MILLS),
        "efficiency": round(float(r.efficiency), 4),
        "multi_gpu_efficiency": round(float(r.multi_gpu_efficiency), 4),
        "last_seen": r.last_seen.to_pydatetime(),
        "price_age_s": round(float(r.age_s), 1),
    }

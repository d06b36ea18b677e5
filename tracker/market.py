"""Market statistics of $/GPU-hour: the distribution now, and over time, per card and pricing type.

Never blended: every statistic is for one card (SXM and PCIe apart) and one pricing type.

Percentiles are weighted and use the inverted-CDF definition (the smallest price whose cumulative
weight reaches q of the total), so every reported value is a price someone actually listed. Now, each
fresh offer weighs 1. Over time, an offer-price interval weighs the seconds it overlaps the bucket,
so an offer counts in a bucket exactly while it was listed, and a price that held for an hour of a
day weighs 1/24 of one that held all day. An open interval (the live price) is taken to hold until
the offer was last seen plus its provider's freshness window (tracker.live), never beyond "now": a provider that stopped
answering does not keep its old prices alive in the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from tracker.live import freshness_window
from tracker.models import Offer, OfferPrice
from tracker.queries import reference_providers

QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75}
INTERVALS = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "1w": timedelta(weeks=1)}
SIX = Decimal("0.000001")


def weighted_quantiles(prices: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    """Inverted-CDF weighted quantiles of one group (prices need not be sorted)."""
    order = np.argsort(prices, kind="stable")
    p, w = prices[order], weights[order]
    cum = np.cumsum(w)
    total = cum[-1]
    return {name: float(p[np.searchsorted(cum, q * total - 1e-9 * total)]) for name, q in QUANTILES.items()}


def _dec(value: float) -> Decimal:
    return Decimal(repr(float(value))).quantize(SIX)


@dataclass
class MarketStat:
    gpu: str
    gpu_family: str
    pricing: str
    min: Decimal
    p25: Decimal
    median: Decimal
    p75: Decimal
    max: Decimal
    offers: int
    providers: int
    reference_only: bool
    freshest: datetime
    stalest: datetime

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def snapshot(
    frame: pd.DataFrame,
    *,
    fresh: np.ndarray,
    gpu_ids: Sequence[str] | None = None,
    pricing: Sequence[str] | None = None,
    include_reference: bool = True,
) -> list[MarketStat]:
    """Distribution of current $/GPU-hour per card × pricing type over the fresh offers of the live frame."""
    mask = fresh.copy()
    if gpu_ids:
        mask &= frame["gpu_id"].isin(list(gpu_ids)).to_numpy()
    if pricing:
        mask &= frame["pricing"].isin(list(pricing)).to_numpy()
    if not include_reference:
        mask &= ~frame["reference"].to_numpy()
    df = frame[mask]
    out = []
    for (gpu, family, kind), g in df.groupby(["gpu_id", "gpu_family", "pricing"], sort=True):
        prices = g["price_per_gpu_hour_f"].to_numpy()
        q = weighted_quantiles(prices, np.ones_like(prices))
        out.append(
            MarketStat(
                gpu=gpu,
                gpu_family=family,
                pricing=kind,
                min=_dec(prices.min()),
                p25=_dec(q["p25"]),
                median=_dec(q["median"]),
                p75=_dec(q["p75"]),
                max=_dec(prices.max()),
                offers=len(g),
                providers=g["provider"].nunique(),
                reference_only=bool(g["reference"].all()),
                freshest=g["last_seen"].max().to_pydatetime(),
                stalest=g["last_seen"].min().to_pydatetime(),
            )
        )
    return out


def _floor(t: datetime, step: timedelta, origin: datetime) -> datetime:
    return origin + ((t - origin) // step) * step


def history(
    session: Session,
    *,
    gpu_ids: Sequence[str],
    pricing: str,
    interval: str,
    start: datetime,
    end: datetime,
    now: datetime,
    stale_after: timedelta,
    include_reference: bool = True,
) -> list[dict[str, Any]]:
    """Bucketed statistics over [start, end), computed exactly from the change-only history."""
    step = INTERVALS[interval]
    origin = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "1w":  # weeks start on Monday
        origin -= timedelta(days=origin.weekday())
    first = _floor(start, step, origin)
    end = min(end, now)
    stmt = (
        select(
            OfferPrice.offer_id,
            OfferPrice.valid_from,
            OfferPrice.valid_to,
            OfferPrice.price_per_gpu_hour,
            Offer.last_seen,
            Offer.provider,
        )
        .join(Offer, Offer.id == OfferPrice.offer_id)
        .where(
            OfferPrice.gpu_id.in_(gpu_ids),
            OfferPrice.pricing == pricing,
            OfferPrice.valid_from < end,
            or_(OfferPrice.valid_to.is_(None), OfferPrice.valid_to > first),
        )
    )
    if not include_reference and (refs := reference_providers()):
        stmt = stmt.where(Offer.provider.not_in(refs))
    rows = session.execute(stmt).all()
    if not rows:
        return []
    df = pd.DataFrame(rows, columns=["offer", "start", "stop", "price", "last_seen", "provider"])
    windows = df["provider"].map(lambda p: freshness_window(p, stale_after))
    open_until = (df["last_seen"] + windows).where(df["last_seen"] + windows < end, end)
    df["stop"] = df["stop"].where(df["stop"].notna(), open_until)
    df["start"] = pd.to_datetime(df["start"], utc=True)
    df["stop"] = pd.to_datetime(df["stop"], utc=True)
    df = df[df["stop"] > df["start"]]
    if df.empty:
        return []
    # Explode each interval into the buckets it spans, clipped to each bucket.
    origin_ts, step_ns = pd.Timestamp(first), pd.Timedelta(step).value
    first_bucket = ((df["start"] - origin_ts).dt.total_seconds() * 1e9 // step_ns).clip(lower=0).astype("int64")
    last_bucket = (((df["stop"] - origin_ts).dt.total_seconds() * 1e9 - 1) // step_ns).astype("int64")
    spans = (last_bucket - first_bucket + 1).clip(lower=0).to_numpy()
    idx = np.repeat(np.arange(len(df)), spans)
    bucket = np.repeat(first_bucket.to_numpy(), spans) + (
        np.arange(spans.sum()) - np.repeat(np.cumsum(spans) - spans, spans)
    )
    pieces = df.iloc[idx].reset_index(drop=True)
    pieces["bucket"] = bucket
    b_start = origin_ts + pd.to_timedelta(pieces["bucket"] * step_ns, unit="ns")
    lo = pieces["start"].where(pieces["start"] > b_start, b_start)
    b_stop = b_start + pd.Timedelta(step)
    b_stop = b_stop.where(b_stop < pd.Timestamp(end), pd.Timestamp(end))
    hi = pieces["stop"].where(pieces["stop"] < b_stop, b_stop)
    pieces["weight"] = (hi - lo).dt.total_seconds()
    pieces = pieces[pieces["weight"] > 0]
    pieces["price"] = pieces["price"].astype(float)
    out = []
    for b, g in pieces.groupby("bucket", sort=True):
        prices, weights = g["price"].to_numpy(), g["weight"].to_numpy()
        q = weighted_quantiles(prices, weights)
        bucket_start = (origin_ts + pd.Timedelta(step_ns * int(b), unit="ns")).to_pydatetime()
        if bucket_start < first or bucket_start >= end:
            continue
        out.append(
            {
                "bucket": bucket_start,
                "min": _dec(prices.min()),
                "p25": _dec(q["p25"]),
                "median": _dec(q["median"]),
                "p75": _dec(q["p75"]),
                "max": _dec(prices.max()),
                "offers": int(g["offer"].nunique()),
                "providers": int(g["provider"].nunique()),
            }
        )
    return out


__all__ = ["INTERVALS", "MarketStat", "history", "snapshot", "weighted_quantiles"]

"""The market overview: per card and pricing type, the live distribution next to its recent past.

One row per (card, pricing type) with fresh offers, never blended across either (SXM and PCIe are
different cards). On top of the live statistics of `tracker.market.service.market_snapshot` each row carries:

* `demo`: some counted offers are replayed demo data, so the numbers are not a market;
* `sparkline`: the daily median and minimum over the last `SPARK_DAYS` days, from `tracker.market.statistics.history`,
  so they are the same numbers the history chart and its CSV show;
* `change_7d` / `change_30d`: the live median minus the daily median of the UTC day 7 (30) days before
  today, with the percentage. A day with no offers gives null, never an interpolated guess.

Reserved rows come one per term (`reserved_term`); their sparkline and change are those of that term's
prices only (tracker.market.statistics.history: terms are never blended). `aggregated` chooses
how resales count (tracker.market.aggregated); the live statistics honour it, the sparkline counts
every listed offer. `sheets` gives every rate sheet's age, and each row names its `stale_sheets`
(tracker.market.freshness.sheet_ages), so the dashboard can say which reference prices are old.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tracker.catalog.gpus import get_catalog
from tracker.config import Settings
from tracker.market import freshness
from tracker.market import statistics as market
from tracker.market.live import LiveOffers, fresh_mask, live_table
from tracker.market.service import market_snapshot

SPARK_DAYS = 30
CHANGE_DAYS = (7, 30)


def _demo_groups(frame: Any, fresh: Any, include_reference: bool) -> set[tuple[str, str]]:
    """(card, pricing) pairs whose counted offers include demo data."""
    if frame.empty:
        return set()
    mask = fresh & frame["demo"].to_numpy(dtype=bool)
    if not include_reference:
        mask &= ~frame["reference"].to_numpy()
    demo = frame[mask]
    return set(zip(demo["gpu_id"], demo["pricing"], strict=True))


def _change(now_median: Decimal, then: dict[str, Any] | None) -> tuple[Decimal | None, Decimal | None, float | None]:
    if then is None or not then["median"]:
        return None, None, None
    delta = now_median - then["median"]
    return then["median"], delta, round(float(delta / then["median"] * 100), 2)


def market_overview(
    engine: Engine,
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    pricing: Sequence[str] | None = None,
    include_reference: bool = True,
    aggregated: str = "include",
    live: LiveOffers | None = None,
) -> dict[str, Any]:
    table = live_table(live)
    snapshot = market_snapshot(
        engine,
        session,
        settings,
        now,
        pricing=pricing,
        include_reference=include_reference,
        aggregated=aggregated,
        live=table,
    )
    version = snapshot["data_version"]
    _, frame = table.frame(engine, session)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=SPARK_DAYS)
    params = (
        "overview",
        tuple(pricing or ()),
        include_reference,
        aggregated,
        freshness.signature(settings),
        now.replace(second=0, microsecond=0),
    )

    def compute() -> list[dict[str, Any]]:
        demo = _demo_groups(frame.frame, fresh_mask(frame, now, settings), include_reference)
        catalog = get_catalog()
        rows = []
        for card in snapshot["cards"]:
            # One indexed history query per card and pricing type: a few dozen per minute at most (memoised).
            buckets = market.history(
                session,
                gpu_ids=[card["gpu"]],
                pricing=card["pricing"],
                reserved_term=card["reserved_term"],
                interval="1d",
                start=start,
                end=now,
                now=now,
                settings=settings,
                include_reference=include_reference,
            )
            by_day = {b["bucket"]: b for b in buckets}
            spec = catalog.get(card["gpu"])
            row = card | {
                "name": spec.name,
                "form_factor": spec.form_factor,
                "memory_gb": spec.memory_gb,
                "demo": (card["gpu"], card["pricing"]) in demo,
                "sparkline": [{"day": b["bucket"], "median": b["median"], "min": b["min"]} for b in buckets],
            }
            for days in CHANGE_DAYS:
                then, delta, pct = _change(card["median"], by_day.get(today - timedelta(days=days)))
                row |= {f"median_{days}d_ago": then, f"change_{days}d": delta, f"change_{days}d_pct": pct}
            rows.append(row)
        return rows

    rows = table.memo(engine, version, params, compute)
    return {
        "as_of": now,
        "data_version": version,
        "sparkline_days": SPARK_DAYS,
        "cards": rows,
        "sheets": snapshot["sheets"],
        "aggregated": aggregated,
    }


__all__ = ["CHANGE_DAYS", "SPARK_DAYS", "market_overview"]

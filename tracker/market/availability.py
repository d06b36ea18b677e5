"""Availability over time: when was a matching offer last available, and for what share of a window.

Answered from `offer_availability`, the change-only history ingest writes beside the prices: each row
says an offer was listed with one `available` flag on [valid_from, valid_to). Per provider and card,
over the offers of the cards matching the offer filters (tracker.market.filters: GPUs, providers, region
prefixes, pricing types, quality):

* `offers_now` / `available_now`: matching offers live now (the freshness rule) / of those, available;
* `last_available_at`: the last instant any matching offer was available (now, if one is), all history;
* `available_share`: the fraction of [now − days, now] during which at least one matching offer was
  available — the length of the union of their available intervals over the window's length, exact in
  integer microseconds (two offers available at once count once; time before tracking began counts
  as not available);
* `tracked_since` / `tracked_share`: when this provider's card was first on record, and the share of
  the tracked part of the window ([max(now − days, tracked_since), now]) it was available: an offer
  first seen an hour ago and available since is available for 100 % of what we know, not 0.6 % of 7 days;
* `reports_availability`: whether any matching offer stated availability at all in the window (list
  prices that never say are counted as not available, never as available: tracker.market.quality).

An open interval holds until the offer's last sighting plus its provider's freshness window, never
beyond now (the rule the price history uses): a provider whose scrapes stopped does not go on
reporting its last answer as the present.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.market import freshness
from tracker.market.filters import OfferFilters
from tracker.market.live import epoch_us as epoch_us_of
from tracker.storage.sql import epoch_us
from tracker.storage.tables import Offer, OfferAvailability

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_US = timedelta(microseconds=1)
Interval = tuple[int, int, int, bool | None, bool]  # offer id, from, to (µs), available, live now

__all__ = ["availability", "covered"]


def covered(lo: np.ndarray, hi: np.ndarray) -> int:
    """Length of the union of the intervals [lo, hi) (integer microseconds; empty ones ignored)."""
    keep = hi > lo
    if not keep.any():
        return 0
    order = np.argsort(lo[keep], kind="stable")
    lo, hi = lo[keep][order], hi[keep][order]
    # Each interval adds what lies beyond the furthest end reached by those starting before it.
    reach = np.maximum.accumulate(hi)
    before = np.concatenate(([lo[0]], reach[:-1]))
    return int(np.maximum(hi - np.maximum(lo, before), 0).sum())


def availability(
    session: Session,
    settings: Settings,
    now: datetime,
    *,
    gpu_ids: Sequence[str],
    days: float = 7,
    filters: OfferFilters | None = None,
) -> list[dict[str, Any]]:
    """One row per (provider, card) with matching offers in the window or ever available, sorted."""
    start = now - timedelta(days=days)
    start_us, now_us = epoch_us_of(start), epoch_us_of(now)
    conditions = [Offer.gpu_id.in_(gpu_ids), *(filters or OfferFilters()).conditions(now=now, settings=settings)]

    def matching(stmt: Any) -> Any:
        return stmt.where(*conditions)

    window_rows = session.execute(
        matching(
            select(
                Offer.id,
                Offer.provider,
                Offer.gpu_id,
                epoch_us(OfferAvailability.valid_from),
                epoch_us(OfferAvailability.valid_to),
                OfferAvailability.available,
                epoch_us(Offer.last_seen),
            )
            .join(OfferAvailability, OfferAvailability.offer_id == Offer.id)
            .where(
                OfferAvailability.valid_from < now,
                or_(OfferAvailability.valid_to.is_(None), OfferAvailability.valid_to > start),
            )
        )
    ).all()
    # The last closed available interval of each group, however long ago (open ones are in window_rows).
    closed_last = {
        (provider, gpu): epoch_us_of(at)
        for provider, gpu, at in session.execute(
            matching(
                select(Offer.provider, Offer.gpu_id, func.max(OfferAvailability.valid_to))
                .join(OfferAvailability, OfferAvailability.offer_id == Offer.id)
                .where(OfferAvailability.available.is_(True), OfferAvailability.valid_to.is_not(None))
                .group_by(Offer.provider, Offer.gpu_id)
            )
        ).all()
        if at is not None
    }

    first_us = _first_records(session, matching)
    windows_us = {p: freshness.window(p, settings) // _EPOCH_US for p in {r[1] for r in window_rows}}
    groups: dict[tuple[str, str], list[Interval]] = defaultdict(list)
    for offer_id, provider, gpu, lo, hi, available, seen in window_rows:
        live_until = min(int(seen) + windows_us[provider], now_us)
        is_open = hi is None
        end = live_until if is_open else min(int(hi), now_us)
        groups[(provider, gpu)].append((offer_id, int(lo), end, available, is_open and live_until == now_us))

    return [
        _row(key, groups.get(key, []), closed_last.get(key), first_us.get(key), start_us, now_us)
        for key in sorted(set(groups) | set(closed_last))
    ]


def _row(
    key: tuple[str, str],
    rows: list[Interval],
    closed_last: int | None,
    first: int | None,
    start_us: int,
    now_us: int,
) -> dict[str, Any]:
    """One (provider, card): its availability intervals in the window → the published figures."""
    avail = [(lo, hi) for _, lo, hi, a, _ in rows if a is True]
    lo = np.clip(np.array([a[0] for a in avail], dtype=np.int64), start_us, now_us)
    hi = np.clip(np.array([a[1] for a in avail], dtype=np.int64), start_us, now_us)
    share_us = covered(lo, hi) if avail else 0
    ends = [hi_ for _, lo_, hi_, a, _ in rows if a is True and hi_ > lo_]
    last_us = max([*ends, *([closed_last] if closed_last is not None else [])], default=None)
    live = {offer_id: a for offer_id, _, _, a, now_open in rows if now_open}
    window_us, since_us = now_us - start_us, max(first if first is not None else start_us, start_us)
    return {
        "provider": key[0],
        "gpu": key[1],
        "offers_now": len(live),
        "available_now": sum(1 for a in live.values() if a is True),
        "last_available_at": None if last_us is None else _at(last_us),
        "available_share": share_us / window_us if window_us > 0 else 0.0,
        "available_hours": round(share_us / 3.6e9, 3),
        "tracked_since": _at(first) if first is not None else None,
        "tracked_share": share_us / (now_us - since_us) if now_us > since_us else 0.0,
        "reports_availability": any(a is not None for _, _, _, a, _ in rows),
    }


def _first_records(session: Session, matching: Any) -> dict[tuple[str, str], int]:
    """The first availability record of each (provider, card): where tracking of it began."""
    rows = session.execute(
        matching(
            select(Offer.provider, Offer.gpu_id, func.min(OfferAvailability.valid_from))
            .join(OfferAvailability, OfferAvailability.offer_id == Offer.id)
            .group_by(Offer.provider, Offer.gpu_id)
        )
    ).all()
    return {(provider, gpu): epoch_us_of(at) for provider, gpu, at in rows if at is not None}


def _at(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)

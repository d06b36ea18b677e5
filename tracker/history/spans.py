"""Which stretches of a card's history were imported rather than observed live (for the charts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tracker.config import Settings
from tracker.market import freshness
from tracker.storage.tables import Offer, ScrapeRun


def imported_spans(
    session: Session, settings: Settings, gpu_ids: Sequence[str], start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Per provider with offers of these cards: from its first to its last imported observation (plus the
    freshness window history credits the last one with), clipped to [start, end); the import kind named."""
    providers = select(Offer.provider).where(Offer.gpu_id.in_(gpu_ids)).distinct()
    kind = func.substr(ScrapeRun.source_version, 1, 9)  # "snapshots", "export:li…": the kind leads the version
    rows = session.execute(
        select(ScrapeRun.provider, kind, func.min(ScrapeRun.observed_at), func.max(ScrapeRun.observed_at))
        .where(ScrapeRun.source == "import", ScrapeRun.status == "ok", ScrapeRun.provider.in_(providers))
        .group_by(ScrapeRun.provider, kind)
    ).all()
    out = []
    for provider, prefix, lo, hi in rows:
        if lo is None or hi is None:
            continue
        hi = hi + freshness.window(provider, settings)
        if hi <= start or lo >= end:
            continue
        out.append(
            {
                "provider": provider,
                "kind": str(prefix or "").split(":", 1)[0] or "import",
                "from": max(lo, start),
                "to": min(hi, end),
            }
        )
    return sorted(out, key=lambda s: (s["from"], s["provider"]))

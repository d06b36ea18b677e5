"""The term structure of a card: $/GPU-hour against commitment length, each commitment its own distribution.

On-demand (no commitment), spot (none either, but pre-emptible: a point apart, never on the curve's axis)
and every reservation term (`STANDARD_TERMS`, plus any other term an offer of the card carries) are each
one distribution: offers, min, p25, median, p75, providers. Never blended: a 1-day and a 3-year price
are different prices, as are SXM and PCIe (one card id each).

Now comes from the market snapshot (`tracker.market.statistics.snapshot`, which groups reserved prices
by term); over time from the change-only history of each (pricing, term) (`statistics.history`, which
needs the term of a reserved history). A standard term no offer carries is listed with 0 offers, so an
empty point is visible as empty rather than absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from providers.parsing import term_hours
from tracker.config import Settings
from tracker.market import statistics
from tracker.storage.tables import Offer

# The reservation terms every card's curve shows (1 day to 3 years), in the spelling offers use
# (providers.parsing.reservation_term).
STANDARD_TERMS = ("1d", "7d", "1mo", "3mo", "1y", "3y")
STAT_KEYS = ("min", "p25", "median", "p75")


def points(pricing_terms: Iterable[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """The curve's points in order: on-demand, spot, then every term by its length (standard ones always)."""
    seen = {(p, t if p == "reserved" else None) for p, t in pricing_terms}
    seen |= {("on_demand", None), ("spot", None)} | {("reserved", t) for t in STANDARD_TERMS}
    return sorted(seen, key=lambda pt: (0, 0, "") if pt[0] == "on_demand" else _order(pt))


def _order(pt: tuple[str, str | None]) -> tuple[int, Decimal, str]:
    pricing, term = pt
    if pricing != "reserved" or term is None:
        return (1, Decimal(0), pricing)
    return (2, term_hours(term), term)


def label(pricing: str, term: str | None) -> str:
    return term if pricing == "reserved" and term else pricing


def _point(pricing: str, term: str | None, stat: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "pricing": pricing,
        "term": term,
        "label": label(pricing, term),
        # Hours committed to: 0 on demand; None for spot (no commitment, and no promise of the hours).
        "commitment_hours": term_hours(term) if term else (Decimal(0) if pricing == "on_demand" else None),
        "offers": stat["offers"] if stat else 0,
        "providers": stat["providers"] if stat else 0,
        **{k: stat[k] if stat else None for k in STAT_KEYS},
    }


def curve(cards: Sequence[Mapping[str, Any]], gpu_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Per card id: its points now, from the market snapshot's rows (one per card × pricing × term)."""
    out = []
    for gid in gpu_ids:
        mine = {(c["pricing"], c.get("reserved_term")): c for c in cards if c["gpu"] == gid}
        out.append({"gpu": gid, "terms": [_point(p, t, mine.get((p, t))) for p, t in points(mine)]})
    return out


def listed_terms(session: Session, gpu_id: str) -> list[tuple[str, str | None]]:
    """Every (pricing, term) an offer of the card ever had: what its history can hold."""
    stmt = select(Offer.pricing, Offer.reserved_term).where(Offer.gpu_id == gpu_id).distinct()
    return [(p, t) for p, t in session.execute(stmt)]


def history(
    session: Session,
    settings: Settings,
    now: datetime,
    gpu_id: str,
    *,
    start: datetime,
    include_reference: bool = True,
) -> list[dict[str, Any]]:
    """Per point of the card's curve: its daily distribution over [start, now), one series per term."""
    series = []
    for pricing, term in points(listed_terms(session, gpu_id)):
        buckets = statistics.history(
            session,
            gpu_ids=[gpu_id],
            pricing=pricing,
            reserved_term=term,
            interval="1d",
            start=start,
            end=now,
            now=now,
            settings=settings,
            include_reference=include_reference,
        )
        days = [
            {"day": b["bucket"], "offers": b["offers"], "providers": b["providers"], **{k: b[k] for k in STAT_KEYS}}
            for b in buckets
        ]
        series.append({"pricing": pricing, "term": term, "label": label(pricing, term), "days": days})
    return series


__all__ = ["STANDARD_TERMS", "curve", "history", "label", "listed_terms", "points"]

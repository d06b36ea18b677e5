"""What a rule sees: its metric now, or why there is no trustworthy value (no_data).

A value is computed only from live offers (`tracker.market.freshness`, the rule the market uses) of the rule's
cards and pricing type, after the provider and region filters. If any provider the rule depends on
(named in the rule, or contributing fresh offers) had its latest run fail or get quarantined, its
"fresh" prices are suspect, so the rule gets no value at all: a failing scrape must neither fire nor
resolve an alert. Percentiles use the same inverted-CDF definition as tracker.market.statistics, so an alert
on the median agrees with the market snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from providers.registry import all_providers
from tracker.alerts.job_cost import COST_METRICS, CostError, CostModel
from tracker.config import Settings
from tracker.market import freshness
from tracker.market.offers import region_condition
from tracker.money import to_money
from tracker.storage.tables import Offer, ScrapeRun

PRICE_STATISTICS = {"min": Fraction(0), "p25": Fraction(1, 4), "median": Fraction(1, 2)}
METRICS = (*PRICE_STATISTICS, *COST_METRICS)
FAILED_RUN = ("failed", "quarantined")
FINISHED_RUN = ("ok", *FAILED_RUN)


class RuleSubject(Protocol):
    gpu_ids: list[str]
    pricing: str
    providers: list[str] | None
    regions: list[str] | None
    min_offers: int
    metric: str
    price_statistic: str
    job: dict[str, Any] | None
    job_gpus: Decimal


@dataclass
class Observation:
    value: Decimal | None
    offers: int = 0
    providers: list[str] = field(default_factory=list)
    price: Decimal | None = None  # the $/GPU-hour statistic (for cost metrics, the price they use)
    no_data: str | None = None  # why there is no value

    @property
    def ok(self) -> bool:
        return self.value is not None


def pick(prices: Sequence[Decimal], statistic: str) -> Decimal:
    """Inverted-CDF quantile of equally weighted prices: the smallest price reaching q of the count."""
    ordered = sorted(prices)
    q = PRICE_STATISTICS[statistic]
    if q == 0:
        return ordered[0]
    rank = -(-q.numerator * len(ordered) // q.denominator)  # ceil(q × n)
    return ordered[max(rank, 1) - 1]


def failing_providers(session: Session, providers: set[str]) -> dict[str, str]:
    """Providers whose latest finished run failed or was quarantined → that run's error."""
    if not providers:
        return {}
    latest = (
        select(func.max(ScrapeRun.id))
        .where(ScrapeRun.provider.in_(providers), ScrapeRun.status.in_(FINISHED_RUN))
        .group_by(ScrapeRun.provider)
    )
    rows = session.execute(
        select(ScrapeRun.provider, ScrapeRun.status, ScrapeRun.error).where(ScrapeRun.id.in_(latest))
    ).all()
    return {p: f"{status}: {error or 'no reason recorded'}" for p, status, error in rows if status in FAILED_RUN}


def live_condition(now: datetime, settings: Settings) -> ColumnElement[bool]:
    """SQL for "this offer is live at `now`": each provider's own freshness window, grouped by window
    so the condition stays a handful of terms however many providers there are."""
    by_window: dict[timedelta, list[str]] = {}
    for name, w in freshness.windows(all_providers(), settings).items():
        by_window.setdefault(w, []).append(name)
    terms = [and_(Offer.provider.in_(names), Offer.last_seen >= now - w) for w, names in by_window.items()]
    unknown = freshness.window("", settings)  # offers of a provider no longer in the registry
    terms.append(and_(Offer.provider.not_in(list(all_providers())), Offer.last_seen >= now - unknown))
    return or_(*terms)


def observe(
    session: Session, rule: RuleSubject, *, now: datetime, settings: Settings, cost_model: CostModel | None
) -> Observation:
    stmt = select(Offer.provider, Offer.price_per_gpu_hour).where(
        Offer.gpu_id.in_(rule.gpu_ids),
        Offer.pricing == rule.pricing,
        Offer.delisted_at.is_(None),
        live_condition(now, settings),
    )
    if rule.providers:
        stmt = stmt.where(Offer.provider.in_(rule.providers))
    if rule.regions:
        stmt = stmt.where(region_condition(rule.regions))
    rows = session.execute(stmt).all()
    contributing = sorted({p for p, _ in rows})
    failing = failing_providers(session, set(rule.providers or []) | set(contributing))
    if failing:
        detail = "; ".join(f"{p} {why}" for p, why in sorted(failing.items()))
        return Observation(None, len(rows), contributing, no_data=f"latest run failed: {detail}"[:1000])
    if not rows:
        return Observation(None, 0, [], no_data=f"no live offers: {_windows_text(rule, settings)}")
    if len(rows) < rule.min_offers:
        return Observation(None, len(rows), contributing,
                           no_data=f"{len(rows)} fresh offers, fewer than the rule's minimum {rule.min_offers}")
    prices = [p for _, p in rows]
    if rule.metric in PRICE_STATISTICS:
        price = pick(prices, rule.metric)
        return Observation(price, len(rows), contributing, price=price)
    price = pick(prices, rule.price_statistic)
    if cost_model is None:
        return Observation(None, len(rows), contributing, price=price,
                           no_data="cost metrics need the estimate model, which is unavailable")
    try:
        value = cost_model.value(rule.metric, rule.job or {}, rule.gpu_ids[0], rule.job_gpus, price)
    except CostError as exc:
        return Observation(None, len(rows), contributing, price=price, no_data=f"cost estimate failed: {exc}")
    return Observation(to_money(value), len(rows), contributing, price=price)


def _windows_text(rule: RuleSubject, settings: Settings) -> str:
    """Which freshness windows applied, so "no data" says how old is too old for this rule."""
    names = rule.providers or list(all_providers())
    spans: dict[timedelta, list[str]] = {}
    for name in names:
        spans.setdefault(freshness.window(name, settings), []).append(name)
    if len(spans) == 1:
        (w,) = spans
        return f"none seen in the last {w}"
    parts = [f"{w} for {', '.join(sorted(ns))}" for w, ns in sorted(spans.items())]
    return "none seen within each provider's freshness window (" + "; ".join(parts) + ")"

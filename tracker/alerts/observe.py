"""What a rule sees: its metric now, or why there is no trustworthy value (no_data).

A value is computed only from live offers (`tracker.market.freshness`, the rule the market uses) of the rule's
cards and pricing type, after the provider and region filters. If any provider the rule depends on
(named in the rule, or contributing fresh offers) had its latest run fail or get quarantined, its
"fresh" prices are suspect, so the rule gets no value at all: a failing scrape must neither fire nor
resolve an alert. Percentiles use the same inverted-CDF definition as tracker.market.statistics, so an alert
on the median agrees with the market snapshot.

Offer filters (available only, a minimum GPU count, verified, datacenter, reliability, cloud: what they
mean is `tracker.market.quality`) narrow which offers count. A rule with any of them asks "is there such
an offer, and at what price", so *no matching offer* is an answer, not missing data: the observation is
`unmatched` (no offer at any price, as if priced at infinity), which resolves a `below` rule and
breaches an `above` one (tracker.alerts.states). It is given only when the data can say so: some of the
subject's offers are live and none passes the filters, or none is listed at all by providers whose
latest scrape succeeded within their freshness window (a rented Vast.ai machine leaves the listing).
Otherwise — a provider stale, failing, or never seen — it is no_data, as for any rule.

Resales count as the rule's `aggregated` says, by the rule the market and rankings apply
(`tracker.market.aggregated.mask`), last, among the live offers that pass the filters: with `dedupe` a
machine its owner lists directly counts once, at the owner's price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
from sqlalchemy import ColumnElement, and_, case, func, select, true
from sqlalchemy.orm import Session

from providers.registry import all_providers
from tracker.alerts.job_cost import COST_METRICS, CostError, CostModel
from tracker.config import Settings
from tracker.market import aggregated as resales
from tracker.market import freshness, quality
from tracker.market.offers import region_condition
from tracker.market.price_kinds import orderable_asking
from tracker.money import to_money
from tracker.storage.tables import Offer, ScrapeRun

PRICE_STATISTICS = {"min": Fraction(0), "p25": Fraction(1, 4), "median": Fraction(1, 2)}
METRICS = (*PRICE_STATISTICS, *COST_METRICS)
FAILED_RUN = ("failed", "quarantined")
FINISHED_RUN = ("ok", *FAILED_RUN)


class RuleSubject(Protocol):
    gpu_ids: list[str]
    pricing: str
    reserved_term: str | None
    providers: list[str] | None
    regions: list[str] | None
    min_offers: int
    metric: str
    price_statistic: str
    job: dict[str, Any] | None
    job_gpus: Decimal
    # Offer filters (tracker.market.quality, and the GPU count).
    available_only: bool
    min_gpus: Decimal | None
    verified_only: bool
    datacenter_only: bool
    min_reliability: Decimal | None
    cloud: str | None
    aggregated: str


@dataclass
class Observation:
    value: Decimal | None
    offers: int = 0
    providers: list[str] = field(default_factory=list)
    price: Decimal | None = None  # the $/GPU-hour statistic (for cost metrics, the price they use)
    no_data: str | None = None  # why there is no value
    unmatched: str | None = None  # why no offer passes the rule's filters (then no value, but an answer)
    best_card: str | None = None  # a plan rule's best single card type (tracker.alerts.plan_watch)

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


def offer_filters(rule: RuleSubject) -> list[ColumnElement[bool]]:
    """The rule's offer filters as SQL conditions (none: every offer of the subject counts)."""
    conditions = quality.conditions(rule)
    if rule.min_gpus is not None:
        conditions.append(Offer.gpu_count >= rule.min_gpus)
    return conditions


def filters_text(rule: RuleSubject) -> str:
    """The offer filters in words, for reasons and messages ("available, ≥ 8 GPUs, verified")."""
    parts = [
        "available" if rule.available_only else "",
        f"≥ {rule.min_gpus.normalize():f} GPUs" if rule.min_gpus is not None else "",
        "verified" if rule.verified_only else "",
        "datacenter" if rule.datacenter_only else "",
        f"reliability ≥ {rule.min_reliability.normalize():f}" if rule.min_reliability is not None else "",
        f"{rule.cloud} cloud" if rule.cloud else "",
    ]
    return ", ".join(p for p in parts if p)


def _subject(stmt: Any, rule: RuleSubject) -> Any:
    # An alert watches the prices a buyer is asked: trades, rented rates and floors are no subject of it
    # (tracker.market.price_kinds).
    stmt = stmt.where(Offer.gpu_id.in_(rule.gpu_ids), Offer.pricing == rule.pricing, orderable_asking(Offer))
    if rule.pricing == "reserved":  # one term only (rules.create_rule requires it): never a blend of terms
        stmt = stmt.where(Offer.reserved_term == rule.reserved_term)
    if rule.providers:
        stmt = stmt.where(Offer.provider.in_(rule.providers))
    if rule.regions:
        stmt = stmt.where(region_condition(rule.regions))
    return stmt


def _none_listed(session: Session, rule: RuleSubject, now: datetime, settings: Settings) -> Observation:
    """No live offer of a filtered rule's subject at all: an answer only if every provider that could list
    one (those the rule names, else those that ever listed its subject) was scraped successfully within
    its freshness window and listed none."""
    covering = set(rule.providers or []) or set(session.scalars(_subject(select(Offer.provider).distinct(), rule)))
    if not covering:
        return Observation(None, 0, [], no_data=f"no live offers: {_windows_text(rule, settings)}")
    failing = failing_providers(session, covering)
    if failing:
        detail = "; ".join(f"{p} {why}" for p, why in sorted(failing.items()))
        return Observation(None, 0, [], no_data=f"latest run failed: {detail}"[:1000])
    last_ok = dict(
        session.execute(
            select(ScrapeRun.provider, func.max(ScrapeRun.observed_at))
            .where(ScrapeRun.provider.in_(covering), ScrapeRun.status == "ok")
            .group_by(ScrapeRun.provider)
        ).all()
    )
    stale = sorted(p for p in covering if (at := last_ok.get(p)) is None or now - at > freshness.window(p, settings))
    if stale:
        return Observation(None, 0, [], no_data=f"no live offers: {_windows_text(rule, settings)}")
    listed_by = ", ".join(sorted(covering))
    return Observation(None, 0, [], unmatched=f"none listed ({filters_text(rule)}) by {listed_by}"[:1000])


def observe(
    session: Session, rule: RuleSubject, *, now: datetime, settings: Settings, cost_model: CostModel | None
) -> Observation:
    filters = offer_filters(rule)
    matches = case((and_(*filters), True), else_=False) if filters else true()
    labels = resales.columns()
    stmt = _subject(
        select(
            Offer.provider,
            Offer.price_per_gpu_hour,
            matches.label("matches"),
            Offer.id,
            labels["via"],
            labels["upstream"],
            Offer.gpu_id,
            Offer.gpu_count,
            Offer.pricing,
            Offer.reserved_term,
        ),
        rule,
    ).where(Offer.delisted_at.is_(None), freshness.live_condition(now, settings))
    listed = session.execute(stmt).all()
    # Health is judged on every live offer of the subject: a failing provider's listing is suspect
    # whether or not its offers pass the filters.
    failing = failing_providers(session, set(rule.providers or []) | {r[0] for r in listed})
    counted = _resales_counted(listed, rule.aggregated)
    rows = [(r[0], r[1]) for r, keep in zip(listed, counted, strict=True) if keep]
    contributing = sorted({p for p, _ in rows})
    if failing:
        detail = "; ".join(f"{p} {why}" for p, why in sorted(failing.items()))
        return Observation(None, len(rows), contributing, no_data=f"latest run failed: {detail}"[:1000])
    if not rows and filters:
        if not listed:
            return _none_listed(session, rule, now, settings)
        return Observation(
            None, 0, [], unmatched=f"none of {len(listed)} live offers passes the filters ({filters_text(rule)})"
        )
    if not rows:
        return Observation(None, 0, [], no_data=f"no live offers: {_windows_text(rule, settings)}")
    if len(rows) < rule.min_offers:
        return Observation(
            None,
            len(rows),
            contributing,
            no_data=f"{len(rows)} fresh offers, fewer than the rule's minimum {rule.min_offers}",
        )
    prices = [p for _, p in rows]
    if rule.metric in PRICE_STATISTICS:
        price = pick(prices, rule.metric)
        return Observation(price, len(rows), contributing, price=price)
    price = pick(prices, rule.price_statistic)
    if cost_model is None:
        return Observation(
            None,
            len(rows),
            contributing,
            price=price,
            no_data="cost metrics need the estimate model, which is unavailable",
        )
    try:
        value = cost_model.value(
            rule.metric, rule.job or {}, rule.gpu_ids[0], rule.job_gpus, price, pricing=rule.pricing
        )
    except CostError as exc:
        return Observation(None, len(rows), contributing, price=price, no_data=f"cost estimate failed: {exc}")
    return Observation(to_money(value), len(rows), contributing, price=price)


def _resales_counted(listed: Sequence[Any], mode: str) -> list[bool]:
    """Which of the live offers (rows of `observe`'s query) count: those passing the filters, less the
    resales `mode` drops among them (`resales.mask`, the market's rule)."""
    matched = np.fromiter((bool(r[2]) for r in listed), dtype=bool, count=len(listed))
    if mode == "include" or not len(listed):
        return [bool(m) for m in matched]

    def column(i: int, dtype: Any = object) -> Any:
        return np.array([r[i] for r in listed], dtype=dtype)

    table = {
        "provider": column(0),
        "price_per_gpu_hour_f": np.array([float(r[1]) for r in listed], dtype=np.float64),
        "id": column(3, np.int64),
        "via": column(4),
        "upstream": column(5),
        "gpu_id": column(6),
        "gpu_count_f": np.array([float(r[7]) for r in listed], dtype=np.float64),
        "pricing": column(8),
        "reserved_term": column(9),
    }
    kept: list[bool] = resales.mask(table, matched, mode).tolist()
    return kept


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

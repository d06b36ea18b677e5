"""Provider health: what each provider is, whether it can run, and how its last runs went."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, select

from providers.registry import all_providers
from tracker.clock import utcnow
from tracker.config import Settings
from tracker.market import freshness
from tracker.market.data_terms import source_terms
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, ScrapeRun, UnresolvedGpuName


def provider_status(engine: Engine, settings: Settings, now: datetime | None = None) -> list[dict[str, Any]]:
    now = now or utcnow()
    with session_scope(engine) as session:
        newest = select(func.max(ScrapeRun.id)).group_by(ScrapeRun.provider)
        last = {r.provider: r for r in session.scalars(select(ScrapeRun).where(ScrapeRun.id.in_(newest)))}
        newest_ok = select(func.max(ScrapeRun.id)).where(ScrapeRun.status == "ok").group_by(ScrapeRun.provider)
        last_ok = {r.provider: r for r in session.scalars(select(ScrapeRun).where(ScrapeRun.id.in_(newest_ok)))}
        offers = dict(
            session.execute(
                select(Offer.provider, func.count()).where(Offer.delisted_at.is_(None)).group_by(Offer.provider)
            ).all()
        )
        unknown = dict(
            session.execute(select(UnresolvedGpuName.provider, func.count()).group_by(UnresolvedGpuName.provider)).all()
        )
        rows = []
        for name, cls in all_providers().items():
            run, ok = last.get(name), last_ok.get(name)
            window = freshness.window(name, settings)
            success_at = ok.observed_at or ok.started_at if ok else None
            age_s = (now - success_at).total_seconds() if success_at else None
            rows.append(
                cls.describe()
                | {
                    "credentials_set": not settings.credentials_for(cls.credentials)[1],
                    "last_run": _run(run) if run else None,
                    "last_success_at": success_at,
                    "age_s": age_s,
                    # Stale exactly when the market stops counting this provider's prices as live.
                    "interval_s": int(freshness.scrape_interval(name, settings).total_seconds()),
                    "fresh_for_s": int(window.total_seconds()),
                    "stale": age_s is None or age_s > window.total_seconds(),
                    # Fields the parser needs that the last compared response lacked or retyped.
                    "schema_drift": _drift(run),
                    "current_offers": offers.get(name, 0),
                    "unknown_names": unknown.get(name, 0),
                    # Its data terms as read, and whether this install republishes its prices.
                    "terms": source_terms(name, settings),
                }
            )
        return rows


def _run(run: ScrapeRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "status": run.status,
        "source": run.source,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "offers_seen": run.offers_seen,
        "offers_valid": run.offers_valid,
        "price_rows": run.price_rows,
        "offers_closed": run.offers_closed,
        "unknown_names": run.unknown_names,
        "error": run.error,
        "schema_warnings": run.schema_warnings,
    }


def _drift(run: ScrapeRun | None) -> int:
    # A summary finding (tracker.pipeline.drift.summarised) stands for `count` fields.
    warnings = (run.schema_warnings or []) if run else []
    return sum(int(w.get("count", 1)) for w in warnings if w.get("change") != "new")

"""Prometheus series derived from the database, read at scrape time.

In production the worker (which scrapes providers and delivers alerts) and the API are separate
processes, so in-process counters in the API would never see a scrape. Everything here is read from
the store when Prometheus scrapes `/metrics`: a handful of grouped queries plus the cached live frame
(tracker.market.live) for prices, so a scrape costs about what one `/v1/market` request does.

A database that cannot be read yields `gpu_tracker_database_up 0` and nothing else, rather than a
failed scrape: "the database is down" is itself the signal to alert on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from tracker.clock import Clock, utcnow
from tracker.config import Settings
from tracker.market.service import market_snapshot
from tracker.ops.status import provider_status
from tracker.storage.engine import session_scope
from tracker.storage.sql import seconds_between
from tracker.storage.tables import DataVersion, ScrapeRun

log = logging.getLogger(__name__)

PREFIX = "gpu_tracker"
ALERT_STATES = ("inactive", "pending", "firing", "resolved", "no_data")
NOTIFICATION_STATUSES = ("pending", "delivered", "failed")


class DatabaseCollector(Collector):
    """Scrape runs, providers, market prices and alerts, as they stand in the database now."""

    def __init__(self, engine: Engine, settings: Settings, clock: Clock = utcnow) -> None:
        self.engine, self.settings, self.clock = engine, settings, clock

    def describe(self) -> Iterable[Metric]:
        # Registering must not query the database; an empty description skips the registry's
        # duplicate-name check for these series, which only this collector produces.
        return []

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(f"{PREFIX}_database_up", "1 if the database answered this scrape's queries")
        try:
            families = [*self._runs(), *self._providers(), *self._market(), *self._data_version()]
        except SQLAlchemyError as exc:
            log.warning("metrics: database unreadable: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families
        yield from self._alerts()

    # --------------------------------------------------------------------------------------- scrapes

    def _runs(self) -> list[Metric]:
        runs = CounterMetricFamily(
            f"{PREFIX}_scrape_runs",
            "Provider scrape runs recorded in the ledger, by outcome",
            labels=["provider", "status"],
        )
        duration = SummaryMetricFamily(
            f"{PREFIX}_scrape_duration_seconds",
            "Wall time of finished scrape runs (start to finish)",
            labels=["provider"],
        )
        seconds = seconds_between(self.engine, ScrapeRun.started_at, ScrapeRun.finished_at)
        stmt = select(
            ScrapeRun.provider,
            ScrapeRun.status,
            func.count(),
            func.count(ScrapeRun.finished_at),
            func.coalesce(func.sum(seconds), 0),
        ).group_by(ScrapeRun.provider, ScrapeRun.status)
        finished: dict[str, tuple[int, float]] = {}
        with session_scope(self.engine) as session:
            for provider, status, count, done, total in session.execute(stmt):
                runs.add_metric([provider, status], count)
                n, s = finished.get(provider, (0, 0.0))
                finished[provider] = (n + done, s + max(float(total or 0), 0.0))
        for provider, (n, s) in sorted(finished.items()):
            duration.add_metric([provider], n, s)
        return [runs, duration]

    def _providers(self) -> list[Metric]:
        offers = GaugeMetricFamily(f"{PREFIX}_offers", "Offers currently listed, by provider", labels=["provider"])
        unknown = GaugeMetricFamily(
            f"{PREFIX}_unknown_gpu_names",
            "Distinct GPU names a provider listed that the catalog cannot resolve",
            labels=["provider"],
        )
        success = GaugeMetricFamily(
            f"{PREFIX}_last_success_timestamp_seconds",
            "When the provider's last successful scrape observed prices",
            labels=["provider"],
        )
        stale = GaugeMetricFamily(
            f"{PREFIX}_provider_stale",
            "1 when a provider's last success is older than its freshness window (its prices no longer count)",
            labels=["provider"],
        )
        last = GaugeMetricFamily(
            f"{PREFIX}_scrape_last_duration_seconds",
            "Wall time of the provider's latest finished run",
            labels=["provider"],
        )
        drift = GaugeMetricFamily(
            f"{PREFIX}_provider_schema_drift_fields",
            "Fields the parser needs that the provider's latest response lacked or retyped (0: the shape held)",
            labels=["provider"],
        )
        for row in provider_status(self.engine, self.settings, self.clock()):
            name = row["name"]
            drift.add_metric([name], row["schema_drift"])
            offers.add_metric([name], row["current_offers"])
            unknown.add_metric([name], row["unknown_names"])
            stale.add_metric([name], 1 if row["stale"] else 0)
            if row["last_success_at"] is not None:
                success.add_metric([name], row["last_success_at"].timestamp())
            run = row["last_run"]
            if run and run["finished_at"] is not None:
                last.add_metric([name], max((run["finished_at"] - run["started_at"]).total_seconds(), 0.0))
        return [offers, unknown, success, stale, last, drift]

    # ---------------------------------------------------------------------------------------- market

    def _market(self) -> list[Metric]:
        labels = ["gpu", "gpu_family", "pricing"]
        low = GaugeMetricFamily(
            f"{PREFIX}_price_min_usd_per_gpu_hour", "Lowest live $/GPU-hour, per card and pricing type", labels=labels
        )
        median = GaugeMetricFamily(
            f"{PREFIX}_price_median_usd_per_gpu_hour",
            "Median live $/GPU-hour, per card and pricing type",
            labels=labels,
        )
        count = GaugeMetricFamily(f"{PREFIX}_market_offers", "Fresh offers counted in the price series", labels=labels)
        # A separate series, not a label: a card gaining its first live offer must not change the
        # identity of its price series (that would break alert rules and graphs over the change).
        reference = GaugeMetricFamily(
            f"{PREFIX}_market_reference_only",
            "1 when a card's price comes only from static reference sheets",
            labels=labels,
        )
        now = self.clock()
        with session_scope(self.engine) as session:
            cards = market_snapshot(self.engine, session, self.settings, now)["cards"]
        for card in cards:
            # The market has a row per reservation term: each term its own series ("reserved_1y"), or
            # two rows would expose one series twice.
            term = card.get("reserved_term")
            values = [card["gpu"], card["gpu_family"], card["pricing"] + (f"_{term}" if term else "")]
            low.add_metric(values, float(card["min"]))
            median.add_metric(values, float(card["median"]))
            count.add_metric(values, card["offers"])
            reference.add_metric(values, 1 if card["reference_only"] else 0)
        return [low, median, count, reference]

    def _data_version(self) -> list[Metric]:
        version = GaugeMetricFamily(f"{PREFIX}_data_version", "Bumped by every ingest that changed data")
        changed = GaugeMetricFamily(f"{PREFIX}_data_changed_timestamp_seconds", "When an ingest last changed data")
        with session_scope(self.engine) as session:
            row = session.get(DataVersion, 1)
        if row is not None:
            version.add_metric([], row.version)
            if row.changed_at is not None:
                changed.add_metric([], row.changed_at.timestamp())
        return [version, changed]

    # ---------------------------------------------------------------------------------------- alerts

    def _alerts(self) -> list[Metric]:
        """Alert rules by state and notifications by outcome; nothing when the alert tables are absent."""
        try:
            from tracker.storage.alert_tables import AlertDeliveryAttempt, AlertNotification, AlertRule
        except ImportError:  # a build without the alerts package
            return []
        rules = GaugeMetricFamily(f"{PREFIX}_alert_rules", "Alert rules by state", labels=["state"])
        notes = GaugeMetricFamily(
            f"{PREFIX}_alert_notifications", "Outbox messages by delivery outcome", labels=["status"]
        )
        attempts = CounterMetricFamily(
            f"{PREFIX}_alert_delivery_attempts", "Notification send attempts, by outcome", labels=["outcome"]
        )
        try:
            with session_scope(self.engine) as session:
                by_state = dict(session.execute(select(AlertRule.state, func.count()).group_by(AlertRule.state)).all())
                by_status = dict(
                    session.execute(
                        select(AlertNotification.status, func.count()).group_by(AlertNotification.status)
                    ).all()
                )
                by_ok = dict(
                    session.execute(
                        select(AlertDeliveryAttempt.ok, func.count()).group_by(AlertDeliveryAttempt.ok)
                    ).all()
                )
        except SQLAlchemyError as exc:  # an older schema without the alert tables
            log.info("metrics: alert tables unreadable: %s", exc)
            return []
        # Every known state is always present (0 included), so "firing > 0" rules have a series to read.
        for state in dict.fromkeys([*ALERT_STATES, *sorted(by_state)]):
            rules.add_metric([state], by_state.get(state, 0))
        for status in dict.fromkeys([*NOTIFICATION_STATUSES, *sorted(by_status)]):
            notes.add_metric([status], by_status.get(status, 0))
        attempts.add_metric(["ok"], by_ok.get(True, 0))
        attempts.add_metric(["error"], by_ok.get(False, 0))
        return [rules, notes, attempts]


__all__ = ["ALERT_STATES", "DatabaseCollector"]

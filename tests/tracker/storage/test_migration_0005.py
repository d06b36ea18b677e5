"""Migration 0005 on both backends: listed offers get their open availability row from last_seen (delisted
ones none), and a downgrade disables rules whose offer filters it would drop instead of widening them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import insert, select, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferAvailability

SEEN = datetime(2026, 11, 30, 8, 15, 30, 123456, tzinfo=UTC)


def _offer(key: str, available: bool | None, delisted: datetime | None) -> dict[str, object]:
    return {
        "provider": "vastai",
        "offer_key": key,
        "gpu_id": "H100-SXM-80GB",
        "gpu_family": "H100",
        "raw_gpu_name": "H100 SXM",
        "gpu_count": Decimal(8),
        "form_factor": "sxm",
        "pricing": "on_demand",
        "region": "us-texas",
        "available": available,
        "attributes": {},
        "demo": False,
        "first_seen": SEEN,
        "last_seen": SEEN,
        "delisted_at": delisted,
        "price_per_hour": Decimal(16),
        "price_per_gpu_hour": Decimal(2),
    }


def test_backfill_and_downgrade(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0004")
    with blank_engine.begin() as conn:
        conn.execute(
            insert(Offer), [_offer("listed", True, None), _offer("unknown", None, None), _offer("gone", True, SEEN)]
        )
    migrate.upgrade(blank_engine)
    with session_scope(blank_engine) as s:
        a = OfferAvailability
        rows = s.execute(
            select(Offer.offer_key, a.available, a.valid_from, a.valid_to)
            .join(Offer, Offer.id == a.offer_id)
            .order_by(Offer.offer_key)
        ).all()
        assert [tuple(r) for r in rows] == [("listed", True, SEEN, None), ("unknown", None, SEEN, None)]
        common = {
            "gpu_query": "H100",
            "gpu_ids": ["H100-SXM-80GB"],
            "pricing": "on_demand",
            "metric": "min",
            "condition": "below",
            "threshold": Decimal(2),
            "recovery_threshold": Decimal(2),
            "state": "inactive",
            "state_since": SEEN,
            "created_at": SEEN,
            "updated_at": SEEN,
        }
        s.add(AlertRule(name="plain", **common))
        s.add(AlertRule(name="filtered", available_only=True, min_gpus=Decimal(8), **common))
        s.add(AlertRule(name="cloud", cloud="secure", **common))
    migrate.downgrade(blank_engine, "0004")
    with blank_engine.connect() as conn:
        enabled = dict(conn.execute(text("SELECT name, enabled FROM alert_rules ORDER BY name")).all())
    assert {k: bool(v) for k, v in enabled.items()} == {"cloud": False, "filtered": False, "plain": True}
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)
    with session_scope(blank_engine) as s:
        assert [r.available_only for r in s.scalars(select(AlertRule).order_by(AlertRule.name))] == [False] * 3

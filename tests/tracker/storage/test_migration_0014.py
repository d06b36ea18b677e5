"""Migration 0014 on both backends: a reserved alert rule gets the one term its cards' reserved offers have;
one whose cards have several terms (or none) is disabled rather than left to judge a blend; other rules are
untouched, and the migration downgrades and upgrades again cleanly."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import MetaData, insert, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate

SEEN = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def _offer(key: str, gpu: str, pricing: str, term: str | None) -> dict[str, object]:
    return {
        "provider": "aws",
        "offer_key": key,
        "gpu_id": gpu,
        "gpu_family": gpu.split("-")[0],
        "raw_gpu_name": gpu,
        "gpu_count": Decimal(8),
        "form_factor": "sxm",
        "pricing": pricing,
        "reserved_term": term,
        "region": "us-east-1",
        "attributes": {},
        "demo": False,
        "first_seen": SEEN,
        "last_seen": SEEN,
        "price_per_hour": Decimal(16),
        "price_per_gpu_hour": Decimal(2),
    }


def _rule(name: str, gpu: str, pricing: str) -> dict[str, object]:
    return {
        "name": name,
        "gpu_query": gpu,
        "gpu_ids": [gpu],
        "pricing": pricing,
        "min_offers": 1,
        "metric": "min",
        "price_statistic": "min",
        "job_gpus": Decimal(1),
        "condition": "below",
        "threshold": Decimal(2),
        "recovery_threshold": Decimal(2),
        "for_s": 0,
        "enabled": True,
        "allow_immediate": False,
        "state": "inactive",
        "repeats": 0,
        "state_since": SEEN,
        "created_at": SEEN,
        "updated_at": SEEN,
        "version": 1,
    }


def test_reserved_rules_get_their_one_term_or_are_disabled(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0013")
    offers = [
        _offer("a-1y", "A100-SXM-80GB", "reserved", "1y"),
        _offer("h-1y", "H100-SXM-80GB", "reserved", "1y"),
        _offer("h-3y", "H100-SXM-80GB", "reserved", "3y"),
        _offer("h-od", "H100-SXM-80GB", "on_demand", None),
    ]
    rules = [
        _rule("one-term", "A100-SXM-80GB", "reserved"),
        _rule("blend", "H100-SXM-80GB", "reserved"),
        _rule("none", "B200-180GB", "reserved"),
        _rule("od", "H100-SXM-80GB", "on_demand"),
    ]
    # The tables as 0013 left them, read from the database: the models describe the head schema, whose later
    # columns (and their Python-side defaults) do not exist yet at this revision.
    tables = MetaData()
    tables.reflect(blank_engine, only=["offers", "alert_rules"])
    with blank_engine.begin() as conn:
        conn.execute(insert(tables.tables["offers"]), offers)
        conn.execute(insert(tables.tables["alert_rules"]), rules)
    migrate.upgrade(blank_engine)
    with blank_engine.connect() as conn:
        rows = conn.execute(text("SELECT name, reserved_term, enabled FROM alert_rules")).all()
    got = {n: (t, bool(e)) for n, t, e in rows}
    assert got == {"one-term": ("1y", True), "blend": (None, False), "none": (None, False), "od": (None, True)}
    migrate.downgrade(blank_engine, "0013")
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)

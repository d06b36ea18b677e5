"""Migration 0017 on both backends: existing rules become `offers` rules untouched, a plan rule with its mix
and a metric name longer than 16 characters can be stored (Postgres widens the column), the downgrade
drops plan rules with the columns, and the schema matches the models again after upgrading back."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import MetaData, insert, inspect, text

from tests.tracker.storage.test_migrations import blank_engine  # noqa: F401  (the fixture)
from tracker.storage import migrations as migrate

SEEN = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
MIX = {"workloads": [{"name": "ft", "kind": "fine-tune", "volume": {"runs_per_month": 3}, "job": {"model": "x"}}]}


def _rule(name: str, **kw: object) -> dict[str, object]:
    return {
        "name": name,
        "gpu_query": "H100",
        "gpu_ids": ["H100-SXM-80GB"],
        "pricing": "on_demand",
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
    } | kw


def _tables(engine) -> MetaData:
    # The tables as the database has them at its revision, never the head models.
    tables = MetaData()
    tables.reflect(engine, only=["alert_rules"])
    return tables


def test_plan_rules_columns_upgrade_and_downgrade(blank_engine):  # noqa: F811
    migrate.upgrade(blank_engine, "0016")
    with blank_engine.begin() as conn:
        conn.execute(insert(_tables(blank_engine).tables["alert_rules"]), [_rule("old")])
    migrate.upgrade(blank_engine, "0017")
    columns = {c["name"] for c in inspect(blank_engine).get_columns("alert_rules")}
    assert {"subject", "plan_mix", "last_best_card"} <= columns
    with blank_engine.begin() as conn:
        assert conn.execute(text("SELECT subject, plan_mix FROM alert_rules WHERE name = 'old'")).one() == (
            "offers",
            None,
        )
        plan = _rule(
            "plan",
            subject="plan",
            plan_mix=MIX,
            gpu_query="plan",
            gpu_ids=[],
            pricing="plan",
            metric="plan_monthly_cost",  # 17 characters: past the VARCHAR(16) before 0017 (on Postgres)
            last_best_card="A100-SXM-80GB",
        )
        conn.execute(insert(_tables(blank_engine).tables["alert_rules"]), [plan])
        stored = conn.execute(text("SELECT metric, last_best_card FROM alert_rules WHERE name = 'plan'")).one()
    assert tuple(stored) == ("plan_monthly_cost", "A100-SXM-80GB")
    # (the models are checked at head below: they are the newest revision's, not 0017's)
    migrate.downgrade(blank_engine, "0016")
    columns = {c["name"] for c in inspect(blank_engine).get_columns("alert_rules")}
    assert not {"subject", "plan_mix", "last_best_card"} & columns
    with blank_engine.connect() as conn:
        assert [r[0] for r in conn.execute(text("SELECT name FROM alert_rules"))] == ["old"]
    migrate.upgrade(blank_engine)
    migrate.check(blank_engine)

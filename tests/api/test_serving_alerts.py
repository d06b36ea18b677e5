"""Alert rules on serving $/Mtok: a saved inference job is priced by the serving model, refused by name
when its precision or memory does not suit the rule's card."""

from __future__ import annotations

import pytest

from tests.factories.alerts import add_rule, ingest_prices, offer
from tracker.alerts.evaluate import evaluate_rules
from tracker.alerts.job_cost import default_cost_model
from tracker.alerts.rules import RuleError
from tracker.catalog.gpus import get_catalog
from tracker.estimate.serving import make_serving_job, prepare_serving
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

JOB = {"kind": "inference", "model": "llama-3.1-8b", "precision": "fp8", "concurrency": 32}


def test_serving_usd_per_mtok_rule_fires_on_the_serving_figure(engine, settings, clock) -> None:
    model = default_cost_model()
    ingest_prices(engine, settings, clock(), offer("a", "2.50"))
    expected = (
        prepare_serving(make_serving_job("llama-3.1-8b", precision="fp8", concurrency=32))
        .on(get_catalog().get("H100-SXM-80GB"), 1, price_per_gpu_hour="2.50")
        .usd_per_mtok
    )
    assert expected is not None
    rule = add_rule(
        engine,
        settings,
        clock(),
        metric="usd_per_mtok",
        threshold=str(expected * 2),
        job=JOB,
        cost_model=model,
        for_="0",
        allow_immediate=True,
    )
    evaluate_rules(engine, settings, now=clock(), cost_model=model)
    with session_scope(engine) as s:
        r = s.get_one(AlertRule, rule)
        assert r.last_value == expected
        assert r.state in ("firing", "pending")


def test_serving_rule_refuses_fp8_on_ampere_and_a_job_that_does_not_fit(engine, settings, clock) -> None:
    model = default_cost_model()
    with pytest.raises(RuleError) as exc:
        add_rule(
            engine,
            settings,
            clock(),
            gpu="A100-SXM-80GB",
            metric="usd_per_mtok",
            threshold="1",
            job=JOB,
            cost_model=model,
        )
    assert exc.value.field == "job_gpus" and "fp8" in str(exc.value)
    big = JOB | {"model": "llama-3.1-70b", "concurrency": 256}
    with pytest.raises(RuleError) as exc:
        add_rule(engine, settings, clock(), metric="usd_per_mtok", threshold="1", job=big, cost_model=model)
    assert exc.value.field == "job_gpus"
    with pytest.raises(RuleError) as exc:
        add_rule(
            engine, settings, clock(), metric="usd_per_mtok", threshold="1", job=JOB | {"rank": 8}, cost_model=model
        )
    assert exc.value.field == "job.rank"


def test_a_spot_serving_rule_prices_the_uptime_the_ranking_does() -> None:
    """A spot rule's $/Mtok counts the hours a replica is down after interruptions (tracker.costs.serving),
    under the default spot terms a card's statistic is priced with; on-demand is the estimate's own figure."""
    from decimal import Decimal

    from tracker.costs import resolve
    from tracker.costs.serving import offer_uptime

    model = default_cost_model()
    card = get_catalog().get("H100-SXM-80GB")
    est = prepare_serving(make_serving_job("llama-3.1-8b", precision="fp8", concurrency=32)).on(
        card, 1, price_per_gpu_hour="2.50"
    )
    assert est.usd_per_mtok is not None
    on_demand = model.value("usd_per_mtok", JOB, "H100-SXM-80GB", Decimal(1), Decimal("2.50"), "on_demand")
    spot = model.value("usd_per_mtok", JOB, "H100-SXM-80GB", Decimal(1), Decimal("2.50"), "spot")
    assert on_demand == est.usd_per_mtok
    share = offer_uptime(resolve("", "spot"), est.prepared.weight_bytes(1) / 1e9, est.request_seconds)
    assert 0.9 < share < 1.0
    assert spot > on_demand
    assert float(spot) == pytest.approx(float(on_demand) / share, rel=1e-5)

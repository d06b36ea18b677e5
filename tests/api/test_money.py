"""One money rule: the same job, card and price cost the same figure, rounded the same way, in
/v1/estimate, /v1/rank, /v1/rank/history and an alert's value."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.factories.alerts import add_rule
from tests.factories.api import seeded_client
from tracker import money
from tracker.alerts.job_cost import default_cost_model
from tracker.alerts.observe import observe
from tracker.clock import utcnow
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

H100 = "H100-SXM-80GB"
PRICE = "2.69"  # the reference sheet's H100 SXM on-demand $/GPU-hour
JOB = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}


@pytest.fixture
def client(engine, settings):
    with seeded_client(engine, settings, vast=False) as c:
        yield c


def _six_places(value: float) -> bool:
    return Decimal(repr(value)) == Decimal(repr(value)).quantize(money.QUANTUM)


def test_cost_per_run_and_usd_per_mtok_agree_everywhere(client, engine, settings):
    est = client.post("/v1/estimate", json=JOB | {"gpu": H100, "price": PRICE}).json()
    (estimate,) = est["rows"]
    ranked = client.post("/v1/rank", json=JOB | {"gpu": H100, "providers": ["reference"]}).json()["rows"]
    (row,) = [r for r in ranked if r["gpus"] == 1]
    history = client.post("/v1/rank/history", json=JOB | {"gpu": H100, "days": 1}).json()
    assert "series" in history, history
    (series,) = [s for s in history["series"] if s["gpu"] == H100]
    point = series["points"][-1]
    assert Decimal(repr(point["price_per_gpu_hour"])) == Decimal(PRICE)

    rule = add_rule(
        engine,
        settings,
        utcnow(),
        threshold="1000",
        condition="above",
        metric="cost_per_run",
        job=JOB,
        providers=["reference"],
        cost_model=default_cost_model(),
    )
    with session_scope(engine) as s:
        alert = observe(s, s.get_one(AlertRule, rule), now=utcnow(), settings=settings, cost_model=default_cost_model())
    assert alert.ok

    hours = estimate["hours"]
    assert row["hours"] == pytest.approx(hours, rel=1e-3)
    # GPU time alone is the estimate's figure; the whole run (tracker.costs, default terms for a reference
    # sheet and for a card's statistic) is the same in the ranking, its history and an alert.
    gpu = {
        "estimate": estimate["cost_per_run"],
        "rank": row["gpu_cost_per_run"],
        "rank_history": point["gpu_cost_per_run"],
    }
    assert alert.value is not None  # an observed rule has a value
    whole = {"rank": row["cost_per_run"], "rank_history": point["cost_per_run"], "alert": float(alert.value)}
    for figures in (gpu, whole):
        assert len(set(figures.values())) == 1, figures
        assert all(_six_places(v) for v in figures.values()), figures
    assert whole["rank"] > gpu["rank"]
    assert estimate["usd_per_mtok"] == row["usd_per_mtok"]
    assert _six_places(row["usd_per_mtok"])


def test_the_rule_rounds_once_half_even_at_six_places():
    assert money.to_money(Decimal("2.5805675")) == Decimal("2.580568")  # 7 is odd: up
    assert money.to_money(Decimal("2.5805665")) == Decimal("2.580566")  # 6 is even: stays
    assert money.to_money(0.1 + 0.2) == Decimal("0.300000")  # float noise never reaches the figure
    assert money.cost(Decimal("2.69"), 0.5) == Decimal("1.345000")
    assert money.per_million_tokens(Decimal("3.60"), 1000.0) == Decimal("1.000000")  # 3.6 M tokens/h


@pytest.mark.parametrize("bad", ["abc", "-1", "NaN", "inf", True, ""])
def test_amounts_are_parsed_by_one_rule(bad):
    with pytest.raises(ValueError, match="amount in dollars"):
        money.parse_amount(bad)
    assert money.parse_amount(" $2.50 ") == Decimal("2.50")


def test_a_spot_rule_costs_the_run_as_the_spot_history_does(engine, settings):
    # A spot run's whole cost carries the default spot interruption rate (tracker.costs.terms); an alert
    # on spot prices must price it so too, not with the on-demand terms.
    with seeded_client(engine, settings) as c:
        spot = [
            r
            for r in c.post("/v1/rank", json=JOB | {"pricing": ["spot"], "limit": 1000}).json()["rows"]
            if r["fits"] and r["gpus"] == 1
        ]
        gpu = spot[0]["gpu"]
        history = c.post("/v1/rank/history", json=JOB | {"gpu": gpu, "pricing": "spot", "days": 1}).json()
    (series,) = [s for s in history["series"] if s["gpu"] == gpu]
    point = series["points"][-1]
    rule = add_rule(
        engine,
        settings,
        utcnow(),
        threshold="1000",
        condition="above",
        metric="cost_per_run",
        job=JOB,
        gpu=gpu,
        pricing="spot",
        job_gpus=series["gpus"],
        price_statistic="median",
        cost_model=default_cost_model(),
    )
    with session_scope(engine) as s:
        alert = observe(s, s.get_one(AlertRule, rule), now=utcnow(), settings=settings, cost_model=default_cost_model())
    assert alert.ok and alert.price == Decimal(repr(point["price_per_gpu_hour"]))
    assert point["cost_per_run"] > point["gpu_cost_per_run"]
    assert alert.value is not None
    assert float(alert.value) == point["cost_per_run"]

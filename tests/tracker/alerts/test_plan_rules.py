"""Alert rules on a saved plan, on SQLite and Postgres: the workload mix is re-planned over the live offers on
each ingest; a monthly-cost rule fires once when a re-price takes the plan below its threshold, a best-card
rule fires when the plan's best single card type changes, and a bad mix is refused naming the field, with
nothing stored."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.factories.alerts import Receiver, ingest_prices, local, offer, outbox_count, rule_state, transitions, webhook
from tracker.alerts.evaluate import evaluate_after_ingest
from tracker.alerts.outbox import message_text
from tracker.alerts.rules import RuleError, RuleInput, create_rule, rule_dict, update_rule
from tracker.clock import utcnow
from tracker.plan.mix import validate_mix
from tracker.plan.service import options_for, plan_live
from tracker.storage.alert_tables import AlertEvent, AlertNotification, AlertRule
from tracker.storage.engine import session_scope

A100, H100 = "A100-SXM-80GB", "H100-SXM-80GB"
MIX: dict[str, Any] = {
    "workloads": [
        {
            "name": "ft",
            "kind": "fine-tune",
            "volume": {"runs_per_month": 3},
            "job": {"model": "llama-3.1-8b", "tokens": "10M"},
            "constraints": {"pricing": ["on_demand"]},
        }
    ]
}


@pytest.fixture
def settings(settings):
    return local(settings)


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def _market(engine, settings, at, a100: str, h100: str) -> None:
    ingest_prices(engine, settings, at, offer("a", a100, gpu=A100), offer("h", h100, gpu=H100))


def _plan(engine, settings, at) -> dict[str, Any]:
    """What `gpu-tracker plan` answers for MIX at `at` (the same defaults the rule uses)."""
    mix = validate_mix(MIX)
    with session_scope(engine) as session:
        return plan_live(engine, session, settings, at, mix, options_for(mix))


def _add(engine, settings, at, **kw: Any) -> int:
    kw = {"condition": None, "threshold": None} | kw
    with session_scope(engine) as session:
        return create_rule(session, RuleInput(gpu=None, **kw), now=at, settings=settings, cost_model=None).id


def _shown(engine, rule_id: int) -> dict[str, Any]:
    with session_scope(engine) as session:
        return rule_dict(session.get_one(AlertRule, rule_id))


def test_a_monthly_cost_rule_fires_once_when_a_reprice_lowers_the_plan(engine, settings, receiver):
    start = utcnow() - timedelta(minutes=30)
    _market(engine, settings, start, "2.00", "9.00")
    before = _plan(engine, settings, start)["fleet"]["monthly_cost"]
    threshold = (before * Decimal("0.8")).quantize(Decimal("0.01"))
    rule_id = _add(
        engine,
        settings,
        start,
        plan=MIX,
        metric="plan_monthly_cost",
        condition="below",
        threshold=str(threshold),
        channels=webhook(receiver),
    )
    shown = _shown(engine, rule_id)
    assert shown["subject"] == "plan" and shown["last_value"] == before
    assert validate_mix(shown["plan"]) == validate_mix(MIX)  # the stored document is the mix

    # Same prices again: no breach, no event.
    again = start + timedelta(minutes=5)
    _market(engine, settings, again, "2.00", "9.00")
    evaluate_after_ingest(engine, settings, "vastai", again)
    assert rule_state(engine, rule_id) == "inactive" and transitions(engine, rule_id) == []

    # The A100 re-priced to half: the plan costs about half, under the threshold.
    cheaper = start + timedelta(minutes=10)
    _market(engine, settings, cheaper, "1.00", "9.00")
    report = evaluate_after_ingest(engine, settings, "vastai", cheaper)
    after = _plan(engine, settings, cheaper)["fleet"]["monthly_cost"]
    assert after < threshold
    assert rule_state(engine, rule_id) == "firing" and report.notifications == 1
    assert _shown(engine, rule_id)["last_value"] == after

    # Still cheap at the next ingest: firing, and no second message.
    later = start + timedelta(minutes=15)
    _market(engine, settings, later, "1.00", "9.00")
    evaluate_after_ingest(engine, settings, "vastai", later)
    assert transitions(engine, rule_id) == [("inactive", "firing")]
    assert outbox_count(engine, kind="firing") == 1
    with session_scope(engine) as session:
        payload = session.scalars(select(AlertNotification.payload)).one()
    assert payload["data"]["rule"]["subject"] == "plan" and payload["data"]["best_card"] == A100
    _, body = message_text(payload)
    assert "plan_monthly_cost of the saved plan" in body and "$ per month" in body


def test_a_plan_rule_that_would_fire_at_once_is_refused(engine, settings):
    now = utcnow() - timedelta(minutes=1)
    _market(engine, settings, now, "2.00", "9.00")
    cost = _plan(engine, settings, now)["fleet"]["monthly_cost"]
    with pytest.raises(RuleError) as err:
        _add(engine, settings, now, plan=MIX, metric="plan_monthly_cost", condition="above", threshold=str(cost / 2))
    assert err.value.field == "threshold" and "monthly cost" in str(err.value)


def test_the_best_card_rule_fires_when_the_best_single_card_changes(engine, settings, receiver):
    start = utcnow() - timedelta(minutes=30)
    _market(engine, settings, start, "1.00", "9.00")
    assert _plan(engine, settings, start)["single_card"]["best"]["gpu"] == A100
    rule_id = _add(engine, settings, start, plan=MIX, metric="plan_best_card", channels=webhook(receiver))
    shown = _shown(engine, rule_id)
    assert (shown["best_card"], shown["condition"]) == (A100, "changes")

    # A re-price that keeps the A100 best: nothing.
    t1 = start + timedelta(minutes=5)
    _market(engine, settings, t1, "1.10", "9.00")
    evaluate_after_ingest(engine, settings, "vastai", t1)
    assert transitions(engine, rule_id) == []

    # The H100 drops far below: it becomes the best single card, and the rule fires once.
    t2 = start + timedelta(minutes=10)
    _market(engine, settings, t2, "1.10", "0.50")
    assert _plan(engine, settings, t2)["single_card"]["best"]["gpu"] == H100
    evaluate_after_ingest(engine, settings, "vastai", t2)
    t3 = start + timedelta(minutes=15)
    _market(engine, settings, t3, "1.10", "0.50")
    evaluate_after_ingest(engine, settings, "vastai", t3)
    assert transitions(engine, rule_id) == [("inactive", "firing")]
    assert _shown(engine, rule_id)["best_card"] == H100
    assert outbox_count(engine, kind="firing") == 1

    # Back to the A100: a change again, a second message (a new episode).
    t4 = start + timedelta(minutes=20)
    _market(engine, settings, t4, "1.10", "9.00")
    evaluate_after_ingest(engine, settings, "vastai", t4)
    assert transitions(engine, rule_id) == [("inactive", "firing"), ("firing", "firing")]
    assert outbox_count(engine, kind="firing") == 2
    assert _shown(engine, rule_id)["best_card"] == A100


def test_a_best_card_change_must_hold_for_the_pending_period(engine, settings):
    start = utcnow() - timedelta(hours=2)
    _market(engine, settings, start, "1.00", "9.00")
    rule_id = _add(engine, settings, start, plan=MIX, metric="plan_best_card", for_="30m")
    t1 = start + timedelta(minutes=10)
    _market(engine, settings, t1, "1.00", "0.50")
    evaluate_after_ingest(engine, settings, "vastai", t1)
    assert rule_state(engine, rule_id) == "pending"
    t2 = start + timedelta(minutes=20)  # back before the 30 minutes: no change after all
    _market(engine, settings, t2, "1.00", "9.00")
    evaluate_after_ingest(engine, settings, "vastai", t2)
    assert rule_state(engine, rule_id) == "inactive" and _shown(engine, rule_id)["best_card"] == A100
    for minutes in (30, 50, 65):
        at = start + timedelta(minutes=minutes)
        _market(engine, settings, at, "1.00", "0.50")
        evaluate_after_ingest(engine, settings, "vastai", at)
    assert transitions(engine, rule_id)[-2:] == [("inactive", "pending"), ("pending", "firing")]
    assert _shown(engine, rule_id)["best_card"] == H100


def test_a_plan_that_cannot_place_a_workload_is_no_data(engine, settings):
    start = utcnow() - timedelta(minutes=30)
    _market(engine, settings, start, "1.00", "9.00")
    rule_id = _add(engine, settings, start, plan=MIX, metric="plan_monthly_cost", condition="below", threshold="1")
    # A week on: every offer is past its freshness window, so nothing places the workload.
    late = start + timedelta(days=7)
    evaluate_after_ingest(engine, settings, "vastai", late)
    assert rule_state(engine, rule_id) == "no_data"
    with session_scope(engine) as session:
        rule = session.get_one(AlertRule, rule_id)
        reason = session.scalars(select(AlertEvent.reason).where(AlertEvent.rule_id == rule_id)).one()
        assert rule.last_value is not None  # the last real value is kept
    assert reason.startswith("the plan cannot place ft")


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"plan": {"workloads": []}}, "plan.workloads"),
        (
            {"plan": {"workloads": [{**MIX["workloads"][0], "job": {"model": "no-such-model", "tokens": "1M"}}]}},
            "plan.workloads[0].job.model",
        ),
        ({"plan": {"workloads": [{**MIX["workloads"][0], "volume": {}}]}}, "plan.workloads[0].volume"),
        ({"plan": "workloads: [unclosed"}, "plan.mix"),
        ({"plan": MIX, "metric": "min"}, "metric"),
        ({"plan": None}, "plan"),
        ({"plan": MIX, "providers": ["vastai"]}, "providers"),
        ({"plan": MIX, "threshold": None}, "threshold"),
    ],
)
def test_a_bad_plan_rule_is_refused_naming_the_field_and_nothing_is_stored(engine, settings, kw, field):
    values: dict[str, Any] = {"metric": "plan_monthly_cost", "condition": "below", "threshold": "100"} | kw
    with pytest.raises(RuleError) as err:
        _add(engine, settings, utcnow(), **values)
    assert err.value.field == field, str(err.value)
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(AlertRule)) == 0


def test_a_best_card_rule_takes_no_threshold(engine, settings):
    now = utcnow() - timedelta(minutes=1)
    _market(engine, settings, now, "1.00", "9.00")
    with pytest.raises(RuleError) as err:
        _add(engine, settings, now, plan=MIX, metric="plan_best_card", threshold="5")
    assert err.value.field == "threshold"
    rule_id = _add(engine, settings, now, plan=MIX, metric="plan_best_card")
    with session_scope(engine) as session, pytest.raises(RuleError) as err:
        update_rule(session, session.get_one(AlertRule, rule_id), {"threshold": "5"}, now=now, settings=settings)
    assert err.value.field == "threshold"

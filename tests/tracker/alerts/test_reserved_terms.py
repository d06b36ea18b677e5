"""An alert on reserved prices watches one term: a rule on 3-year prices is judged on 3-year offers only,
never on a blend with 1-day ones; a reserved rule without a term (or with an unreadable one) is refused,
naming the field."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from providers.contract import Pricing
from tests.factories.alerts import add_rule, ingest_prices, local, offer
from tracker.alerts.observe import observe
from tracker.alerts.rules import RuleError, rule_dict
from tracker.clock import utcnow
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope


@pytest.fixture
def settings(settings):
    return local(settings)


def _prices(engine, settings, at):
    ingest_prices(
        engine,
        settings,
        at,
        offer("od", "3.00"),
        offer("d1", "1.50", pricing=Pricing.reserved, reserved_term="1d"),
        offer("y3", "2.00", pricing=Pricing.reserved, reserved_term="3y"),
        offer("y3b", "2.40", pricing=Pricing.reserved, reserved_term="3-year"),
        provider="aws",
    )


def _observed(engine, settings, at, rule_id):
    with session_scope(engine) as s:
        rule = s.get_one(AlertRule, rule_id)
        obs = observe(s, rule, now=at, settings=settings, cost_model=None)
        return obs.value, obs.offers, rule_dict(rule)


def test_a_reserved_rule_watches_its_term_only(engine, settings):
    now = utcnow()
    _prices(engine, settings, now - timedelta(minutes=1))
    three = add_rule(engine, settings, now, pricing="reserved", reserved_term="36mo", threshold="1.00")
    one = add_rule(engine, settings, now, pricing="reserved", reserved_term="1d", threshold="1.00")
    value, offers, shown = _observed(engine, settings, now, three)
    assert (value, offers) == (Decimal("2.000000"), 2)  # a blend's minimum would be the 1-day $1.50
    assert shown["reserved_term"] == "3y" and "3y" in shown["name"]
    value, offers, _ = _observed(engine, settings, now, one)
    assert (value, offers) == (Decimal("1.500000"), 1)


@pytest.mark.parametrize(("pricing", "term"), [("reserved", None), ("reserved", "someday"), ("on_demand", "1y")])
def test_a_term_is_required_for_reserved_rules_and_refused_for_others(engine, settings, pricing, term):
    with pytest.raises(RuleError) as err:
        add_rule(engine, settings, utcnow(), pricing=pricing, reserved_term=term, threshold="1.00")
    assert err.value.field == "reserved_term"

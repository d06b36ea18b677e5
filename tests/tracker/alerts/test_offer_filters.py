"""Alert rules with offer filters, on SQLite and Postgres: "8×H100 available in the EU under $2.50" fires
once when such an offer becomes available and resolves when it goes (unavailable, or gone from a fresh
listing); a stale or failing provider is no_data, never a resolution; quality filters choose the offers;
bad filters are refused naming the field; the API body and the CLI take them."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from providers.contract import PriceKind
from tests.factories.alerts import (
    Receiver,
    add_rule,
    failed_run,
    ingest_prices,
    local,
    offer,
    rule_state,
    transitions,
    webhook,
)
from tracker.alerts.deliver import Deliverer
from tracker.alerts.evaluate import evaluate_after_ingest, evaluate_rules
from tracker.alerts.rules import RuleError
from tracker.clock import utcnow
from tracker.storage.alert_tables import AlertEvent, AlertRule
from tracker.storage.engine import session_scope

# RuleInput offer-filter fields, passed on as keywords (add_rule takes **Any).
EU_8X: dict[str, Any] = {"available_only": True, "min_gpus": 8, "regions": ["eu"]}


@pytest.fixture
def settings(settings):
    return local(settings)


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def scrape(engine, settings, clock, *, x1: bool | None, x2: bool = True, eu: bool = True, provider="runpod"):
    """One RunPod-like scrape: x1 (8×H100 EU at $2.25/GPU-h, available `x1`; None: not listed), x2 (8×H100 EU
    at $3.00, available), a cheaper 8×H100 in the US and a 1×H100 in the EU (outside the filters)."""
    offers = [offer("us-8x", "16.00", count=8, region="us-tx-3", available=True)]
    # More US offers, so that the EU ones leaving is not an offer-count collapse (quarantined).
    offers += [offer(f"us-{i}", f"2.{i}0", region="us-tx-3", available=True) for i in range(4)]
    if eu:
        offers.append(offer("eu-1x", "2.00", region="eu-ro-1", available=True))
        offers.append(offer("x2", "24.00", count=8, region="eu-ro-1", available=x2))
    if x1 is not None:
        offers.append(offer("x1", "18.00", count=8, region="eu-se-1", available=x1))
    assert ingest_prices(engine, settings, clock(), *offers, provider=provider).status == "ok"
    return evaluate_after_ingest(engine, settings, provider, clock())


def last_value(engine, rule_id):
    with session_scope(engine) as s:
        return s.get_one(AlertRule, rule_id).last_value


def test_available_8x_h100_in_the_eu_under_250_fires_once_and_resolves_when_it_goes(engine, settings, clock, receiver):
    scrape(engine, settings, clock, x1=False)
    rule = add_rule(engine, settings, clock(), gpu="H100", threshold="2.50", **EU_8X, channels=webhook(receiver))
    assert last_value(engine, rule) == Decimal("3.000000")  # x2: the only available 8× EU offer
    deliverer = Deliverer(engine, settings, clock=clock)

    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=True)  # x1 becomes available at $2.25
    assert rule_state(engine, rule) == "firing"
    for _ in range(3):  # still available: no new event, no new message
        clock.advance(minutes=10)
        scrape(engine, settings, clock, x1=True)
        evaluate_rules(engine, settings, now=clock())
    assert deliverer.deliver_due() == {"delivered": 1}

    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=False)  # rented: unavailable again → the cheapest matching is $3.00
    assert rule_state(engine, rule) == "resolved"
    deliverer.deliver_due()
    assert receiver.kinds() == ["firing", "resolved"]
    assert transitions(engine, rule) == [("inactive", "firing"), ("firing", "resolved")]
    firing = receiver.requests[0].json["data"]
    assert (firing["value"], firing["rule"]["filters"]) == ("2.250000", "available, ≥ 8 GPUs")


def test_resolves_when_no_matching_offer_is_left(engine, settings, clock):
    scrape(engine, settings, clock, x1=False, x2=False)
    rule = add_rule(engine, settings, clock(), gpu="H100", threshold="2.50", **EU_8X)
    assert rule_state(engine, rule) == "inactive" and last_value(engine, rule) is None  # nothing matches yet

    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=True, x2=False)
    assert rule_state(engine, rule) == "firing"

    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=False, x2=False)  # live EU offers, none available with 8 GPUs
    assert rule_state(engine, rule) == "resolved" and last_value(engine, rule) is None
    with session_scope(engine) as s:
        event = s.query(AlertEvent).filter_by(rule_id=rule, to_state="resolved").one()
        assert event.value is None and "no matching offer" in event.reason

    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=True, x2=False)
    clock.advance(minutes=10)
    # Gone from a fresh, successful listing, and no other EU offer at all: still an answer.
    scrape(engine, settings, clock, x1=None, eu=False)
    assert rule_state(engine, rule) == "resolved"
    assert transitions(engine, rule)[-2:] == [("resolved", "firing"), ("firing", "resolved")]


def test_a_stale_or_failing_provider_is_no_data_not_a_resolution(engine, settings, clock):
    scrape(engine, settings, clock, x1=True)
    rule = add_rule(
        engine, settings, clock(), gpu="H100", threshold="2.50", providers=["runpod"], **EU_8X, allow_immediate=True
    )
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "firing"
    clock.advance(minutes=10)
    failed_run(engine, "runpod", clock())
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "no_data"
    clock.advance(minutes=10)
    scrape(engine, settings, clock, x1=True)
    assert rule_state(engine, rule) == "firing"  # the interrupted state is back

    clock.advance(hours=7)  # no scrape for longer than the freshness window: nothing live, nothing known
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "no_data"
    assert transitions(engine, rule)[-1] == ("firing", "no_data")


def test_quality_filters_choose_the_offers(engine, settings, clock):
    ingest_prices(
        engine,
        settings,
        clock(),
        offer(
            "cheap-host", "1.50", attributes={"verification": "unverified", "hosting": "consumer", "reliability": 0.80}
        ),
        offer(
            "good-host", "2.10", attributes={"verification": "verified", "hosting": "datacenter", "reliability": 0.995}
        ),
        offer("no-word", "1.60"),
    )
    verified = add_rule(engine, settings, clock(), threshold="2.00", verified_only=True)
    reliable = add_rule(engine, settings, clock(), threshold="2.00", min_reliability="0.99", datacenter_only=True)
    plain = add_rule(engine, settings, clock(), threshold="1.00")
    assert last_value(engine, verified) == last_value(engine, reliable) == Decimal("2.100000")
    assert last_value(engine, plain) == Decimal("1.500000")
    with session_scope(engine) as s:
        rule = s.get_one(AlertRule, reliable)
        assert (rule.min_reliability, rule.datacenter_only, rule.verified_only) == (Decimal("0.9900"), True, False)
    clock.advance(minutes=10)
    ingest_prices(
        engine,
        settings,
        clock(),
        offer("cheap-host", "1.50", attributes={"verification": "verified", "hosting": "consumer", "reliability": 0.8}),
        offer(
            "good-host", "2.10", attributes={"verification": "verified", "hosting": "datacenter", "reliability": 0.995}
        ),
        offer("no-word", "1.60"),
    )
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, verified) == "firing"  # the host got verified: $1.50 now counts
    assert rule_state(engine, reliable) == "inactive"


def test_an_above_rule_with_nothing_matching_would_fire_at_once(engine, settings, clock):
    scrape(engine, settings, clock, x1=False, x2=False)
    with pytest.raises(RuleError, match="no matching offer") as info:
        add_rule(engine, settings, clock(), gpu="H100", condition="above", threshold="3.00", **EU_8X)
    assert info.value.field == "threshold"
    rule = add_rule(
        engine, settings, clock(), gpu="H100", condition="above", threshold="3.00", **EU_8X, allow_immediate=True
    )
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "firing"  # nothing to rent at any price is above any threshold


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"cloud": "private"}, "cloud"),
        ({"min_reliability": "1.5"}, "min_reliability"),
        ({"min_reliability": "abc"}, "min_reliability"),
        ({"min_gpus": 0}, "min_gpus"),
        ({"min_gpus": "0.0001"}, "min_gpus"),  # rounds to 0 GPUs: refused, not stored as "any"
        ({"min_gpus": 2000}, "min_gpus"),
        ({"available_only": "yes"}, "available_only"),
        ({"verified_only": 1}, "verified_only"),
    ],
)
def test_bad_filters_name_the_field(engine, settings, clock, kw, field):
    with pytest.raises(RuleError) as info:
        add_rule(engine, settings, clock(), threshold="2.00", **kw)
    assert info.value.field == field


TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_api_body(engine, settings):
    from api.app import create_app

    app = create_app(settings.model_copy(update={"api_token": SecretStr(TOKEN)}), engine)
    with TestClient(app) as client:
        body = {
            "gpu": "H100",
            "condition": "below",
            "threshold": "2.50",
            "available_only": True,
            "min_gpus": 8,
            "regions": ["eu"],
            "verified_only": True,
            "datacenter_only": True,
            "min_reliability": 0.98,
            "cloud": "secure",
        }
        created = client.post("/v1/alerts", json=body, headers=AUTH)
        assert created.status_code == 201, created.text
        rule = created.json()
        assert (rule["available_only"], rule["min_gpus"], rule["regions"], rule["cloud"]) == (True, 8, ["eu"], "secure")
        assert (rule["verified_only"], rule["datacenter_only"], rule["min_reliability"]) == (True, True, 0.98)
        bad = client.post("/v1/alerts", json=body | {"cloud": "private"}, headers=AUTH)
        assert bad.status_code == 422
        assert client.post("/v1/alerts", json=body | {"min_reliability": 2}, headers=AUTH).status_code == 422
        # Filters are the rule's subject: changing them means a new rule.
        patched = client.patch(f"/v1/alerts/{rule['id']}", json={"min_gpus": 4}, headers=AUTH)
        assert patched.status_code == 422


def test_cli_add(cli, engine, settings):
    now = utcnow()
    ingest_prices(
        engine,
        settings,
        now,
        offer("x", "24.00", count=8, region="eu-ro-1", available=True),
        offer("y", "2.00", region="us-tx-3", available=True),
        provider="runpod",
    )
    out = cli(
        "alerts",
        "add",
        "--gpu",
        "H100",
        "--below",
        "2.50",
        "--available",
        "--min-gpus",
        "8",
        "--region",
        "eu",
        "--json",
    )
    assert out.exit_code == 0, out.output
    rule = json.loads(out.output)
    assert (rule["available_only"], rule["min_gpus"], rule["regions"], rule["last_value"]) == (True, 8, ["eu"], 3)
    bad = cli("alerts", "add", "--gpu", "H100", "--below", "2.50", "--cloud", "private")
    assert bad.exit_code == 2 and "cloud" in bad.output
    assert timedelta(0) <= utcnow() - now


def test_a_rented_rate_or_a_floor_never_fires_a_price_alert(engine, settings, clock):
    """A machine rented at $1.00 or a "from $0.90" is no price a buyer is asked (tracker.market.price_kinds)."""
    asking = offer("ask", "3.00", available=True)
    rented = offer("rented", "1.00", available=False, price_kind=PriceKind.transacted, orderable=False)
    floor = offer("from", "0.90", available=True, price_kind=PriceKind.floor, orderable=False)
    assert ingest_prices(engine, settings, clock(), asking, rented, floor).status == "ok"
    rule = add_rule(engine, settings, clock(), gpu="H100", threshold="2.50")
    assert rule_state(engine, rule) == "inactive" and last_value(engine, rule) == Decimal("3.000000")

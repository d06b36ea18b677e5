"""Alerts end to end on SQLite and Postgres: fire once after the pending period, ignore flapping inside the
hysteresis band, resolve once, retry a receiver that is down, survive a crash (outbox), and go no_data
(silently) when data is stale or a provider's runs fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
from datetime import timedelta
from decimal import Decimal

import numpy as np
import pytest
from sqlalchemy import select

from tests.factories.alerts import (
    H100,
    SECRET,
    Receiver,
    add_rule,
    failed_run,
    ingest_prices,
    local,
    offer,
    outbox_count,
    rule_state,
    transitions,
    webhook,
)
from tracker.alerts.channels import verify
from tracker.alerts.deliver import Deliverer
from tracker.alerts.evaluate import evaluate_after_ingest, evaluate_rules
from tracker.alerts.outbox import claim_due
from tracker.market.statistics import weighted_quantiles
from tracker.storage.alert_tables import AlertDeliveryAttempt, AlertEvent, AlertNotification, AlertRule
from tracker.storage.engine import session_scope


@pytest.fixture
def settings(settings):
    """The shared settings, letting webhooks reach the local receiver."""
    return local(settings)


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def _price(engine, settings, clock, price, provider="vastai"):
    """A scrape observing one H100 SXM on-demand offer at `price`, then the post-ingest hook."""
    ingest_prices(engine, settings, clock(), offer("h100-a", price), offer("h100-b", "3.50"), provider=provider)
    return evaluate_after_ingest(engine, settings, provider, clock())


def test_fires_once_after_pending_ignores_flapping_and_resolves_once(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(
        engine,
        settings,
        clock(),
        threshold="2.00",
        recovery_threshold="2.20",
        for_="10m",
        metric="min",
        channels=webhook(receiver),
    )
    deliverer = Deliverer(engine, settings, clock=clock)

    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "pending"
    assert deliverer.deliver_due() == {} and receiver.requests == []

    clock.advance(minutes=5)  # the sweep between scrapes: still inside the pending period
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "pending"

    clock.advance(minutes=5)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "firing"
    assert deliverer.deliver_due() == {"delivered": 1}
    assert receiver.kinds() == ["firing"]

    # Flapping between the threshold and the recovery threshold: no transition, no message.
    for price in ("2.10", "1.95", "2.15", "1.80", "2.19"):
        clock.advance(minutes=10)
        _price(engine, settings, clock, price)
        evaluate_rules(engine, settings, now=clock())
        deliverer.deliver_due()
    assert rule_state(engine, rule) == "firing"
    assert receiver.kinds() == ["firing"]

    clock.advance(minutes=10)
    _price(engine, settings, clock, "2.30")
    assert rule_state(engine, rule) == "resolved"
    deliverer.deliver_due()
    clock.advance(minutes=10)
    _price(engine, settings, clock, "2.40")
    deliverer.deliver_due()
    assert receiver.kinds() == ["firing", "resolved"]
    assert transitions(engine, rule) == [("inactive", "pending"), ("pending", "firing"), ("firing", "resolved")]

    firing, resolved = receiver.requests
    data = firing.json["data"]
    assert firing.json["type"] == "alert.firing"
    assert (data["value"], data["rule"]["threshold"], data["offers"]) == ("1.900000", "2.000000", 2)
    assert resolved.json["data"]["value"] == "2.300000"
    # Each message carries a distinct, stable id and a valid Standard Webhooks signature.
    assert firing.headers["webhook-id"] != resolved.headers["webhook-id"]
    assert firing.headers["webhook-id"] == data["id"]
    for r in receiver.requests:
        sent = int(r.headers["webhook-timestamp"])
        assert verify(SECRET, r.headers, r.body, now=sent)
        assert not verify(SECRET, r.headers, r.body + b" ", now=sent)
        assert not verify(SECRET, r.headers, r.body, now=sent + 301)  # replay outside the tolerance
    assert int(firing.headers["webhook-timestamp"]) == int((clock() - timedelta(minutes=70)).timestamp())
    with session_scope(engine) as s:
        events = s.scalars(select(AlertEvent).where(AlertEvent.rule_id == rule).order_by(AlertEvent.id)).all()
        assert [str(e.value) for e in events] == ["1.900000", "1.900000", "2.300000"]
        assert [e.notified for e in events] == [False, True, True]


def test_a_new_breach_after_resolving_is_a_new_episode(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    deliverer = Deliverer(engine, settings, clock=clock)
    for price in ("1.90", "2.50", "1.80"):
        clock.advance(minutes=10)
        _price(engine, settings, clock, price)
        deliverer.deliver_due()
    assert receiver.kinds() == ["firing", "resolved", "firing"]
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert len(set(ids)) == 3
    assert transitions(engine, rule)[-1] == ("resolved", "firing")


def test_receiver_down_is_retried_with_backoff_and_delivered_once_back(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    receiver.stop()
    deliverer = Deliverer(engine, settings, clock=clock)
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "firing"

    assert deliverer.deliver_due() == {"pending": 1}  # attempt 1 refused; retry in 10 s
    assert deliverer.deliver_due() == {}  # not due yet
    clock.advance(seconds=10)
    assert deliverer.deliver_due() == {"pending": 1}  # attempt 2; retry in 20 s
    clock.advance(seconds=19)
    assert deliverer.deliver_due() == {}
    clock.advance(seconds=1)
    receiver.status = 503  # back, but unhealthy: still a retryable failure
    receiver.start()
    assert deliverer.deliver_due() == {"pending": 1}  # attempt 3; retry in 40 s
    receiver.status = 200
    clock.advance(seconds=40)
    assert deliverer.deliver_due() == {"delivered": 1}
    clock.advance(hours=1)
    assert deliverer.deliver_due() == {}
    assert receiver.kinds() == ["firing"]
    with session_scope(engine) as s:
        attempts = s.scalars(select(AlertDeliveryAttempt).order_by(AlertDeliveryAttempt.id)).all()
        assert [a.ok for a in attempts] == [False, False, False, True]
        assert [a.status_code for a in attempts] == [None, None, 503, 200]
        gaps = [(b.at - a.at).total_seconds() for a, b in itertools.pairwise(attempts)]
        assert gaps == [10, 20, 40]
        n = s.scalar(select(AlertNotification))
        assert n is not None
        assert (n.status, n.attempts, n.delivered_at) == ("delivered", 4, clock() - timedelta(hours=1))


def test_gives_up_after_max_attempts_and_permanent_errors_do_not_retry(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    few = settings.model_copy(update={"alert_max_attempts": 2})
    deliverer = Deliverer(engine, few, clock=clock)
    receiver.status = 500
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    assert deliverer.deliver_due() == {"pending": 1}
    clock.advance(seconds=10)
    assert deliverer.deliver_due() == {"failed": 1}
    assert outbox_count(engine, status="failed") == 1

    receiver.status = 410  # a permanent answer: no retry at all
    clock.advance(minutes=10)
    _price(engine, settings, clock, "2.50")  # resolved → a new message
    assert deliverer.deliver_due() == {"failed": 1}


def test_state_change_survives_a_crash_before_delivery(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")  # firing: state and outbox row committed together
    assert outbox_count(engine, status="pending") == 1
    # "Killed" before any delivery; a fresh process (new connections, new deliverer) picks it up.
    engine.dispose()
    assert Deliverer(engine, settings, clock=clock).deliver_due() == {"delivered": 1}
    assert Deliverer(engine, settings, clock=clock).deliver_due() == {}
    assert receiver.kinds() == ["firing"]


def test_crash_mid_send_redelivers_after_the_lease_with_the_same_id(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    lease = timedelta(seconds=settings.alert_claim_lease_s)
    (claimed,) = claim_due(engine, now=clock(), lease=lease, limit=10)  # a deliverer takes it, then dies
    other = Deliverer(engine, settings, clock=clock)
    assert other.deliver_due() == {}  # leased: nobody else sends it meanwhile
    clock.advance(seconds=settings.alert_claim_lease_s + 1)
    assert other.deliver_due() == {"delivered": 1}
    assert receiver.kinds() == ["firing"]
    assert receiver.requests[0].headers["webhook-id"] == claimed.key


def test_two_deliverers_never_send_the_same_message_twice(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver) + webhook(receiver))
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    lease = timedelta(seconds=60)
    a = claim_due(engine, now=clock(), lease=lease, limit=10)
    b = claim_due(engine, now=clock(), lease=lease, limit=10)
    assert len(a) == 2 and b == []
    assert {m.key for m in a} == {a[0].key}  # one message id, one row per channel


def test_stale_data_goes_no_data_without_notifying(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    deliverer = Deliverer(engine, settings, clock=clock)
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    deliverer.deliver_due()
    assert receiver.kinds() == ["firing"]

    clock.advance(hours=7)  # past stale_after (6 h) with no scrape
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "no_data"
    evaluate_rules(engine, settings, now=clock() + timedelta(minutes=1))
    assert deliverer.deliver_due() == {}
    assert outbox_count(engine) == 1

    _price(engine, settings, clock, "1.85")  # data back, still below: firing again, silently
    assert rule_state(engine, rule) == "firing"
    deliverer.deliver_due()
    assert receiver.kinds() == ["firing"]
    clock.advance(minutes=10)
    _price(engine, settings, clock, "2.50")
    deliverer.deliver_due()
    assert receiver.kinds() == ["firing", "resolved"]
    assert transitions(engine, rule) == [
        ("inactive", "firing"),
        ("firing", "no_data"),
        ("no_data", "firing"),
        ("firing", "resolved"),
    ]


def test_stale_data_never_fires_a_new_rule(engine, settings, clock, receiver):
    _price(engine, settings, clock, "1.50")
    clock.advance(hours=7)
    rule = add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))  # no fresh data: accepted
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "no_data"
    assert outbox_count(engine) == 0


def test_failed_provider_run_is_no_data_and_does_not_resolve(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", channels=webhook(receiver))
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    clock.advance(minutes=10)
    failed_run(engine, "vastai", clock())  # the offers are still "fresh", but the provider is failing
    evaluate_after_ingest(engine, settings, "vastai", clock())
    assert rule_state(engine, rule) == "no_data"
    with session_scope(engine) as s:
        event = s.scalar(select(AlertEvent).order_by(AlertEvent.id.desc()))
        assert event is not None
        assert event.to_state == "no_data" and "vastai failed" in event.reason and not event.notified
    assert outbox_count(engine) == 1  # only the firing message


def test_pending_interrupted_by_no_data_starts_over(engine, settings, clock):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", for_="30m")
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "pending"
    clock.advance(minutes=10)
    failed_run(engine, "vastai", clock())
    evaluate_after_ingest(engine, settings, "vastai", clock())
    clock.advance(minutes=15)
    _price(engine, settings, clock, "1.90")  # 35 min after the first breach, but the gap broke it
    assert rule_state(engine, rule) == "pending"
    clock.advance(minutes=30)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "firing"


def test_silenced_rule_records_events_but_sends_nothing(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(
        engine,
        settings,
        clock(),
        threshold="2.00",
        channels=webhook(receiver),
        silenced_until=clock() + timedelta(hours=1),
    )
    clock.advance(minutes=10)
    _price(engine, settings, clock, "1.90")
    assert rule_state(engine, rule) == "firing"
    assert outbox_count(engine) == 0


def test_repeat_reminders_while_firing(engine, settings, clock, receiver):
    _price(engine, settings, clock, "2.50")
    add_rule(engine, settings, clock(), threshold="2.00", repeat="1h", channels=webhook(receiver))
    deliverer = Deliverer(engine, settings, clock=clock)
    for _ in range(7):  # 70 minutes of scrapes every 10 minutes, all below
        clock.advance(minutes=10)
        _price(engine, settings, clock, "1.90")
        deliverer.deliver_due()
    assert receiver.kinds() == ["firing", "repeat"]


def test_other_providers_and_cards_do_not_trigger_evaluation(engine, settings, clock):
    _price(engine, settings, clock, "2.50")
    rule = add_rule(engine, settings, clock(), threshold="2.00", providers=["vastai"])
    ingest_prices(engine, settings, clock(), offer("x", "1.00"), provider="runpod")
    report = evaluate_after_ingest(engine, settings, "runpod", clock())
    assert report.evaluated == 0 and rule_state(engine, rule) == "inactive"


@pytest.mark.parametrize("metric", ["min", "p25", "median"])
def test_statistics_use_the_market_definition(engine, settings, clock, metric):
    prices = ["4.0", "1.0", "3.0", "2.0", "5.0"]
    ingest_prices(engine, settings, clock(), *(offer(f"k{i}", p) for i, p in enumerate(prices)))
    rule = add_rule(engine, settings, clock(), gpu=H100, metric=metric, threshold="0.50")
    evaluate_rules(engine, settings, now=clock())
    as_float = np.array([float(p) for p in prices])
    expected = as_float.min() if metric == "min" else weighted_quantiles(as_float, np.ones(5))[metric]
    with session_scope(engine) as s:
        assert s.get_one(AlertRule, rule).last_value == Decimal(str(expected))


def test_idempotency_key_is_a_pure_function_of_rule_transition_and_episode():
    from datetime import UTC, datetime

    from tracker.alerts.outbox import idempotency_key

    t = datetime(2026, 11, 1, tzinfo=UTC)
    assert idempotency_key(1, "firing", t) == idempotency_key(1, "firing", t)
    assert (
        len(
            {
                idempotency_key(1, "firing", t),
                idempotency_key(1, "resolved", t),
                idempotency_key(2, "firing", t),
                idempotency_key(1, "firing", t + timedelta(seconds=1)),
            }
        )
        == 4
    )


def test_signature_matches_the_standard_webhooks_reference():
    # Recomputed independently from the spec: base64(HMAC-SHA256(base64decode(secret), "id.ts.body")).
    from tracker.alerts.channels import sign

    body = b'{"test": 2432232314}'
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    expected = base64.b64encode(
        hmac.new(key, b"msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330." + body, hashlib.sha256).digest()
    ).decode()
    assert sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == f"v1,{expected}"
    assert expected == "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

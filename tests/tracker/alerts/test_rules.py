"""Alert rules: the pure state machine, validation at creation (field named), the reject-if-it-would-fire
decision, and cost metrics through the CostModel interface."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.factories.alerts import add_rule, ingest_prices, local, offer, rule_state
from tracker.alerts.evaluate import evaluate_rules
from tracker.alerts.job_cost import CostError, default_cost_model
from tracker.alerts.observe import Observation, pick
from tracker.alerts.rules import ChannelInput, RuleError, parse_duration, rule_dict, update_rule
from tracker.alerts.states import step
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope

T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def settings(settings):
    """The shared settings, letting webhooks reach the local receiver."""
    return local(settings)


@dataclass
class R:  # the state a rule carries, without a database
    condition: str = "below"
    threshold: Decimal = Decimal("2.00")
    recovery_threshold: Decimal = Decimal("2.20")
    for_s: int = 600
    repeat_s: int | None = None
    state: str = "inactive"
    held_state: str | None = None
    state_since: datetime = T0
    pending_since: datetime | None = None
    last_notified_at: datetime | None = None
    repeats: int = 0


def run(rule: R, values: list[str | None], every: timedelta = timedelta(minutes=5)) -> list[tuple[str, str, str]]:
    out = []
    for i, v in enumerate(values):
        obs = Observation(Decimal(v) if v is not None else None, offers=3, no_data=None if v else "stale")
        out += [(t.from_state, t.to_state, t.notify or "") for t in step(rule, obs, T0 + i * every)]
    return out


def test_pending_needs_the_breach_to_hold_for_the_whole_period():
    rule = R()
    assert run(rule, ["1.9", "1.9", "2.05", "1.9", "1.9", "1.9"]) == [
        ("inactive", "pending", ""),
        ("pending", "inactive", ""),
        ("inactive", "pending", ""),
        ("pending", "firing", "firing"),
    ]


def test_hysteresis_band_is_silent_both_ways():
    firing = R(state="firing", pending_since=T0, last_notified_at=T0)
    assert run(firing, ["2.00", "2.10", "2.19", "1.5", "2.199999"]) == []
    quiet = R(for_s=0)
    assert run(quiet, ["2.00", "2.10", "2.30"]) == []
    assert run(firing, ["2.20"]) == [("firing", "resolved", "resolved")]


def test_above_rules_mirror_below_rules():
    rule = R(condition="above", threshold=Decimal("3.00"), recovery_threshold=Decimal("2.80"), for_s=0)
    assert run(rule, ["3.00", "3.01", "2.90", "3.50", "2.80"]) == [
        ("inactive", "firing", "firing"),
        ("firing", "resolved", "resolved"),
    ]


def test_no_data_holds_firing_and_never_notifies():
    rule = R(for_s=0)
    assert run(rule, ["1.5", None, None, "1.5", None, "2.5"]) == [
        ("inactive", "firing", "firing"),
        ("firing", "no_data", ""),
        ("no_data", "firing", ""),
        ("firing", "no_data", ""),
        ("no_data", "firing", ""),
        ("firing", "resolved", "resolved"),
    ]


def test_repeat_reminders_count_from_the_last_notification():
    rule = R(for_s=0, repeat_s=3600)
    kinds = [n for _, _, n in run(rule, ["1.5"] * 30)]  # 145 minutes below, evaluated every 5
    assert kinds == ["firing", "repeat", "repeat"] and rule.repeats == 2


@pytest.mark.parametrize(
    ("stat", "prices", "expected"),
    [
        ("min", ["3", "1", "2"], "1"),
        ("median", ["4", "1", "3", "2"], "2"),
        ("median", ["3", "1", "2"], "2"),
        ("p25", ["4", "1", "3", "2"], "1"),
        ("p25", ["5", "1", "4", "2", "3"], "2"),
        ("median", ["7"], "7"),
    ],
)
def test_pick_is_the_inverted_cdf(stat, prices, expected):
    assert pick([Decimal(p) for p in prices], stat) == Decimal(expected)


@pytest.mark.parametrize(
    ("text", "seconds"), [("15m", 900), ("1h30m", 5400), ("2d", 172800), ("90", 90), (45, 45), ("1w", 604800)]
)
def test_durations(text, seconds):
    assert parse_duration(text, "for") == seconds


@pytest.mark.parametrize("text", ["soon", "15x", "-5", "", "m"])
def test_bad_durations_name_the_field(text):
    with pytest.raises(RuleError) as exc:
        parse_duration(text, "repeat")
    assert exc.value.field == "repeat"


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"gpu": "Frobnicator 9000"}, "gpu"),
        ({"gpu": "H100", "metric": "median"}, "gpu"),  # a family blends cards: only min may pool them
        ({"pricing": "free"}, "pricing"),
        ({"metric": "mean"}, "metric"),
        ({"condition": "sideways"}, "condition"),
        ({"threshold": "-1"}, "threshold"),
        ({"threshold": "abc"}, "threshold"),
        ({"recovery_threshold": "1.50"}, "recovery_threshold"),  # below 2.00 for a 'below' rule
        ({"condition": "above", "recovery_threshold": "2.50"}, "recovery_threshold"),
        ({"for_": "forever"}, "for"),
        ({"for_": "30d"}, "for"),
        ({"repeat": "10s"}, "repeat"),
        ({"providers": ["nosuchcloud"]}, "providers"),
        ({"min_offers": 0}, "min_offers"),
        ({"job": {"model": "llama-3.1-8b"}}, "job"),  # a job only goes with cost metrics
        ({"channels": [ChannelInput("webhook", "http://10.0.0.1/hook")]}, "channels[0].url"),
        ({"channels": [ChannelInput("webhook", "http://169.254.169.254/")]}, "channels[0].url"),
        ({"channels": [ChannelInput("sms", "tel:123")]}, "channels[0].type"),
        ({"channels": [ChannelInput("webhook", "http://127.0.0.1/h", "not-a-secret")]}, "channels[0].secret"),
        ({"channels": [ChannelInput("apprise", "syslog://")]}, "channels[0].url"),
    ],
)
def test_invalid_rules_are_refused_naming_the_field(engine, settings, clock, kw, field):
    kw = {"threshold": "2.00"} | kw
    with pytest.raises(RuleError) as exc:
        add_rule(engine, settings, clock(), **kw)
    assert exc.value.field == field, str(exc.value)


def test_a_family_alert_on_the_minimum_pools_its_cards(engine, settings, clock):
    rule = add_rule(engine, settings, clock(), gpu="H100", threshold="2.00")
    with session_scope(engine) as s:
        assert len(s.get_one(AlertRule, rule).gpu_ids) > 1


def test_a_rule_that_would_fire_at_once_is_refused_unless_allowed(engine, settings, clock):
    ingest_prices(engine, settings, clock(), offer("a", "1.80"), offer("b", "2.50"))
    with pytest.raises(RuleError) as exc:
        add_rule(engine, settings, clock(), threshold="2.00")
    assert exc.value.field == "threshold" and "1.800000 now" in str(exc.value)
    rule = add_rule(engine, settings, clock(), threshold="2.00", allow_immediate=True, for_="5m")
    evaluate_rules(engine, settings, now=clock())
    assert rule_state(engine, rule) == "pending"  # then the normal path: pending period, firing
    above = add_rule(engine, settings, clock(), threshold="2.00", condition="above", metric="min")
    assert rule_state(engine, above) == "inactive"  # 1.80 is not above 2.00: accepted


def test_update_is_all_or_nothing_and_keeps_the_subject(engine, settings, clock):
    rule_id = add_rule(engine, settings, clock(), threshold="2.00", recovery_threshold="2.20")
    with session_scope(engine) as s:
        rule = s.get_one(AlertRule, rule_id)
        with pytest.raises(RuleError) as exc:
            update_rule(s, rule, {"name": "renamed", "recovery_threshold": "1.00"}, now=clock(), settings=settings)
        assert exc.value.field == "recovery_threshold" and rule.name != "renamed"
        with pytest.raises(RuleError) as exc:
            update_rule(s, rule, {"gpu": "A100"}, now=clock(), settings=settings)
        assert exc.value.field == "gpu"
        update_rule(s, rule, {"threshold": "1.50", "for": "15m"}, now=clock(), settings=settings)
        assert (rule.threshold, rule.recovery_threshold, rule.for_s) == (Decimal("1.5"), Decimal("2.2"), 900)


def test_secrets_are_shown_once(engine, settings, clock):
    rule_id = add_rule(
        engine,
        settings,
        clock(),
        threshold="2.00",
        channels=[ChannelInput("webhook", "http://127.0.0.1:9/private/path?token=abc")],
    )
    with session_scope(engine) as s:
        rule = s.get_one(AlertRule, rule_id)
        shown, hidden = rule_dict(rule, reveal=True)["channels"][0], rule_dict(rule)["channels"][0]
    assert shown["secret"].startswith("whsec_") and len(shown["secret"]) > 30
    assert hidden["secret"] == f"whsec_…{shown['secret'][-4:]}"
    assert "token" not in hidden["url"] and "private" not in hidden["url"]


class TenTimesPrice:
    """A stand-in estimate: a run costs ten GPU-hours."""

    def check(self, job, gpu_id, gpus):
        if job.get("model") == "too-big":
            raise CostError("does not fit", "job_gpus")

    def value(self, metric, job, gpu_id, gpus, price, pricing="on_demand"):
        return price * 10 * gpus


def test_cost_metric_fires_on_the_estimated_run_cost(engine, settings, clock):
    fake = TenTimesPrice()
    ingest_prices(engine, settings, clock(), offer("a", "2.50"), offer("b", "3.00"))
    rule = add_rule(
        engine, settings, clock(), metric="cost_per_run", threshold="20", job={"model": "m"}, cost_model=fake, for_="0"
    )
    with pytest.raises(RuleError) as exc:
        add_rule(
            engine, settings, clock(), metric="cost_per_run", threshold="20", job={"model": "too-big"}, cost_model=fake
        )
    assert exc.value.field == "job_gpus"
    with pytest.raises(RuleError) as exc:
        add_rule(engine, settings, clock(), metric="cost_per_run", threshold="20", cost_model=fake)
    assert exc.value.field == "job"
    clock.advance(minutes=10)
    ingest_prices(engine, settings, clock(), offer("a", "1.90"), offer("b", "3.00"))
    evaluate_rules(engine, settings, now=clock(), cost_model=fake)
    with session_scope(engine) as s:
        r = s.get_one(AlertRule, rule)
        assert (r.state, r.last_value) == ("firing", Decimal("19.000000"))


def test_cost_metric_with_the_real_estimate(engine, settings, clock):
    model = default_cost_model()
    ingest_prices(engine, settings, clock(), offer("a", "2.50"))
    job = {"model": "llama-3.1-8b", "method": "qlora", "tokens": "22.5M"}
    # The earlier name is still accepted, and the rule is stored under the name /v1/rank uses.
    rule = add_rule(engine, settings, clock(), metric="usd_per_mtoken", threshold="0.01", job=job, cost_model=model)
    with session_scope(engine) as s:
        assert s.get_one(AlertRule, rule).metric == "usd_per_mtok"
    evaluate_rules(engine, settings, now=clock(), cost_model=model)
    with session_scope(engine) as s:
        r = s.get_one(AlertRule, rule)
        assert r.state == "inactive" and r.last_value is not None and r.last_value > Decimal("0.01")
    with pytest.raises(RuleError) as exc:
        add_rule(
            engine,
            settings,
            clock(),
            metric="cost_per_run",
            threshold="1",
            job={"model": "no-such-model-xyz"},
            cost_model=model,
        )
    assert exc.value.field.startswith("job")
    with pytest.raises(RuleError) as exc:
        add_rule(
            engine,
            settings,
            clock(),
            metric="cost_per_run",
            threshold="1",
            job=job | {"allow_model_files": True},
            cost_model=model,
        )
    assert exc.value.field == "job.allow_model_files"

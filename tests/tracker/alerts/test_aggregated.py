"""Alert rules count aggregators' resales as the market does (tracker.market.aggregated): every listing by
default, direct offers only, or each machine once, its owner's price preferred — the same rule, so a rule
on the median agrees with the market snapshot under the same choice. The API body and the CLI take it."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from providers.adapters.primeintellect import PrimeIntellect
from providers.adapters.shadeform import Shadeform
from providers.fetching import labelled_aggregated
from tests.factories.alerts import add_rule
from tests.factories.offers import batch, do_ingest, offer
from tracker.alerts.observe import observe
from tracker.alerts.rules import RuleError
from tracker.clock import utcnow
from tracker.market.service import market_snapshot
from tracker.storage.alert_tables import AlertRule
from tracker.storage.engine import session_scope


def _market(engine, settings, clock):
    """Lambda's H100 at $3.00, resold by Shadeform ($3.50) and Prime Intellect ($3.20); Hyperstack's only
    through Shadeform ($2.80) and Prime Intellect ($2.90); Prime Intellect's own machine at $2.50."""
    clock.now = utcnow()
    do_ingest(engine, settings, clock, batch(offer("h100", "3.00")), provider="lambdalabs")
    shade = batch(offer("lam", "3.50", upstream="lambdalabs"), offer("hyp", "2.80", upstream="hyperstack"))
    do_ingest(engine, settings, clock, labelled_aggregated(Shadeform, shade), provider="shadeform")
    prime = batch(
        offer("lam", "3.20", upstream="lambdalabs"),
        offer("hyp", "2.90", upstream="hyperstack"),
        offer("own", "2.50", upstream=None),
    )
    do_ingest(engine, settings, clock, labelled_aggregated(PrimeIntellect, prime), provider="primeintellect")
    return clock.now


@pytest.mark.parametrize(
    ("mode", "offers", "median"), [("include", 6, "2.9"), ("exclude", 2, "2.5"), ("dedupe", 3, "2.8")]
)
def test_rule_counts_resales_as_the_market_does(engine, settings, clock, mode, offers, median):
    now = _market(engine, settings, clock)
    rule_id = add_rule(engine, settings, now, threshold="1.00", metric="median", aggregated=mode, allow_immediate=True)
    with session_scope(engine) as s:
        rule = s.get_one(AlertRule, rule_id)
        assert rule.aggregated == mode
        obs = observe(s, rule, now=now, settings=settings, cost_model=None)
        (card,) = market_snapshot(engine, s, settings, now, aggregated=mode)["cards"]
    assert (obs.offers, obs.value) == (offers, Decimal(median))
    assert (card["offers"], card["median"]) == (obs.offers, obs.value)


def test_bad_mode_is_refused_naming_the_field(engine, settings, clock):
    now = _market(engine, settings, clock)
    with pytest.raises(RuleError) as info:
        add_rule(engine, settings, now, threshold="1.00", aggregated="twice")
    assert info.value.field == "aggregated"


TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_api_body_and_cli(engine, settings, clock, cli):
    from api.app import create_app

    _market(engine, settings, clock)
    app = create_app(settings.model_copy(update={"api_token": SecretStr(TOKEN)}), engine)
    body = {
        "gpu": "H100-SXM-80GB",
        "condition": "below",
        "threshold": "1.00",
        "metric": "median",
        "aggregated": "dedupe",
    }
    with TestClient(app) as client:
        created = client.post("/v1/alerts", json=body, headers=AUTH)
        assert created.status_code == 201, created.text
        assert (created.json()["aggregated"], created.json()["last_value"]) == ("dedupe", 2.8)
        bad = client.post("/v1/alerts", json=body | {"aggregated": "twice"}, headers=AUTH)
        assert bad.status_code == 422 and "aggregated" in bad.text
    out = cli(
        "alerts",
        "add",
        "--gpu",
        "H100-SXM-80GB",
        "--below",
        "1.00",
        "--metric",
        "median",
        "--aggregated",
        "exclude",
        "--json",
    )
    assert out.exit_code == 0, out.output
    rule = json.loads(out.output)
    assert (rule["aggregated"], rule["last_value"]) == ("exclude", 2.5)
    wrong = cli("alerts", "add", "--gpu", "H100", "--below", "1.00", "--aggregated", "twice")
    assert wrong.exit_code == 2 and "--aggregated" in wrong.output and len(wrong.output.strip().splitlines()) == 1

"""/v1/alerts takes a plan rule (a workload mix instead of a card), answers it with its mix, and refuses a
bad mix with a 422 naming the field, storing nothing (both backends); a price rule still needs its card."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from tests.factories.alerts import ingest_prices, local, offer
from tracker.clock import utcnow

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
A100, H100 = "A100-SXM-80GB", "H100-SXM-80GB"
WORKLOAD: dict[str, Any] = {
    "name": "ft",
    "kind": "fine-tune",
    "volume": {"runs_per_month": 3},
    "job": {"model": "llama-3.1-8b", "tokens": "10M"},
    "constraints": {"pricing": ["on_demand"]},
}


@pytest.fixture
def client(engine, settings):
    app = create_app(local(settings).model_copy(update={"api_token": SecretStr(TOKEN)}), engine)
    with TestClient(app) as c:
        yield c


@pytest.fixture
def market(engine, settings):
    ingest_prices(
        engine, settings, utcnow() - timedelta(minutes=1), offer("a", "1.00", gpu=A100), offer("h", "9.00", gpu=H100)
    )


def test_a_plan_rule_is_created_and_read_back(client, market):
    body = {"plan": {"workloads": [WORKLOAD]}, "metric": "plan_monthly_cost", "condition": "below", "threshold": 1}
    created = client.post("/v1/alerts", json=body, headers=AUTH)
    assert created.status_code == 201, created.text
    rule = created.json()
    assert (rule["subject"], rule["metric"], rule["gpu_ids"]) == ("plan", "plan_monthly_cost", [])
    assert rule["plan"]["workloads"][0]["name"] == "ft" and rule["last_value"] > 1
    read = client.get(f"/v1/alerts/{rule['id']}", headers=AUTH).json()
    assert read["plan"] == rule["plan"] and read["subject"] == "plan"

    card = client.post("/v1/alerts", json={"plan": {"workloads": [WORKLOAD]}, "metric": "plan_best_card"}, headers=AUTH)
    assert card.status_code == 201, card.text
    assert (card.json()["best_card"], card.json()["condition"]) == (A100, "changes")
    # The mix as YAML text, as a mix file holds it.
    text = (
        "workloads:\n  - {name: ft, kind: fine-tune, volume: {runs_per_month: 3},\n"
        "     job: {model: llama-3.1-8b, tokens: 10M}}\n"
    )
    yaml_rule = client.post(
        "/v1/alerts",
        json={"plan": text, "metric": "plan_monthly_cost", "condition": "above", "threshold": "1e7"},
        headers=AUTH,
    )
    assert yaml_rule.status_code == 201, yaml_rule.text
    assert client.get("/v1/alerts", headers=AUTH).json()["count"] == 3

    # gpu, condition and threshold are optional in the schema now (a plan rule has no card): a price rule
    # without one is still refused, naming it.
    for missing in ("gpu", "threshold", "condition"):
        price_rule = {"gpu": H100, "condition": "below", "threshold": "2.00"}
        del price_rule[missing]
        response = client.post("/v1/alerts", json=price_rule, headers=AUTH)
        assert response.status_code == 422 and response.json()["field"] == missing, response.text
    assert client.get("/v1/alerts", headers=AUTH).json()["count"] == 3


@pytest.mark.parametrize(
    ("plan", "extra", "field"),
    [
        ({"workloads": []}, {}, "plan.workloads"),
        ({"workloads": [{**WORKLOAD, "job": {"model": "no-such-model"}}]}, {}, "plan.workloads[0].job.model"),
        ({"workloads": [{**WORKLOAD, "kind": "juggling"}]}, {}, "plan.workloads[0].kind"),
        ("workloads: [unclosed", {}, "plan.mix"),
        ({"workloads": [WORKLOAD]}, {"gpu": "H100"}, "gpu"),
        ({"workloads": [WORKLOAD]}, {"threshold": None}, "threshold"),
        ({"workloads": [WORKLOAD]}, {"metric": "plan_best_card"}, "threshold"),
    ],
)
def test_a_bad_plan_rule_is_422_naming_the_field(client, plan, extra, field):
    body = {"plan": plan, "metric": "plan_monthly_cost", "condition": "below", "threshold": "5000"} | extra
    response = client.post("/v1/alerts", json={k: v for k, v in body.items() if v is not None}, headers=AUTH)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.text
    assert client.get("/v1/alerts", headers=AUTH).json()["count"] == 0

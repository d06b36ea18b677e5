"""/v1/alerts: token-protected CRUD, 4xx naming the field, events, and test notifications (both backends)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from tests.factories.alerts import Receiver, ingest_prices, local, offer
from tracker.alerts.evaluate import evaluate_rules

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def settings(settings):
    """The shared settings, letting webhooks reach the local receiver."""
    return local(settings)


@pytest.fixture
def client(engine, settings):
    app = create_app(settings.model_copy(update={"api_token": SecretStr(TOKEN)}), engine)
    with TestClient(app) as c:
        yield c


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def body(receiver: Receiver | None = None, **kw):
    out = {
        "gpu": "H100-SXM-80GB",
        "condition": "below",
        "threshold": "2.00",
        "recovery_threshold": "2.20",
        "for": "10m",
        "channels": [{"type": "webhook", "url": receiver.url}] if receiver else [],
    }
    return out | kw


def test_everything_needs_the_token(client):
    assert client.get("/v1/alerts").status_code == 401
    assert client.post("/v1/alerts", json=body()).status_code == 401
    assert client.get("/v1/alerts", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.delete("/v1/alerts/1").status_code == 401
    assert client.post("/v1/alerts/1/test").status_code == 401


def test_crud_round_trip(client, receiver):
    created = client.post("/v1/alerts", json=body(receiver, name="cheap H100"), headers=AUTH)
    assert created.status_code == 201, created.text
    rule = created.json()
    assert (rule["name"], rule["state"], rule["for_s"], rule["gpu_ids"]) == (
        "cheap H100",
        "inactive",
        600,
        ["H100-SXM-80GB"],
    )
    secret = rule["channels"][0]["secret"]
    assert secret.startswith("whsec_") and rule["channels"][0]["url"] == receiver.url

    shown = client.get(f"/v1/alerts/{rule['id']}", headers=AUTH).json()
    assert shown["channels"][0]["secret"] == f"whsec_…{secret[-4:]}"
    assert [r["id"] for r in client.get("/v1/alerts", headers=AUTH).json()["alerts"]] == [rule["id"]]

    patched = client.patch(
        f"/v1/alerts/{rule['id']}", json={"threshold": "1.80", "for": "1h", "enabled": False}, headers=AUTH
    )
    assert patched.status_code == 200, patched.text
    assert (patched.json()["threshold"], patched.json()["for_s"], patched.json()["enabled"]) == (1.8, 3600, False)

    assert client.delete(f"/v1/alerts/{rule['id']}", headers=AUTH).status_code == 204
    missing = client.get(f"/v1/alerts/{rule['id']}", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["field"] == "id"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"gpu": "Frobnicator 9000"}, "gpu"),
        ({"gpu": "H100", "metric": "median"}, "gpu"),
        ({"recovery_threshold": "1.00"}, "recovery_threshold"),
        ({"for": "whenever"}, "for"),
        ({"providers": ["nosuchcloud"]}, "providers"),
        ({"channels": [{"type": "webhook", "url": "http://10.0.0.1/hook"}]}, "channels[0].url"),
        ({"channels": [{"type": "webhook", "url": "http://169.254.169.254/latest/meta-data/"}]}, "channels[0].url"),
        ({"channels": [{"type": "apprise", "url": "json://192.168.1.10/x"}]}, "channels[0].url"),
    ],
)
def test_bad_input_is_422_naming_the_field(client, overrides, field):
    response = client.post("/v1/alerts", json=body(**overrides), headers=AUTH)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


def test_schema_level_errors_are_422_too(client):
    bads: list[dict[str, Any]] = [
        {"threshold": "-2"},
        {"condition": "sideways"},
        {"colour": "red"},
        {"pricing": "free"},
    ]
    for bad in bads:
        response = client.post("/v1/alerts", json=body(**bad), headers=AUTH)
        assert response.status_code == 422
        locs = [e["loc"][-1] for e in response.json()["detail"]]
        assert next(iter(bad)) in locs
    rule = client.post("/v1/alerts", json=body(), headers=AUTH).json()
    for bad in ({"gpu": "A100"}, {"metric": "median"}):  # the subject cannot change
        assert client.patch(f"/v1/alerts/{rule['id']}", json=bad, headers=AUTH).status_code == 422
    nulled = client.patch(f"/v1/alerts/{rule['id']}", json={"threshold": None}, headers=AUTH)
    assert nulled.status_code == 422 and nulled.json()["field"] == "threshold"


def test_would_fire_now_is_refused_unless_allowed(client, engine, settings, clock):
    from tracker.clock import utcnow

    ingest_prices(engine, settings, utcnow(), offer("a", "1.70"))
    refused = client.post("/v1/alerts", json=body(), headers=AUTH)
    assert refused.status_code == 422 and refused.json()["field"] == "threshold"
    assert "would fire at once" in refused.json()["detail"]
    accepted = client.post("/v1/alerts", json=body(allow_immediate=True), headers=AUTH)
    assert accepted.status_code == 201 and accepted.json()["allow_immediate"] is True


def test_events_and_test_notification(client, engine, settings, receiver):
    from tracker.clock import utcnow

    rule = client.post("/v1/alerts", json=body(receiver, **{"for": 0}), headers=AUTH).json()
    ingest_prices(engine, settings, utcnow(), offer("a", "1.70"))
    evaluate_rules(engine, settings)
    events = client.get(f"/v1/alerts/{rule['id']}/events", headers=AUTH).json()
    (event,) = events["events"]
    assert (event["from_state"], event["to_state"], event["value"], event["notified"]) == (
        "inactive",
        "firing",
        1.7,
        True,
    )
    assert events["notifications"][0]["status"] == "pending"

    sent = client.post(f"/v1/alerts/{rule['id']}/test", headers=AUTH)
    assert sent.status_code == 200, sent.text
    assert [r["status"] for r in sent.json()["results"]] == ["delivered"]
    assert receiver.kinds() == ["test"]
    assert client.post("/v1/alerts/999999/test", headers=AUTH).status_code == 404
    assert client.get("/v1/alerts/999999/events", headers=AUTH).status_code == 404
    bare = client.post("/v1/alerts", json=body(allow_immediate=True), headers=AUTH).json()
    no_channels = client.post(f"/v1/alerts/{bare['id']}/test", headers=AUTH)
    assert no_channels.status_code == 422 and no_channels.json()["field"] == "channels"


def test_test_notification_reports_a_down_receiver(client, receiver):
    rule = client.post("/v1/alerts", json=body(receiver), headers=AUTH).json()
    receiver.stop()
    results = client.post(f"/v1/alerts/{rule['id']}/test", headers=AUTH).json()["results"]
    assert results[0]["status"] == "failed" and "Connect" in results[0]["error"]

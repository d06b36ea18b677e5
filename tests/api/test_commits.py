"""A write is committed before it is acknowledged (issue #18), on both backends.

The session dependency used to commit after the response was sent: a GET straight after a 201 found
nothing (68 times in 100 on SQLite), and a commit that failed still said 201. A real server is needed
to see it: TestClient waits for the whole ASGI call, commit included, before it returns the response.
Commits are slowed down a little (as a busy disk or a remote Postgres does), so that whether the reply
waits for the commit decides the outcome, not the scheduling of two threads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Connection, event
from sqlalchemy.exc import OperationalError

from api.app import create_app
from tests.factories.servers import serve

TOKEN = "commit-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RULE = {"gpu": "H100-SXM-80GB", "condition": "below", "threshold": "2.00", "for": "10m"}
COMMIT_LATENCY_S = 0.06  # more than a round trip here takes (10-40 ms on a busy 2-core machine)


@pytest.fixture
def app(engine, settings):
    return create_app(settings.model_copy(update={"api_token": SecretStr(TOKEN)}), engine)


@pytest.fixture
def slow_commits(engine) -> Iterator[None]:
    """Commits of transactions that wrote take COMMIT_LATENCY_S (reads commit at full speed)."""

    def note_write(conn: Connection, _cursor: object, statement: str, *_: object) -> None:
        if statement.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            conn.info["wrote"] = True

    def wait(conn: Connection) -> None:
        if conn.info.pop("wrote", False):
            time.sleep(COMMIT_LATENCY_S)

    event.listen(engine, "before_cursor_execute", note_write)
    event.listen(engine, "commit", wait)
    yield
    event.remove(engine, "commit", wait)
    event.remove(engine, "before_cursor_execute", note_write)


@pytest.fixture
def http(app, slow_commits) -> Iterator[httpx.Client]:
    with serve(app) as base, httpx.Client(base_url=base, headers=AUTH, timeout=10) as client:
        yield client


def test_a_created_rule_is_there_for_the_next_request(http):
    missing = []
    for i in range(50):
        created = http.post("/v1/alerts", json=RULE | {"name": f"rule {i}"})
        assert created.status_code == 201, created.text
        got = http.get(f"/v1/alerts/{created.json()['id']}")
        if got.status_code != 200:
            missing.append((i, got.status_code))
    assert not missing, f"{len(missing)} of 50 reads straight after a 201 missed the rule: {missing[:5]}"


def test_a_patch_or_delete_is_seen_by_the_next_request(http):
    rule = http.post("/v1/alerts", json=RULE).json()
    path = f"/v1/alerts/{rule['id']}"
    for i in range(20):
        threshold = f"{1.50 + i / 100:.2f}"
        patched = http.patch(path, json={"threshold": threshold, "enabled": i % 2 == 0})
        assert patched.status_code == 200, patched.text
        got = http.get(path).json()
        assert (got["threshold"], got["enabled"]) == (float(threshold), i % 2 == 0), i
    assert http.delete(path).status_code == 204
    assert http.get(path).status_code == 404
    assert http.get("/v1/alerts").json()["count"] == 0


def test_a_failed_commit_is_a_503_not_a_201(app, engine):
    def fail(_conn: object) -> None:
        raise OperationalError("COMMIT", {}, Exception("simulated: the connection died at commit"))

    with TestClient(app, raise_server_exceptions=False) as client:
        event.listen(engine, "commit", fail)
        try:
            created = client.post("/v1/alerts", json=RULE, headers=AUTH)
        finally:
            event.remove(engine, "commit", fail)
        assert created.status_code == 503, created.text
        assert created.json()["detail"].startswith("database")
        assert client.get("/v1/alerts", headers=AUTH).json()["count"] == 0  # nothing written, nothing claimed
        rule = client.post("/v1/alerts", json=RULE, headers=AUTH).json()
        event.listen(engine, "commit", fail)
        try:
            patched = client.patch(f"/v1/alerts/{rule['id']}", json={"threshold": "1.00"}, headers=AUTH)
            deleted = client.delete(f"/v1/alerts/{rule['id']}", headers=AUTH)
        finally:
            event.remove(engine, "commit", fail)
        assert (patched.status_code, deleted.status_code) == (503, 503)
        assert client.get(f"/v1/alerts/{rule['id']}", headers=AUTH).json()["threshold"] == 2.0

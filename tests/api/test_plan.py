"""POST /v1/plan and /v1/plan/history: the same plan as the CLI's, YAML text or JSON, 422s naming the field."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from tests.factories.api import seeded_client
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.plan.mix import load_mix
from tracker.plan.service import options_for, plan_live
from tracker.storage.engine import session_scope

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "examples" / "mixed-fleet.yaml").read_text()
FT = {
    "name": "ft",
    "kind": "fine-tune",
    "job": {"model": "llama-3.1-8b", "tokens": "10M"},
    "volume": {"runs_per_month": 3},
}


@pytest.fixture
def client(engine, settings, clock):
    clock.now = datetime.now(UTC)
    do_ingest(
        engine, settings, clock, batch(offer("a", "1.00", gpu="A100-SXM-80GB"), offer("b", "0.30", gpu="RTX4090-24GB"))
    )
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as c:
        yield c


def test_plan_from_workloads_and_from_yaml_source_agree(client):
    r = client.post("/v1/plan", json={"workloads": [FT]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workloads"][0]["choice"]["gpu"] == "RTX4090-24GB"
    assert body["workloads"][0]["runner_up"]["gpu"] == "A100-SXM-80GB"
    assert body["fleet"]["monthly_cost"] == body["workloads"][0]["choice"]["monthly_cost"]
    source = "workloads:\n" + "".join(f"  - {json.dumps(FT)}\n")
    r2 = client.post("/v1/plan", json={"source": source})
    assert r2.status_code == 200, r2.text
    assert _timeless(r2.json()) == _timeless(body)


def _timeless(value):
    """The answer without what moves with the clock (its as_of, price ages)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("as_of", "price_age_s")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_power_budget_in_the_body(client):
    r = client.post("/v1/plan", json={"workloads": [FT], "power_budget_kw": 0.55})
    assert r.status_code == 200, r.text
    power = r.json()["power"]
    assert power["budget_kw"] == 0.55 and power["within_budget"] is True
    assert r.json()["workloads"][0]["choice"]["gpu"] == "A100-SXM-80GB"  # 0.52 kW; the 4090 draws 0.585


def test_history_answers_points(client):
    r = client.post("/v1/plan/history", json={"workloads": [FT], "days": 7})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["days"] == 7 and body["workloads"][0]["cards"] == ["A100-SXM-80GB", "RTX4090-24GB"]
    assert body["points"], body
    last = body["points"][-1]
    assert last["choices"][0]["gpu"] == "RTX4090-24GB" and last["single_card"] == "RTX4090-24GB"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workloads": [{**FT, "volume": {"runs_per_month": -1}}]}, "runs_per_month"),
        ({"workloads": [{**FT, "kind": "train"}]}, "kind"),
        ({"workloads": [{**FT, "job": {"model": "no-such-model", "tokens": "1M"}}]}, "body.workloads[0].job.model"),
        (
            {
                "source": "workloads:\n  - name: x\n    kind: fine-tune\n    job: {model: llama-3.1-8b, tokens: 1M}\n"
                "    volume: {runs_per_month: 0}\n"
            },
            "source.workloads[0].volume.runs_per_month",
        ),
        ({"source": "workloads: ["}, "source.mix"),
        ({}, "body"),
        ({"workloads": [FT], "source": "x"}, "body"),
        ({"workloads": [FT], "power_budget_kw": 0}, "power_budget_kw"),
        # Past these the month's cost overflowed the money rule's Decimal context: a 500, not a 422.
        ({"workloads": [{**FT, "volume": {"training_tokens_per_month": "1e30"}}]}, "training_tokens_per_month"),
        (
            {"workloads": [{**FT, "volume": {"training_tokens_per_month": "1e18"}}]},
            "body.workloads[0].volume.training_tokens_per_month",
        ),
        (
            {
                "workloads": [
                    {
                        "name": "s",
                        "kind": "inference",
                        "job": {"model": "llama-3.1-8b"},
                        "volume": {"tokens_per_month": "1e30"},
                    }
                ]
            },
            "tokens_per_month",
        ),
        ({"source": "[" * 5000 + "]" * 5000}, "source.mix"),  # json's scanner hit the recursion limit
    ],
)
@pytest.mark.parametrize("path", ["/v1/plan", "/v1/plan/history"])
def test_bad_mixes_are_422_naming_the_field(client, body, field, path):
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert field in json.dumps(r.json())


def test_demo_market_plan_matches_the_cli_path(engine, settings):
    with seeded_client(engine, settings) as c:
        r = c.post("/v1/plan", json={"source": EXAMPLE})
        assert r.status_code == 200, r.text
        body = r.json()
        mix = load_mix(EXAMPLE)
        with session_scope(engine) as session:
            direct = plan_live(engine, session, settings, utcnow(), mix, options_for(mix))
    assert [w["status"] for w in body["workloads"]] == [w["status"] for w in direct["workloads"]]
    assert body["fleet"]["monthly_cost"] == float(direct["fleet"]["monthly_cost"])
    assert Decimal(str(body["fleet"]["monthly_cost"])) == direct["fleet"]["monthly_cost"]
    assert body["single_card"]["best"] is None or body["single_card"]["saving"] >= 0


def _paths(value, where=()):
    """Every key path of a JSON body (objects and list items), leaves included."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*where, k)
            yield from _paths(v, (*where, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*where, i)
            yield from _paths(v, (*where, i))


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_hostile_values_in_any_field_never_5xx_and_answer_fast(client):
    import time

    from tests.factories.hostile import BODY_VALUES

    marker = "\x00fuzz\x00"
    base = {
        "workloads": [{**FT, "constraints": {"deadline_hours": 100, "providers": ["vastai"]}}],
        "power_budget_kw": 5,
    }
    failures = []
    for path in ("/v1/plan", "/v1/plan/history"):
        for where in [*_paths(base), ("source",)]:
            for literal in BODY_VALUES:
                body = json.loads(json.dumps(base))
                node = body
                for key in where[:-1]:
                    node = node[key]
                node[where[-1]] = marker
                raw = json.dumps(body).replace(json.dumps(marker), literal)
                t0 = time.monotonic()
                r = client.post(path, content=raw, headers={"content-type": "application/json"})
                if r.status_code >= 500 or time.monotonic() - t0 >= 2.0:
                    failures.append(f"{path} {where} {literal[:30]}: {r.status_code}")
    assert failures == []


# ---------------------------------------------------------------- a plan is CPU work, bounded and off the pool


def test_an_alias_bomb_in_source_is_a_quick_422_naming_source(client):
    from tests.tracker.plan.test_bounded_yaml import alias_bomb

    start = time.perf_counter()
    r = client.post("/v1/plan", json={"source": alias_bomb(9)})
    assert r.status_code == 422 and r.json()["field"] == "source.mix", r.text
    assert "expands" in r.json()["detail"]
    assert time.perf_counter() - start < 1.0


def test_plans_hold_no_connection_while_computing_and_past_the_bound_are_429(client, engine, monkeypatch):
    import api.routes.plan as route

    release, started = threading.Event(), threading.Semaphore(0)
    real = route.plan_on_frame  # type: ignore[attr-defined]  # the name the route module calls, patched below

    def slow_plan(*args, **kwargs):
        started.release()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(route, "plan_on_frame", slow_plan)
    answers: list[Any] = []
    assert client.get("/v1/offers").status_code == 200  # the version reader holds its connection from here on
    idle = engine.pool.checkedout()

    def post(i: int) -> None:  # distinct bodies: the memo would otherwise run one computation for all
        answers.append(client.post("/v1/plan", json={"workloads": [FT], "overhead_factor": 1 + i / 100}))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(route.MAX_CONCURRENT_PLANS)]
    for t in threads:
        t.start()
    for _ in threads:
        assert started.acquire(timeout=10)
    # Every plan is computing and none holds a connection (before: one each; 32 of them emptied the pool).
    checked_out = engine.pool.checkedout()
    try:
        busy = client.post("/v1/plan", json={"workloads": [FT], "overhead_factor": 2})
        assert busy.status_code == 429 and busy.headers["Retry-After"] == str(route.RETRY_AFTER_S)
        assert "retry" in busy.json()["detail"]
        assert client.get("/healthz").status_code == 200
    finally:
        release.set()
        for t in threads:
            t.join(10)
    assert [a.status_code for a in answers] == [200] * route.MAX_CONCURRENT_PLANS
    assert checked_out == idle
    assert client.post("/v1/plan", json={"workloads": [FT], "overhead_factor": 2}).status_code == 200


def test_healthz_answers_200_while_every_pooled_connection_is_busy(tmp_path, engine):
    from tracker.config import Settings
    from tracker.storage.engine import make_engine

    url = engine.url.render_as_string(hide_password=False)
    s = Settings(data_dir=tmp_path, database_url=url, db_pool_size=1, db_max_overflow=0, db_pool_timeout_s=0.5)
    small = make_engine(url, s)
    try:
        with TestClient(create_app(s, small), raise_server_exceptions=False) as c, small.connect():
            start = time.perf_counter()
            r = c.get("/healthz")
            assert r.status_code == 200, r.text
            assert time.perf_counter() - start < s.db_pool_timeout_s  # never waited on the pool
    finally:
        small.dispose()

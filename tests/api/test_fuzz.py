"""Hostile input against every operation of the app's own OpenAPI schema: no 5xx, no slow answer.

Schemathesis generates schema-shaped values; these are the values it (and people probing a public API)
found that break servers: non-finite JSON literals, numbers past float range, 900-deep nesting,
datetimes at the calendar edges, and oversized strings. Each is sent, one at a time, in every query
parameter, path parameter, top-level body field and field of a nested job config of every operation,
against a seeded market on both database backends. Any status is fine except a 5xx (413 from the
body-size limit included); every answer must come within 2 s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.factories.api import seeded_client
from tests.factories.hostile import BODY_VALUES, DATETIMES, QUERY_VALUES
from tracker.config import Settings

TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_SECONDS = 2.0
LLAMA_70B_CONFIG = {
    "model_type": "llama",
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "num_local_experts": 1,
    "head_dim": 128,
}
JOB = {"model": "llama-3.1-8b", "tokens": "1M"}
CONFIG_JOB = {"hf_config": LLAMA_70B_CONFIG, "tokens": "1M"}
ALERT = {"gpu": "H100-SXM-80GB", "condition": "below", "threshold": "0.01", "allow_immediate": True}
COST_ALERT = ALERT | {"metric": "cost_per_run", "job": JOB}

# Valid requests to mutate, per operation; an operation not listed gets none (query/path values only).
BASE_BODIES: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("post", "/v1/alerts"): [ALERT, COST_ALERT],
    ("patch", "/v1/alerts/{rule_id}"): [{"name": "fuzzed"}],
    ("post", "/v1/estimate"): [JOB | {"gpu": "H100"}, CONFIG_JOB | {"gpu": "H100"}],
    ("post", "/v1/rank"): [JOB, CONFIG_JOB],
    ("post", "/v1/rank/history"): [JOB | {"gpu": "H100", "days": 7}, CONFIG_JOB | {"gpu": "H100", "days": 7}],
}
BASE_QUERY: dict[str, dict[str, str]] = {"/v1/market/history": {"gpu": "H100"}, "/v1/market/terms": {"gpu": "H100"}}


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    params: dict[str, str]
    body: str | None  # raw JSON text
    what: str


def _raw(body: dict[str, Any], where: tuple[str, ...], literal: str) -> str:
    """`body` as JSON text with the value at `where` replaced by the raw literal (set when absent)."""
    marker = "\x00fuzz\x00"
    copy = json.loads(json.dumps(body))
    node = copy
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = marker
    return json.dumps(copy).replace(json.dumps(marker), literal)


def _nested_paths(body: dict[str, Any]) -> Iterator[tuple[str, ...]]:
    for key, value in body.items():
        if isinstance(value, dict):
            for inner in value:
                yield (key, inner)


def _body_fields(spec: dict[str, Any], op: dict[str, Any]) -> list[str]:
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return list(schema.get("properties", {}))


def _cases(spec: dict[str, Any], rule_id: int) -> list[Case]:
    cases: list[Case] = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            params = op.get("parameters", [])
            base_query = dict(BASE_QUERY.get(path, {}))
            path_values = {p["name"]: str(rule_id) for p in params if p["in"] == "path"}
            bases = BASE_BODIES.get((method, path), [])
            base_body = json.dumps(bases[0]) if bases else None

            def url(values: dict[str, str], path: str = path) -> str:
                return path.format(**values)

            for p in params:
                for value in QUERY_VALUES:
                    if p["in"] == "path":
                        target = url(path_values | {p["name"]: value})
                        cases.append(Case(method, target, base_query, base_body, f"{p['name']}={value[:40]}"))
                    else:
                        query = base_query | {p["name"]: value}
                        cases.append(Case(method, url(path_values), query, base_body, f"{p['name']}={value[:40]}"))
            # Two datetime parameters (a range): every pair of calendar edges, and each edge with a sane bound.
            stamps = [p["name"] for p in params if "date-time" in json.dumps(p.get("schema", {}))]
            if len(stamps) == 2:
                start, end = stamps
                edges = [*DATETIMES, "2026-01-01T00:00:00Z"]
                for a in edges:
                    for b in edges:
                        query = base_query | {start: a, end: b}
                        cases.append(Case(method, url(path_values), query, base_body, f"{start}={a}&{end}={b}"))
            if not bases:
                continue
            target = url(path_values)
            fields = _body_fields(spec, op)
            for literal in BODY_VALUES:
                for name in fields:
                    cases.append(
                        Case(
                            method, target, base_query, _raw(bases[0], (name,), literal), f"body.{name}={literal[:40]}"
                        )
                    )
                for base in bases:
                    for where in _nested_paths(base):
                        cases.append(
                            Case(
                                method,
                                target,
                                base_query,
                                _raw(base, where, literal),
                                f"body.{'.'.join(where)}={literal[:40]}",
                            )
                        )
                cases.append(Case(method, target, base_query, literal, f"body={literal[:40]}"))
    # Deleting the rule first would turn every later alert case into a plain 404.
    return sorted(cases, key=lambda c: c.method == "delete")


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with seeded_client(engine, settings, token=TOKEN) as c:
        yield c


def test_no_operation_answers_hostile_input_with_a_server_error(client: TestClient) -> None:
    created = client.post("/v1/alerts", json=ALERT, headers=AUTH)
    assert created.status_code == 201, created.text
    rule_id = created.json()["id"]
    for (method, path), bases in BASE_BODIES.items():
        for base in bases:  # each mutation must start from a request that works, or it tests nothing
            ok = client.request(method, path.format(rule_id=rule_id), json=base, headers=AUTH)
            assert ok.status_code < 300, (method, path, base, ok.text)
    cases = _cases(client.get("/openapi.json").json(), rule_id)
    failures: list[str] = []
    began = time.monotonic()
    for case in cases:
        headers = AUTH | ({"content-type": "application/json"} if case.body is not None else {})
        t0 = time.monotonic()
        response = client.request(case.method, case.path, params=case.params, content=case.body, headers=headers)
        took = time.monotonic() - t0
        if response.status_code >= 500 or took >= MAX_SECONDS:
            where = f"{case.method.upper()} {case.path[:60]} {case.what}"
            failures.append(f"{where}: {response.status_code} in {took:.2f}s")
    elapsed = time.monotonic() - began
    print(f"{len(cases)} hostile requests in {elapsed:.1f}s, {len(failures)} failures")
    assert not failures, f"{len(failures)} of {len(cases)} requests failed:\n" + "\n".join(failures)

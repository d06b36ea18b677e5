"""Each input that once made the API answer 5xx (issue #18, item 9) is a 422 naming the field (both backends)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.factories.api import seeded_client
from tracker.config import Settings

TOKEN = "bad-input-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = AUTH | {"content-type": "application/json"}
CONFIG = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
JOB = {"model": "llama-3.1-8b", "tokens": "1M"}
ALERT = {"gpu": "H100-SXM-80GB", "condition": "below", "threshold": "0.01", "allow_immediate": True}
JOB_ROUTES = ["/v1/estimate", "/v1/rank", "/v1/rank/history"]


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with seeded_client(engine, settings, token=TOKEN) as c:
        yield c


def _raw(body: dict[str, Any], key: str, literal: str) -> str:
    """`body` as JSON text with `key` set to a raw literal (NaN and Infinity are not JSON; Python reads them)."""
    return json.dumps(body | {key: "\x00"}).replace('"\\u0000"', literal)


def _refused(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    assert body["field"] == field, body
    return body


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_value_in_a_failing_field_is_echoed_as_text(client: TestClient, literal: str) -> None:
    # The 422 echoes the rejected value; a NaN in it could not be encoded, so the 422 became a 500.
    body = _refused(client.post("/v1/rank", content=_raw(JOB, "epochs", literal), headers=JSON), "epochs")
    assert body["detail"][0]["loc"] == ["body", "epochs"]
    assert body["detail"][0]["input"] == {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[literal]
    alert = client.post("/v1/alerts", content=_raw(ALERT, "price_statistic", literal), headers=JSON)
    _refused(alert, "price_statistic")
    _refused(client.post("/v1/estimate", content=_raw(JOB, "price", literal), headers=JSON), "price")


def test_a_decimal_of_100k_digits_is_echoed_cut_short(client: TestClient) -> None:
    # As an int it has more digits than Python will print; the echo is its text, abridged.
    body = _refused(client.post("/v1/estimate", json=JOB | {"price": "9" * 100_000}), "price")
    assert len(json.dumps(body)) < 5_000


@pytest.mark.parametrize("path", JOB_ROUTES)
@pytest.mark.parametrize(
    ("key", "literal"),
    [
        ("hidden_size", "Infinity"),
        ("hidden_size", "NaN"),
        ("hidden_size", "1e308"),
        ("hidden_size", "1" + "0" * 400),
        ("hidden_size", "4096.5"),
        ("num_hidden_layers", "1e308"),
        ("num_attention_heads", "Infinity"),
        ("num_key_value_heads", "-1"),
        ("vocab_size", "1e308"),
        ("intermediate_size", "NaN"),
        ("head_dim", "1e308"),
        ("num_local_experts", "Infinity"),
        ("max_position_embeddings", "1e308"),
    ],
)
def test_a_config_dimension_must_be_a_plausible_integer(client: TestClient, path: str, key: str, literal: str) -> None:
    body = json.dumps({"hf_config": CONFIG | {key: "\x00"}, "tokens": "1M", "gpu": "H100"})
    response = client.post(path, content=body.replace('"\\u0000"', literal), headers=JSON)
    _refused(response, f"hf_config.{key}")


def test_a_multimodal_config_names_the_nested_field(client: TestClient) -> None:
    wrapped = {"text_config": CONFIG | {"vocab_size": 0}}
    response = client.post("/v1/estimate", json={"hf_config": wrapped, "tokens": "1M", "gpu": "H100"})
    _refused(response, "hf_config.text_config.vocab_size")
    # A real config still passes, plain or wrapped.
    config: dict[str, Any]
    for config in (CONFIG, {"text_config": CONFIG}):
        response = client.post("/v1/estimate", json={"hf_config": config, "tokens": "1M", "gpu": "H100"})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("path", JOB_ROUTES)
@pytest.mark.parametrize("tokens", [1e308, 2e15, "1e300", "2000T"])
def test_training_tokens_are_bounded(client: TestClient, path: str, tokens: Any) -> None:
    _refused(client.post(path, json={"model": "llama-3.1-8b", "tokens": tokens, "gpu": "H100"}), "tokens")


@pytest.mark.parametrize("path", JOB_ROUTES)
def test_the_examples_form_is_bounded_too(client: TestClient, path: str) -> None:
    job = {"model": "llama-3.1-8b", "examples": 10**12, "tokens_per_example": 10**9, "epochs": 1e6, "gpu": "H100"}
    _refused(client.post(path, json=job), "examples")


LARGEST = {
    "hidden_size": 1 << 16,
    "num_attention_heads": 1 << 10,
    "head_dim": 1 << 11,
    "intermediate_size": 1 << 19,
    "num_hidden_layers": 1 << 10,
    "vocab_size": 1 << 22,
    "num_local_experts": 1 << 10,
    "num_experts_per_tok": 1 << 10,
    "max_position_embeddings": 1 << 30,
}


def test_a_job_past_any_plausible_compute_is_refused(client: TestClient) -> None:
    # 1e15 tokens is allowed on its own, but not through the largest model a config may describe: hours
    # stayed finite, but its cost overflowed the Decimal rounding of money.
    job: dict[str, Any] = {"hf_config": LARGEST, "method": "full", "tokens": 1e15}
    body = _refused(client.post("/v1/rank", json=job), "tokens")
    assert "FLOPs" in body["detail"]
    # The largest catalog model on the longest context it has, at the token limit, is still a job.
    big = {"model": "llama-3.1-405b", "method": "full", "tokens": 1e15, "seq_len": 131072}
    assert client.post("/v1/rank", json=big).status_code == 200
    # Under the limit, every figure of the largest model a config may describe is finite, at any price.
    job = {"hf_config": LARGEST, "method": "full", "tokens": 1e8, "assumptions": "seed"}
    extras: list[tuple[str, dict[str, Any]]] = [
        ("/v1/estimate", {"price": 1_000_000, "gpus": 1 / 1024, "memory_gb": 1}),
        ("/v1/estimate", {"price": 1_000_000, "gpus": 1024}),
        ("/v1/rank", {"include_unfit": True, "limit": 1000}),
        ("/v1/rank/history", {"gpu": "H100", "days": 7}),
    ]
    for path, extra in extras:
        response = client.post(path, json=job | extra)
        assert response.status_code == 200, (path, response.text)


def test_a_thinner_slice_than_1_1024_is_refused(client: TestClient) -> None:
    job = JOB | {"gpu": "H100", "gpus": 1e-300, "memory_gb": 1, "price": 2}
    _refused(client.post("/v1/estimate", json=job), "gpus")


@pytest.mark.parametrize("path", JOB_ROUTES)
def test_a_deeply_nested_config_is_refused_before_it_is_used(client: TestClient, path: str) -> None:
    deep = '{"a": ' * 900 + "1" + "}" * 900
    body = json.dumps({"hf_config": CONFIG | {"extra": "\x00"}, "tokens": "1M", "gpu": "H100"})
    response = client.post(path, content=body.replace('"\\u0000"', deep), headers=JSON)
    _refused(response, "hf_config")
    # A deep body as a whole was always refused: 422 at 900 levels, 400 past the JSON parser's depth.
    assert client.post(path, content="[" * 900 + "]" * 900, headers=JSON).status_code == 422
    assert client.post(path, content="[" * 100_000 + "]" * 100_000, headers=JSON).status_code in (400, 413, 422)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"end": "0001-01-01T00:00:00+05:00"}, "end"),
        ({"end": "0001-01-01T00:00:00Z"}, "end"),
        ({"start": "0001-01-01T00:00:00+05:00", "end": "2026-01-01T00:00:00Z"}, "start"),
        ({"start": "0001-01-01T00:00:00+05:00", "end": "0001-01-01T00:00:00Z"}, "end"),
        ({"start": "9999-12-30T00:00:00Z", "end": "9999-12-31T23:59:59Z"}, "end"),
        ({"start": "9999-12-30T00:00:00Z"}, "start"),
        ({"start": "2026-01-01T00:00:00Z", "end": "9999-12-31T23:59:59-05:00"}, "end"),
        ({"start": "1999-12-31T23:00:00+05:00"}, "start"),
        ({"start": "2026-01-02T00:00:00"}, "start"),
        ({"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "start"),
    ],
)
def test_history_bounds_outside_the_calendar_window_are_refused(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    _refused(client.get("/v1/market/history", params={"gpu": "H100", **params}), field)
    inside = {"gpu": "H100", "start": "2000-01-01T00:00:00Z", "end": "2099-12-31T00:00:00+05:00", "interval": "1w"}
    assert client.get("/v1/market/history", params=inside).status_code == 200


@pytest.mark.parametrize(
    "until",
    [
        "0001-01-01T00:00:00+05:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59-05:00",
        "9999-12-31T23:59:59Z",
        "2100-01-01T00:00:00Z",
    ],
)
def test_a_silence_at_the_calendar_edges_is_refused(client: TestClient, until: str) -> None:
    _refused(client.post("/v1/alerts", json=ALERT | {"silenced_until": until}, headers=AUTH), "silenced_until")
    created = client.post("/v1/alerts", json=ALERT, headers=AUTH)
    assert created.status_code == 201, created.text
    rule = created.json()["id"]
    _refused(client.patch(f"/v1/alerts/{rule}", json={"silenced_until": until}, headers=AUTH), "silenced_until")
    # Nothing was stored: the rule still reads back.
    assert client.get(f"/v1/alerts/{rule}", headers=AUTH).json()["silenced_until"] is None
    silenced = client.patch(f"/v1/alerts/{rule}", json={"silenced_until": "2099-01-01T00:00:00Z"}, headers=AUTH)
    assert silenced.status_code == 200 and silenced.json()["silenced_until"].startswith("2099-01-01")

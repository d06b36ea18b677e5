"""POST /v1/estimate, GET /v1/models, GET /v1/gpus, GET /v1/assumptions on a bare FastAPI app."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.routes.estimate import router
from tracker.catalog.gpus import get_catalog


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(router)
    return TestClient(app)


def test_seed_figures_over_http(client):
    r = client.post(
        "/v1/estimate",
        json={
            "model": "llama-3.1-8b",
            "method": "qlora",
            "examples": 5000,
            "tokens_per_example": 1500,
            "epochs": 3,
            "gpu": "A100 SXM 40GB",
            "price": "1.19",
            "assumptions": "seed",
        },
    )
    assert r.status_code == 200, r.text
    (row,) = r.json()["rows"]
    assert row["gpu"] == "A100-SXM-40GB" and row["assumptions"] == "seed"
    assert row["tokens_per_second"] == pytest.approx(1943, rel=0.005)
    assert row["hours"] == pytest.approx(3.22, rel=0.005)
    assert float(row["cost_per_run"]) == pytest.approx(3.83, rel=0.005)
    assert float(row["usd_per_mtok"]) == pytest.approx(0.170, rel=0.005)
    for key in ("gpus", "vram_gb", "vram_breakdown", "fits"):
        assert key in row


def test_same_answer_as_the_cli_path(client):
    from tracker.estimate.service import EstimateRequest, run_estimate

    body = {"model": "qwen2.5-32b", "method": "qlora", "tokens": "5M", "gpu": "H100", "gpus": 8, "price": 2.5}
    r = client.post("/v1/estimate", json=body)
    direct = run_estimate(EstimateRequest(**body))
    assert [x["vram_gb"] for x in r.json()["rows"]] == [x["vram_gb"] for x in direct["rows"]]
    assert r.json()["assumptions"]["name"] == "hf-peft"


def test_multi_gpu_and_inline_hf_config(client):
    r = client.post(
        "/v1/estimate",
        json={
            "hf_config": {
                "model_type": "llama",
                "hidden_size": 8192,
                "intermediate_size": 28672,
                "num_hidden_layers": 80,
                "num_attention_heads": 64,
                "num_key_value_heads": 8,
                "vocab_size": 128256,
                "max_position_embeddings": 131072,
            },
            "method": "lora",
            "tokens": 8_000_000,
            "gpu": "H100 SXM",
            "gpus": 2,
            "assumptions": "seed",
        },
    )
    assert r.status_code == 200, r.text
    row = r.json()["rows"][0]
    assert row["gpus"] == 2 and row["fits"] is True


def test_unknown_model_is_404_with_suggestions(client):
    r = client.post("/v1/estimate", json={"model": "qwen2.5-33b", "tokens": "1M"})
    assert r.status_code == 404
    body = r.json()
    assert body["field"] == "model" and "qwen2.5-32b" in body["suggestions"]


def test_unknown_gpu_is_404_with_suggestions(client):
    r = client.post("/v1/estimate", json={"model": "llama-3.1-8b", "tokens": "1M", "gpu": "H900"})
    assert r.status_code == 404
    assert r.json()["field"] == "gpu" and r.json()["suggestions"]


def test_unknown_assumption_set_is_404_with_suggestions(client):
    r = client.post("/v1/estimate", json={"model": "llama-3.1-8b", "tokens": "1M", "assumptions": "nope"})
    assert r.status_code == 404
    assert r.json()["field"] == "assumptions" and "hf-peft" in r.json()["suggestions"]


def test_server_paths_are_never_opened(client, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 64}))
    r = client.post("/v1/estimate", json={"model": str(path), "tokens": "1M"})
    assert r.status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "llama-3.1-8b", "tokens": 0}, "tokens"),
        ({"model": "llama-3.1-8b", "tokens": "-3M"}, "tokens"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "seq_len": 500000}, "seq_len"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "gpus": 0.5}, "memory_gb"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "gpus": 2.5}, "gpus"),
        ({"model": "llama-3.1-8b"}, "tokens"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "lora_targets": "q,bogus"}, "lora_targets"),
    ],
)
def test_bad_values_are_422_naming_the_field(client, body, field):
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "llama-3.1-8b", "tokens": "1M", "rank": 0}, "rank"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "method": "dora"}, "method"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "batch": -1}, "batch"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "price": -2}, "price"),
        ({"model": "llama-3.1-8b", "tokens": "1M", "surprise": 1}, "surprise"),
    ],
)
def test_schema_violations_are_422_naming_the_field(client, body, field):
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 422
    assert any(field in err["loc"] for err in r.json()["detail"])


def test_model_or_config_exactly_once(client):
    assert client.post("/v1/estimate", json={"tokens": "1M"}).status_code == 422
    assert client.post("/v1/estimate", json={"model": "7B", "hf_config": {}, "tokens": "1M"}).status_code == 422


def test_models_gpus_and_assumptions_listings(client):
    models = client.get("/v1/models").json()
    ids = {m["id"] for m in models["models"]}
    assert {
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "qwen2.5-72b",
        "mixtral-8x7b",
        "gemma-2-27b",
        "phi-3-mini",
    } <= ids
    eight = next(m for m in models["models"] if m["id"] == "llama-3.1-8b")
    assert eight["params_b"] == pytest.approx(8.03, abs=0.01)
    gpus = client.get("/v1/gpus").json()
    assert gpus["count"] == len(get_catalog().all())
    assert {g["family"] for g in client.get("/v1/gpus", params={"gpu": "H100"}).json()["gpus"]} == {"H100"}
    assert client.get("/v1/gpus", params={"gpu": "Z9000"}).status_code == 404
    sets = client.get("/v1/assumptions").json()
    assert sets["default"] == "hf-peft"
    assert {s["name"] for s in sets["sets"]} == {"seed", "hf-peft", "optimized"}


def test_fine_tuning_with_tensor_parallel_selective_checkpointing_and_a_loss_over_http(client):
    body = {"model": "llama-3.1-70b", "method": "full", "tokens": "1M", "gpu": "H100 SXM", "gpus": 8}
    body |= {"stack": "torchtune", "tensor_parallel": 8, "selective_checkpointing": True, "loss": "chunked"}
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    row = r.json()["rows"][0]
    assert row["tensor_parallel"] == 8 and row["selective_checkpointing"] is True and row["loss"] == "chunked"
    refused = client.post("/v1/estimate", json=body | {"stack": "hf", "loss": None})
    assert refused.status_code == 422 and refused.json()["field"] == "selective_checkpointing"

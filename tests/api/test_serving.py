"""Serving jobs (kind inference) through every shell: POST /v1/estimate, POST /v1/rank, /v1/rank/history
and the CLI's `estimate` and `cheapest`, on the seed's reference prices (providers/sheets/reference.toml)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient

from providers.sheet import load_sheet, parse_sheet
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow

SERVING_70B = {
    "kind": "inference",
    "model": "llama-3.1-70b",
    "precision": "fp8",
    "prompt_tokens": 1000,
    "output_tokens": 200,
    "concurrency": 64,
}
SERVING_8B = {
    "kind": "inference",
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "prompt_tokens": 1000,
    "output_tokens": 200,
    "concurrency": 1,
}


def _reference_rates() -> dict[str, Decimal]:
    return {r["gpu"]: Decimal(r["price_per_gpu_hour"]) for r in load_sheet("reference")["rates"]}


@pytest.fixture
def machines(engine, settings):
    """Machines of 1, 2, 4 and 8 GPUs of every reference card at the sheet's $/GPU-hour."""
    clock = FakeClock(utcnow())
    offers = [
        offer(f"{gpu}-{n}", str(price * n), gpu=gpu, count=n)
        for gpu, price in _reference_rates().items()
        for n in (1, 2, 4, 8)
    ]
    do_ingest(engine, settings, clock, batch(*offers))
    yield clock


@pytest.fixture
def reference_sheet(engine, settings):
    clock = FakeClock(utcnow())
    do_ingest(engine, settings, clock, parse_sheet(load_sheet("reference")), provider="reference")
    yield clock


@pytest.fixture
def client(settings, engine):
    from api.app import create_app

    with TestClient(create_app(settings, engine)) as c:
        yield c


def test_estimate_returns_memory_speed_latency_money_terms_and_band(client) -> None:
    r = client.post(
        "/v1/estimate",
        json=SERVING_70B | {"gpu": "H100-SXM-80GB", "gpus": 2, "price": "2.69", "tokens_per_month": "10B"},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "inference" and body["job"]["precision"] == "fp8"
    (row,) = body["rows"]
    assert row["fits"] and row["gpus"] == 2 and row["tensor_parallel"] == 2
    assert set(row["vram_breakdown"]) == {"weights", "kv_cache", "activations", "runtime", "engine_reserve"}
    assert set(row["step_time_breakdown"]) == set(body["step_terms"])
    keys = (
        "tokens_per_second",
        "per_user_tokens_per_second",
        "ttft_s",
        "requests_per_second",
        "usd_per_mtok",
        "usd_per_mtok_output",
        "usd_per_mtok_input",
        "gpus_needed",
        "monthly_cost",
    )
    for key in keys:
        assert row[key] is not None and row[key] > 0, key
    low, high = row["band"]["tokens_per_second"]
    assert low < row["tokens_per_second"] < high
    assert row["band"]["usd_per_mtok"][0] < row["usd_per_mtok"] < row["band"]["usd_per_mtok"][1]
    # Money follows the one rule: the price of 2 GPUs over the aggregate output tokens/s.
    per_hour = 2 * 2.69
    assert row["usd_per_mtok"] == pytest.approx(per_hour / (row["tokens_per_second"] * 3600) * 1e6, rel=1e-3)


def test_estimate_without_a_gpu_count_picks_the_smallest_machine(client) -> None:
    rows = client.post("/v1/estimate", json=SERVING_70B | {"gpu": "H100-SXM-80GB"}).json()["rows"]
    assert rows[0]["gpus"] == 2 and rows[0]["fits"]


def test_fp8_on_a100_is_refused_naming_precision(client) -> None:
    r = client.post("/v1/estimate", json=SERVING_70B | {"gpu": "A100-SXM-80GB"})
    assert r.status_code == 422
    assert r.json()["field"] == "precision" and "FP8" in r.json()["detail"]


WRONG_KIND = [
    ({"rank": 8}, "rank"),
    ({"tokens": "1M"}, "tokens"),
    ({"precision": "mixed"}, "precision"),
    ({"engine": "tgi"}, "engine"),
]


@pytest.mark.parametrize(("extra", "field"), WRONG_KIND)
def test_wrong_kind_fields_are_4xx_naming_them(client, extra: dict[str, object], field: str) -> None:
    r = client.post("/v1/estimate", json=SERVING_8B | extra)
    assert 400 <= r.status_code < 500
    assert field in json.dumps(r.json())


def test_serving_field_on_a_fine_tune_job_is_4xx(client) -> None:
    r = client.post("/v1/estimate", json={"model": "llama-3.1-8b", "tokens": "1M", "concurrency": 8})
    assert 400 <= r.status_code < 500 and "concurrency" in json.dumps(r.json())


def test_rank_70b_fp8_high_concurrency_puts_hopper_above_a100(client, machines) -> None:
    body = SERVING_70B | {"sort_by": "usd_per_mtok", "best_per_card": True, "include_unfit": True}
    rows = client.post("/v1/rank", json=body).json()["rows"]
    fitting = [r["gpu"] for r in rows if r["fits"]]
    assert fitting[:2] == ["H200-SXM-141GB", "H100-SXM-80GB"]
    a100 = [r for r in rows if r["gpu"].startswith("A100")]
    assert a100 and not any(r["fits"] for r in a100)  # fp8: no FP8 tensor cores on Ampere


def test_rank_70b_bf16_on_a100_still_loses_to_fp8_hopper(client, machines) -> None:
    fp8 = client.post("/v1/rank", json=SERVING_70B | {"sort_by": "usd_per_mtok", "best_per_card": True}).json()
    bf16 = client.post(
        "/v1/rank",
        json=SERVING_70B | {"precision": "bf16", "gpu": "A100", "sort_by": "usd_per_mtok", "best_per_card": True},
    ).json()
    best_hopper = min(r["usd_per_mtok"] for r in fp8["rows"] if r["gpu"].startswith(("H100", "H200")))
    best_a100 = min(r["usd_per_mtok"] for r in bf16["rows"])
    assert best_hopper < best_a100 / 2


def test_rank_8b_one_user_ranks_a_cheap_card_first(client, reference_sheet) -> None:
    # The reference sheet is months old (stale): asked for, as a user comparing published rates would.
    body = SERVING_8B | {"sort_by": "usd_per_mtok", "include_stale": True}
    rows = client.post("/v1/rank", json=body).json()["rows"]
    assert rows[0]["gpu"] == "RTX4090-24GB"
    assert rows[0]["usd_per_mtok"] < min(r["usd_per_mtok"] for r in rows if r["gpu"].startswith(("H100", "H200")))


def test_rank_history_prices_serving_per_day(client, reference_sheet) -> None:
    body = SERVING_8B | {"gpu": "RTX 4090", "days": 1}
    r = client.post("/v1/rank/history", json=body)
    assert r.status_code == 200, r.text
    (series,) = r.json()["series"]
    point = series["points"][-1]
    assert point["usd_per_mtok"] == pytest.approx(0.44 / (series["tokens_per_second"] * 3600) * 1e6, rel=2e-3)


def test_cli_estimate_and_cheapest(cli, machines) -> None:
    out = cli(
        "estimate",
        "--kind",
        "inference",
        "--model",
        "llama-3.1-70b",
        "--precision",
        "fp8",
        "--concurrency",
        "64",
        "--gpu",
        "H100-SXM-80GB",
        "--price",
        "2.69",
        "--json",
    )
    assert out.exit_code == 0, out.stdout
    (row,) = json.loads(out.stdout)["rows"]
    assert row["gpus"] == 2 and row["fits"] and row["usd_per_mtok_input"] is not None
    refused = cli(
        "estimate", "--kind", "inference", "--model", "llama-3.1-70b", "--precision", "fp8", "--gpu", "A100-SXM-80GB"
    )
    assert refused.exit_code != 0 and "precision fp8" in refused.output
    ranked = cli(
        "cheapest",
        "--kind",
        "inference",
        "--model",
        "llama-3.1-70b",
        "--precision",
        "fp8",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "200",
        "--concurrency",
        "64",
        "--tokens-per-month",
        "10B",
        "--sort",
        "usd_per_mtok",
        "--best-per-card",
        "--json",
    )
    assert ranked.exit_code == 0, ranked.output
    assert [r["gpu"] for r in json.loads(ranked.stdout)][:2] == ["H200-SXM-141GB", "H100-SXM-80GB"]
    table = cli("cheapest", "--kind", "inference", "--model", "llama-3.1-8b", "--concurrency", "1", "--top", "3")
    assert table.exit_code == 0 and "1 users" in table.stdout


def test_rank_with_a_tensor_parallel_degree_skips_the_offers_it_does_not_divide(client, machines) -> None:
    # The market holds 1-GPU machines that TP 2 cannot use: they do not fit; the ranking still answers.
    r = client.post("/v1/rank", json=SERVING_70B | {"tensor_parallel": 2, "limit": 500})
    assert r.status_code == 200, r.text
    rows = r.json()["rows"]
    fitting = [row for row in rows if row["fits"]]
    assert fitting and all(row["gpus"] % 2 == 0 for row in fitting)
    explicit = client.post("/v1/estimate", json=SERVING_70B | {"tensor_parallel": 2, "gpu": "H100 SXM", "gpus": 1})
    assert explicit.status_code == 422 and explicit.json()["field"] == "tensor_parallel"


def test_rank_an_8_gpu_node_within_15_percent_of_one_card_at_a_load_that_fills_it(client, machines) -> None:
    # 8B fits one H100: 2,048 users fill 8 replicas of vLLM's 256 running sequences; the node's row says
    # its layout and prices within 15 % of one card's $/Mtok (one copy over 8 GPUs was 8x dearer).
    body = SERVING_8B | {"concurrency": 2048, "gpu": "H100-SXM-80GB", "sort_by": "usd_per_mtok", "limit": 50}
    rows = {r["gpus"]: r for r in client.post("/v1/rank", json=body).json()["rows"]}
    one, node = rows[1], rows[8]
    assert node["layout"] == "8 x TP1" and node["gpus_idle"] == 0 and node["concurrency_per_replica"] == 256
    assert node["usd_per_mtok"] == pytest.approx(one["usd_per_mtok"], rel=0.15)
    for r in (one, node):  # traffic, not a run
        assert "cost_per_run" not in r and "hours" not in r and r["kind"] == "inference"
        assert r["pricing"] == "on_demand"


def test_rank_a_card_that_cannot_run_the_job_says_why(client, machines) -> None:
    body = SERVING_70B | {"gpu": "A100", "include_unfit": True, "sort_by": "usd_per_mtok"}
    rows = client.post("/v1/rank", json=body).json()["rows"]
    assert rows and all(not r["fits"] and "fp8 unsupported" in r["reason"] for r in rows)
    # It says why, and shows no throughput, latency or price beside `fits: false`.
    for key in ("tokens_per_second", "ttft_s", "usd_per_mtok", "usd_per_mtok_output", "monthly_cost"):
        assert all(r[key] is None for r in rows), key


def test_cli_lists_a_card_that_cannot_run_the_job_with_its_reason_and_no_speed(cli, machines) -> None:
    args = ("--kind", "inference", "--model", "llama-3.1-8b", "--precision", "fp8", "--gpu", "A100-SXM-80GB")
    out = cli("cheapest", *args, "--show-unfit", "--json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert rows and all(r["tokens_per_second"] is None and r["usd_per_mtok"] is None for r in rows)
    table = cli("cheapest", *args, "--show-unfit", "--wide")
    assert table.exit_code == 0, table.output
    assert "fp8 unsupported" in table.stdout and "1,724" not in table.stdout


def test_stale_rate_sheets_are_left_out_of_a_serving_ranking_unless_asked(client, reference_sheet, settings) -> None:
    # The reference sheet's prices were read on its `as_of`, months before today: stale
    # (tracker.market.freshness.sheet_ages). The ranking leaves it out; include_stale brings it back, labelled.
    from tracker.market import freshness

    assert "reference" in freshness.stale_sheets(utcnow(), settings)
    default = client.post("/v1/rank", json=SERVING_8B)
    assert default.status_code == 200, default.text
    assert default.json()["rows"] == [] and default.json()["considered"] == 0
    asked = client.post("/v1/rank", json=SERVING_8B | {"include_stale": True}).json()["rows"]
    assert asked and all(r["provider"] == "reference" and r["stale_sheet"] for r in asked)


def test_cli_include_stale_brings_a_stale_sheet_back_and_labels_it(cli, reference_sheet) -> None:
    args = ("cheapest", "--kind", "inference", "--model", "llama-3.1-8b", "--concurrency", "1", "--wide")
    assert "reference" not in cli(*args, "--json").stdout
    default = cli(*args)  # nothing ranked: it says why, not only an empty table
    assert default.exit_code == 0, default.output
    assert "reference: rate sheet past its age, left out (--include-stale ranks it)" in default.stderr
    rows = json.loads(cli(*args, "--include-stale", "--json").stdout)
    assert rows and all(r["stale_sheet"] for r in rows)
    table = cli(*args, "--include-stale")
    assert table.exit_code == 0, table.output
    assert "reference (ref) (stale)" in table.stdout


def test_a_stale_sheet_named_as_the_provider_is_asked_for(client, reference_sheet) -> None:
    rows = client.post("/v1/rank", json=SERVING_8B | {"providers": ["reference"]}).json()["rows"]
    assert rows and all(r["provider"] == "reference" and r["stale_sheet"] for r in rows)

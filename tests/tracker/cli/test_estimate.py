"""`gpu-tracker estimate` and `gpu-tracker calibrate` end to end (no database involved)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import tracker.cli.estimate  # noqa: F401  (registers the commands)
from tracker.catalog.gpus import get_catalog
from tracker.cli.root import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def run_json(*args: str):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_seed_8b_qlora_on_the_h100():
    out = run_json(
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--method",
        "qlora",
        "--assumptions",
        "seed",
        "--examples",
        "5000",
        "--tokens-per-example",
        "1500",
        "--epochs",
        "3",
        "--gpu",
        "H100 SXM",
        "--price",
        "2.69",
    )
    assert out["assumptions"]["name"] == "seed"
    (row,) = out["rows"]
    assert row["gpu"] == "H100-SXM-80GB" and row["gpus"] == 1 and row["assumptions"] == "seed"
    assert row["tokens_per_second"] == pytest.approx(6158, rel=0.005)
    assert row["hours"] == pytest.approx(1.01, rel=0.005)
    assert row["cost_per_run"] == pytest.approx(2.73, rel=0.005)
    assert row["usd_per_mtok"] == pytest.approx(0.121, rel=0.005)
    assert row["vram_gb"] == pytest.approx(6.2, rel=0.05)
    assert row["fits"] is True
    assert set(row["vram_breakdown"]) >= {"base_weights", "trainable_state", "activations", "runtime_overhead"}
    assert sum(row["vram_breakdown"].values()) == pytest.approx(row["vram_gb"], abs=0.02)


def test_seed_70b_qlora_cost_table():
    out = run_json(
        "estimate",
        "-m",
        "llama-3.1-70b",
        "--method",
        "qlora",
        "-a",
        "seed",
        "--tokens",
        "8M",
        "--gpu",
        "L40S",
        "--price",
        "1.19",
    )
    (row,) = out["rows"]
    assert row["hours"] == pytest.approx(8.67, rel=0.005)
    assert row["cost_per_run"] == pytest.approx(10.31, rel=0.005)


def test_without_gpu_every_catalog_card_gets_a_row():
    out = run_json("estimate", "--model", "qwen2.5-32b", "--tokens", "10M")
    assert len(out["rows"]) == len(get_catalog().all())
    assert out["assumptions"]["name"] == "hf-peft" and out["assumptions"]["default"] is True
    fits = [r["fits"] for r in out["rows"]]
    assert fits == sorted(fits, reverse=True)  # cards the job fits come first
    assert all("cost_per_run" in r and r["cost_per_run"] is None for r in out["rows"])


def test_70b_bf16_lora_fits_two_h100s_but_not_an_h200():
    pair = run_json(
        "estimate",
        "-m",
        "llama-3.1-70b",
        "--method",
        "lora",
        "-a",
        "seed",
        "--tokens",
        "8M",
        "--gpu",
        "H100 SXM",
        "--gpus",
        "2",
    )
    assert pair["rows"][0]["fits"] is True and pair["rows"][0]["gpus"] == 2
    h200 = run_json(
        "estimate", "-m", "llama-3.1-70b", "--method", "lora", "-a", "seed", "--tokens", "8M", "--gpu", "H200"
    )
    assert h200["rows"] and not any(r["fits"] for r in h200["rows"])
    assert all(r["vram_gb"] == pytest.approx(146.6, rel=0.05) for r in h200["rows"])


def test_human_output_names_the_assumption_set_and_components():
    result = run("estimate", "--model", "llama-3.1-8b", "--tokens", "22.5M", "--gpu", "H100 SXM", "--price", "2.69")
    assert result.exit_code == 0, result.output
    assert "assumptions: hf-peft (default)" in result.output
    for word in ("base_weights", "unquantized_weights", "logits", "runtime_overhead", "tok/s", "$/run"):
        assert word in result.output
    seed = run(
        "estimate", "--model", "llama-3.1-8b", "--tokens", "22.5M", "--gpu", "H100 SXM", "-a", "seed", "--price", "2.69"
    )
    assert "assumptions: seed" in seed.output and "6,158" in seed.output and "$2.73" in seed.output


def test_model_as_size_and_as_config_file(tmp_path):
    out = run_json("estimate", "--model", "7B", "--tokens", "1M", "--gpu", "A100 SXM 80GB")
    assert out["job"]["model_approximate"] is True
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "model_type": "mistral",
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 32000,
                "max_position_embeddings": 32768,
            }
        )
    )
    out = run_json("estimate", "--model", str(config), "--tokens", "1M", "--gpu", "A100 SXM 80GB")
    assert out["job"]["params"] == 7_241_732_096


def test_fractional_gpu_needs_memory():
    bad = run("estimate", "--model", "llama-3.1-8b", "--tokens", "1M", "--gpu", "H100 SXM", "--gpus", "0.5")
    assert bad.exit_code == 2 and "memory" in bad.output
    out = run_json(
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "1M",
        "--gpu",
        "H100 SXM",
        "--gpus",
        "0.5",
        "--memory-gb",
        "40",
    )
    assert out["rows"][0]["gpus"] == 0.5 and out["rows"][0]["memory_gb"] == 40


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "llama-3.1-8x", "--tokens", "1M"], "did you mean llama-3.1-8b"),
        (["--model", "llama-3.1-8b", "--tokens", "0"], "tokens must be positive"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--rank", "0"], "rank"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--seq-len", "999999"], "maximum context"),
        (["--model", "llama-3.1-8b"], "amount of training"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--gpu", "H900"], "unknown GPU"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--assumptions", "magic"], "unknown assumption set"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--method", "dora"], "method"),
        (["--model", "llama-3.1-8b", "--tokens", "1M", "--price", "free"], "price"),
    ],
)
def test_bad_input_is_a_clear_error(args, message):
    result = run("estimate", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_calibrate_prints_per_row_errors():
    result = run("calibrate")
    assert result.exit_code == 0, result.output
    assert "assumptions: hf-peft" in result.output
    assert "median |error|" in result.output and "C23" in result.output and "leave-one-out" in result.output
    seed = run("calibrate", "--assumptions", "seed")
    assert seed.exit_code == 0 and "C1" in seed.output and "implausible" in seed.output


def test_calibrate_json():
    out = run_json("calibrate", "--assumptions", "optimized")
    assert out["assumptions"] == "optimized"
    assert out["median_abs_tokens_per_second_error"] is not None
    assert out["median_abs_vram_error"] is not None
    row = next(r for r in out["rows"] if r["id"] == "C10")
    assert row["estimated_tokens_per_second"] and row["tokens_per_second_error"] is not None
    bad = run("calibrate", "--assumptions", "nope")
    assert bad.exit_code == 2 and "unknown assumption set" in bad.output


def test_fine_tuning_layout_checkpointing_and_loss_options_on_the_command_line():
    args: tuple[str, ...] = ("estimate", "-m", "llama-3.1-70b", "--method", "full", "--tokens", "1B")
    args += ("--stack", "torchtune", "--selective-checkpointing", "--loss", "materialized", "--tensor-parallel", "8")
    r = run(*args, "--gpu", "H100 SXM", "--gpus", "8")
    assert r.exit_code == 0, r.output
    assert "checkpointing selective" in r.output and "loss materialized" in r.output and "TP8 inside FSDP" in r.output
    row = run_json(*args, "--gpu", "H100 SXM", "--gpus", "8")["rows"][0]
    assert row["tensor_parallel"] == 8 and row["selective_checkpointing"] is True
    refused = run(*args[:-4], "--loss", "fused", "--gpu", "H100 SXM")
    assert refused.exit_code != 0 and "runs the loss chunked or materialized, not fused" in refused.output

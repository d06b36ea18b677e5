"""`gpu-tracker plan`: the demo market planned end to end, JSON, the schema, and bad files in one line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.factories.offers import batch, do_ingest, offer

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "mixed-fleet.yaml"


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_demo_data_plan_prints_assignment_fleet_single_card_and_power(cli):
    scraped = cli("scrape", "--demo")
    assert scraped.exit_code == 0, scraped.output
    result = cli("plan", str(EXAMPLE), "--power-budget-kw", "500")
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())  # prose wraps at the terminal's width (80 columns here)
    for heading in ("Assignments", "Fleet", "Single card type:", "Power:", "tokens/s per kW"):
        assert heading in out, out
    assert "small-finetune" in out and "big-training" in out
    assert "the mixed fleet saves" in out and "within the 500 kW budget" in out

    as_json = cli("plan", str(EXAMPLE), "--json")
    assert as_json.exit_code == 0, as_json.output
    plan = json.loads(as_json.output)
    assert {"workloads", "fleet", "single_card", "power"} <= set(plan)
    planned = [w for w in plan["workloads"] if w["status"] == "ok"]
    assert {w["name"] for w in planned} >= {"small-finetune", "research-lora", "big-training", "nightly-batch"}
    assert plan["fleet"]["monthly_cost"] == pytest.approx(sum(w["choice"]["monthly_cost"] for w in planned))
    assert plan["single_card"]["saving"] >= 0
    assert plan["power"]["power_kw"] > 0
    # Every workload is accounted for: planned, or named with its reason.
    assert {w["name"] for w in plan["workloads"]} == {
        "small-finetune",
        "research-lora",
        "big-training",
        "nightly-batch",
        "small-serving",
        "big-serving",
    }
    assert all(w["reason"] for w in plan["workloads"] if w["status"] != "ok")


def test_plan_json_on_a_small_market(cli, engine, settings, clock, tmp_path):
    clock.now = datetime.now(UTC)  # the command plans at the real "now": the offer must be live then
    do_ingest(engine, settings, clock, batch(offer("a", "1.00", gpu="A100-SXM-80GB")))
    mix = tmp_path / "mix.json"
    mix.write_text(
        json.dumps(
            {
                "workloads": [
                    {
                        "name": "ft",
                        "kind": "fine-tune",
                        "volume": {"runs_per_month": 3},
                        "job": {"model": "llama-3.1-8b", "tokens": "10M"},
                    }
                ]
            }
        )
    )
    result = cli("plan", str(mix), "--json", "--history", "30")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["workloads"][0]["choice"]["gpu"] == "A100-SXM-80GB"
    assert plan["history"]["days"] == 30 and plan["history"]["statistic"] == "median"


def test_schema_flag_prints_json_schema(cli):
    result = cli("plan", "--schema")
    assert result.exit_code == 0
    assert json.loads(result.output)["title"] == "gpu-tracker workload mix"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "workloads:\n  - name: a\n    kind: fine-tune\n    job: {model: llama-3.1-8b, tokens: 1M}\n"
            "    volume: {runs_per_month: 0}\n",
            "workload 'a' (workloads[0].volume.runs_per_month)",
        ),
        (
            "workloads:\n  - name: a\n    kind: nope\n    job: {}\n    volume: {runs_per_month: 1}\n",
            "workload 'a' (workloads[0].kind)",
        ),
        ("workloads: [", "not valid YAML"),
    ],
)
def test_bad_files_fail_in_one_line(cli, tmp_path, text, words):
    path = tmp_path / "mix.yaml"
    path.write_text(text)
    result = cli("plan", str(path))
    assert result.exit_code != 0
    assert words in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_missing_file_and_no_file(cli, tmp_path):
    missing = cli("plan", str(tmp_path / "nope.yaml"))
    assert missing.exit_code != 0 and "cannot read" in missing.output
    none = cli("plan")
    assert none.exit_code != 0 and "--schema" in none.output


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_an_infinite_power_budget_is_refused_not_printed_as_infinity(cli):
    result = cli("plan", str(EXAMPLE), "--power-budget-kw", "inf", "--json")
    assert result.exit_code != 0
    assert "Infinity" not in result.output and "--power-budget-kw" in result.output


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_an_endless_file_is_refused_without_reading_it_whole(cli, tmp_path):
    import os
    import threading

    from tracker.plan.mix import MAX_SOURCE_CHARS

    fifo = tmp_path / "mix.yaml"
    os.mkfifo(fifo)
    closed = threading.Event()

    def write() -> None:  # past the limit, then the stream stays open: a reader of the whole file waits
        try:
            with fifo.open("w") as out:
                out.write("a" * (MAX_SOURCE_CHARS + 2))
                out.flush()
                closed.wait(5)
        except BrokenPipeError:
            pass
        closed.set()

    writer = threading.Thread(target=write)
    writer.start()
    result = cli("plan", str(fifo))
    ended_first = not closed.is_set()
    closed.set()
    writer.join()
    assert ended_first, "the CLI read the whole stream before refusing it"
    assert result.exit_code != 0 and "over 1,000,000 characters" in result.output
    assert len(result.output.strip().splitlines()) == 1

"""`gpu-tracker alerts add --plan FILE` on both backends: a plan rule from a mix file, listed readably at 80
columns, shown; a bad mix (or a misuse of the plan options) is one line and exit 2, and nothing is stored."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

import tracker.cli  # noqa: F401  (registers every command)
from tests.factories.alerts import ingest_prices, offer
from tracker.clock import utcnow

A100, H100 = "A100-SXM-80GB", "H100-SXM-80GB"
MIX_YAML = """\
workloads:
  - name: small-finetune
    kind: fine-tune
    job: {model: llama-3.1-8b, tokens: 10M}
    volume: {runs_per_month: 3}
    constraints: {pricing: [on_demand]}
"""


@pytest.fixture
def mix_file(tmp_path):
    path = tmp_path / "mix.yaml"
    path.write_text(MIX_YAML)
    return path


@pytest.fixture
def market(engine, settings):
    # Live at the real "now", which is when the CLI plans.
    ingest_prices(
        engine, settings, utcnow() - timedelta(minutes=1), offer("a", "1.00", gpu=A100), offer("h", "9.00", gpu=H100)
    )


def test_add_a_plan_rule_list_and_show_it(cli, market, mix_file, monkeypatch):
    added = cli("alerts", "add", "--plan", str(mix_file), "--metric", "plan_monthly_cost", "--below", "1", "--json")
    assert added.exit_code == 0, added.output
    rule = json.loads(added.stdout)
    assert (rule["subject"], rule["metric"], rule["condition"], rule["threshold"]) == (
        "plan",
        "plan_monthly_cost",
        "below",
        1.0,
    )
    assert rule["plan"]["workloads"][0]["name"] == "small-finetune" and rule["last_value"] > 1

    card = cli("alerts", "add", "--plan", str(mix_file), "--metric", "plan_best_card")
    assert card.exit_code == 0, card.output
    assert f"last value {A100}" in " ".join(card.stdout.split())
    assert re.search(r"last value \S+ \(\$[\d,]+\.\d\d/month\)", " ".join(card.stdout.split())), card.stdout

    monkeypatch.setenv("COLUMNS", "80")
    listed = cli("alerts", "list")
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, listed.stdout
    assert "plan_monthly_cost" in listed.stdout and "plan_best_card" in listed.stdout
    monkeypatch.setenv("COLUMNS", "160")  # each cell on one line
    wide = cli("alerts", "list").stdout
    assert "plan_monthly_cost below 1.000000" in wide and "plan_best_card changes" in wide
    assert "--plan (1 workload:" in wide and f"{A100} (" in wide  # the card a best-card rule last saw

    shown = cli("alerts", "show", str(rule["id"]))
    assert shown.exit_code == 0, shown.output
    assert "plan_monthly_cost of the saved plan below 1" in " ".join(shown.stdout.split())


@pytest.mark.parametrize(
    ("mix", "args", "message"),
    [
        ("workloads: []\n", ["--below", "5000"], "--plan: workloads: List should have at least 1 item"),
        (
            MIX_YAML.replace("llama-3.1-8b", "no-such-model"),
            ["--below", "5000"],
            "--plan: workload 'small-finetune' (workloads[0].job.model)",
        ),
        ("workloads: [unclosed\n", ["--below", "5000"], "--plan mix.yaml: not valid YAML"),
        (MIX_YAML, [], "exactly one of --below or --above"),
        (MIX_YAML, ["--metric", "plan_best_card", "--below", "5"], "give neither --below nor --above"),
        (MIX_YAML, ["--below", "5000", "--gpu", "H100"], "exactly one of --gpu"),
        (MIX_YAML, ["--below", "5000", "--metric", "min"], "--metric: a plan alert's metric"),
        (MIX_YAML, ["--below", "5000", "--provider", "vastai"], "--provider: --provider does not apply"),
    ],
)
def test_a_bad_plan_rule_is_one_line_and_exit_2(cli, tmp_path, mix, args, message):
    path = tmp_path / "mix.yaml"
    path.write_text(mix)
    result = cli("alerts", "add", "--plan", str(path), "--metric", "plan_monthly_cost", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert json.loads(cli("alerts", "list", "--json").stdout) == []


def test_a_missing_mix_file_is_one_line(cli, tmp_path):
    result = cli("alerts", "add", "--plan", str(tmp_path / "nope.yaml"), "--below", "5000")
    assert result.exit_code == 2 and "--plan cannot read" in result.output

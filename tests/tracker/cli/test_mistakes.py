"""Mistakes get an error, not an empty answer: one line, a non-zero exit, and what to do instead."""

from __future__ import annotations

import json

import pytest

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow
from tracker.market.live import LIVE

JOB = ("--model", "llama-3.1-8b", "--method", "qlora", "--tokens", "22.5M")


def _one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.fixture
def priced(engine, settings):
    LIVE.clear()
    do_ingest(engine, settings, FakeClock(utcnow()), batch(offer("h100", "2.50", gpu="H100 SXM5 80GB")))
    yield
    LIVE.clear()


@pytest.mark.parametrize(
    "args",
    [
        ("offers", "--provider", "lambda"),
        ("cheapest", *JOB, "--provider", "lambda"),
        ("availability", "H100", "--provider", "lambda"),
        ("alerts", "add", "--gpu", "H100", "--below", "1", "--provider", "lambda"),
    ],
)
def test_an_unknown_provider_names_the_near_ones(cli, priced, args):
    line = _one_line_error(cli(*args))
    assert "--provider" in line and "'lambda'" in line and "did you mean lambdalabs" in line
    assert len(line) < 200  # the near names, not all fifty


@pytest.mark.parametrize(
    "args", [("offers",), ("cheapest", *JOB), ("availability", "H100"), ("history", "H100"), ("terms", "H100")]
)
def test_an_empty_database_says_to_scrape(cli, args):
    LIVE.clear()
    line = _one_line_error(cli(*args), code=1)
    assert "no prices yet: run `gpu-tracker scrape` (or `make up DEMO=1`)" in line


def test_an_empty_database_in_json_is_the_empty_list_with_the_reason_on_stderr(cli):
    LIVE.clear()
    result = cli("offers", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    assert "no prices yet" in result.stderr


def test_an_empty_answer_from_a_priced_database_is_no_error(cli, priced):
    result = cli("offers", "--gpu", "4090", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


@pytest.mark.parametrize("command", [("offers",), ("cheapest", *JOB), ("alerts", "add", "--below", "1")])
def test_a_card_generation_that_does_not_exist_is_refused(cli, priced, command):
    line = _one_line_error(cli(*command, "--gpu", "H100 SXM6"))
    assert "H100 SXM6" in line and "SXM5" in line


def test_a_real_generation_still_resolves(cli, priced):
    result = cli("offers", "--gpu", "H100 SXM5", "--json")
    assert result.exit_code == 0 and [r["gpu"] for r in json.loads(result.stdout)] == ["H100-SXM-80GB"]


@pytest.mark.parametrize("command", ["estimate", "cheapest"])
def test_a_fine_tuning_flag_on_an_inference_job_is_refused_even_at_its_default(cli, priced, command):
    # qlora is the method's default: the flag was typed all the same, and an inference job has no method.
    line = _one_line_error(cli(command, "--kind", "inference", "--model", "llama-3.1-8b", "--method", "qlora"))
    assert "--method" in line and "fine-tuning" in line


def test_the_alert_refusal_names_the_cli_flag(cli, priced):
    line = _one_line_error(cli("alerts", "add", "--gpu", "H100", "--above", "1"))
    assert "--allow-firing-now" in line and "allow_immediate" not in line
    assert cli("alerts", "add", "--gpu", "H100", "--above", "1", "--allow-firing-now").exit_code == 0

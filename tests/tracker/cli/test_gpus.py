"""`gpu-tracker gpus`: the catalog table, name resolution, JSON output and clean failures."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import tracker.cli.gpus  # noqa: F401  # registers the command on the shared app
from tracker.catalog.gpus import get_catalog
from tracker.cli.root import app

runner = CliRunner()


def test_lists_the_whole_catalog_as_a_table() -> None:
    result = runner.invoke(app, ["gpus"])
    assert result.exit_code == 0, result.output
    for gpu_id in ("H100-SXM-80GB", "A100-PCIE-40GB", "RTX4090-24GB", "MI300X-192GB", "GAUDI3-128GB"):
        assert gpu_id in result.output
    assert "989" in result.output and "756" in result.output


def test_json_lists_every_card_with_all_fields() -> None:
    result = runner.invoke(app, ["gpus", "--json"])
    assert result.exit_code == 0, result.output
    cards = json.loads(result.stdout)
    assert [c["id"] for c in cards] == [s.id for s in get_catalog().all()]
    h100 = next(c for c in cards if c["id"] == "H100-SXM-80GB")
    assert h100["bf16_tflops"] == 989 and h100["fp8_tflops"] == 1979 and h100["interconnect"] == "nvlink"
    assert {"family", "memory_gb", "form_factor", "bandwidth_tbs", "tdp_w", "aliases", "notes"} <= set(h100)


def test_name_shows_the_cards_it_resolves_to() -> None:
    result = runner.invoke(app, ["gpus", "h100", "--json"])
    assert result.exit_code == 0, result.output
    assert [c["id"] for c in json.loads(result.stdout)] == ["H100-PCIE-80GB", "H100-SXM-80GB", "H100-NVL-94GB"]

    result = runner.invoke(app, ["gpus", "h100 sxm"])
    assert result.exit_code == 0, result.output
    assert "H100-SXM-80GB" in result.output and "H100-PCIE-80GB" not in result.output
    assert "notes:" in result.output  # a single card also shows its aliases and provenance notes


def test_unknown_name_fails_cleanly_with_suggestions() -> None:
    result = runner.invoke(app, ["gpus", "H10"])
    assert result.exit_code == 2
    assert "unknown GPU name 'H10'" in result.stderr and "H100" in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""

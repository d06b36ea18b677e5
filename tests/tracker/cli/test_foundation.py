"""The foundation's CLI paths end to end: db upgrade, scrape (live sheet, replay, demo), offers, providers."""

from __future__ import annotations

import json

import pytest

import tracker.cli  # noqa: F401  (registers every command)
from providers.cassette import bundled_cassette


def test_db_upgrade_is_idempotent(cli):
    result = cli("db", "upgrade")
    assert result.exit_code == 0, result.output
    assert "at revision" in result.output


def test_scrape_reference_twice_adds_no_price_rows(cli):
    first = cli("scrape", "reference", "--json")
    assert first.exit_code == 0, first.output
    (report,) = json.loads(first.stdout)
    assert (report["status"], report["price_rows"], report["offers_valid"]) == ("ok", 7, 7)
    second = cli("scrape", "reference", "--json")
    (report,) = json.loads(second.stdout)
    assert (report["status"], report["price_rows"], report["offers_new"]) == ("ok", 0, 0)


def test_offers_h100_80gb_from_reference(cli):
    cli("scrape", "reference")
    result = cli("offers", "--gpu", "H100 80GB", "--provider", "reference", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 1
    row = rows[0]
    assert row["price_per_gpu_hour"] == 2.69 and row["gpu"] == "H100-SXM-80GB" and row["reference"] is True
    for field in (
        "provider",
        "gpu",
        "gpu_family",
        "gpu_count",
        "gpu_memory_gb",
        "form_factor",
        "pricing",
        "region",
        "price_per_hour",
        "price_per_gpu_hour",
        "first_seen",
        "last_seen",
    ):
        assert field in row


def test_offers_sorted_cheapest_first_and_family_filter(cli):
    cli("scrape", "reference")
    rows = json.loads(cli("offers", "--json").stdout)
    prices = [r["price_per_gpu_hour"] for r in rows]
    assert prices == sorted(prices) and prices[0] == 0.44
    a100 = json.loads(cli("offers", "--gpu", "A100", "--json").stdout)
    assert {r["gpu"] for r in a100} == {"A100-SXM-40GB", "A100-SXM-80GB"}


def test_offers_unknown_gpu_is_a_clear_error(cli):
    result = cli("offers", "--gpu", "Frobnicator 9000")
    assert result.exit_code == 2
    assert "Frobnicator" in result.output and "Traceback" not in result.output


def test_offers_bad_pricing_is_a_clear_error(cli):
    result = cli("offers", "--pricing", "free")
    assert result.exit_code == 2 and "free" in result.output


def test_replay_vast_cassette_and_dry_run(cli):
    dry = cli("scrape", "vastai", "--replay", str(bundled_cassette("vastai")), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    (report,) = json.loads(dry.stdout)
    assert report["price_rows"] > 0 and report["dry_run"] is True
    assert json.loads(cli("offers", "--provider", "vastai", "--json").stdout) == []
    real = cli("scrape", "vastai", "--replay", str(bundled_cassette("vastai")), "--json")
    (report,) = json.loads(real.stdout)
    assert report["status"] == "ok" and report["unknown_names"]  # the cassette carries an unknown card
    rows = json.loads(cli("offers", "--provider", "vastai", "--gpu", "H100", "--json").stdout)
    eight = next(r for r in rows if r["gpu_count"] == 8 and r["pricing"] == "on_demand")
    assert eight["price_per_hour"] == 15.2011 and eight["price_per_gpu_hour"] == pytest.approx(1.900138, abs=1e-6)


def test_replay_missing_cassette_is_a_clear_error(cli, tmp_path):
    result = cli("scrape", "vastai", "--replay", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and "not found" in result.output


def test_unknown_provider_is_a_clear_error(cli):
    result = cli("scrape", "nosuchcloud")
    assert result.exit_code == 2 and "unknown provider" in result.output


def test_demo_scrape_marks_offers_as_demo(cli):
    result = cli("scrape", "--demo", "--json")
    reports = {r["provider"]: r for r in json.loads(result.stdout)}
    assert reports["vastai"]["status"] == "ok"
    assert all(r["status"] in {"ok", "quarantined"} for r in reports.values()), reports
    rows = json.loads(cli("offers", "--provider", "vastai", "--json").stdout)
    assert rows and all(r["demo"] for r in rows)


def test_providers_lists_kind_credentials_and_last_run(cli):
    cli("scrape", "reference")
    rows = {r["name"]: r for r in json.loads(cli("providers", "--json").stdout)}
    assert rows["reference"]["kind"] == "static_sheet"
    assert rows["reference"]["last_run"]["status"] == "ok"
    assert rows["reference"]["current_offers"] == 7
    assert rows["vastai"]["kind"] == "marketplace" and rows["vastai"]["last_run"] is None


def test_scrape_for_people_shows_progress_and_the_table(cli):
    """Without --json the scrape draws a progress bar and a table (rich objects on the lazy console)."""
    result = cli("scrape", "reference")
    assert result.exit_code == 0, result.output
    assert "reference" in result.output and "ok" in result.output


def test_providers_show_their_data_terms(cli):
    rows = {r["name"]: r for r in json.loads(cli("providers", "--json").stdout)}
    terms = rows["vastai"]["terms"]
    assert (terms["url"], terms["republish"], terms["read_on"]) == ("https://vast.ai/terms", "unknown", "2026-12-02")
    assert terms["republished"] is True and terms["why"] == "terms unknown, not cleared: labelled"
    result = cli("providers", "--wide")
    assert result.exit_code == 0 and "unknown (2026-12-02), labelled" in result.output

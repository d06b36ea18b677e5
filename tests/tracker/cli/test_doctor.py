"""`gpu-tracker doctor` on drifted cassettes (offline), and `gpu-tracker record --all`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import tracker.cli  # noqa: F401  (registers every command)
import tracker.cli.scrape as scrape_cli
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import Provider
from providers.registry import all_providers
from tests.factories.cassettes import mutated_cassette

BUNDLES = "POST console.vast.ai/api/v0/bundles"


def vastai_cassette(tmp_path: Path, mutate: Callable[[dict[str, Any]], None], name: str = "drifted.json") -> str:
    """The bundled vastai cassette with `mutate` applied to every offer, saved under `tmp_path`."""

    def each(raw: dict[str, Any]) -> None:
        for interaction in raw["interactions"]:
            for offer in (interaction["response"].get("json") or {}).get("offers", []):
                mutate(offer)

    path = tmp_path / name
    mutated_cassette(VastAi, each).save(path)
    return str(path)


def test_a_missing_field_drifts_and_exits_1(cli, tmp_path):
    result = cli("doctor", "vastai", "--replay", vastai_cassette(tmp_path, lambda o: o.pop("dph_total")))
    assert result.exit_code == 1, result.output
    assert "vastai (replay): drifted" in result.output
    assert f"missing field `offers[].dph_total` in {BUNDLES}" in result.output


def test_a_new_field_is_reported_as_new_and_is_not_drift(cli, tmp_path):
    result = cli("doctor", "vastai", "--replay", vastai_cassette(tmp_path, lambda o: o.update(gpu_arch="hopper")))
    assert result.exit_code == 0, result.output
    assert f"new field `offers[].gpu_arch` in {BUNDLES}" in result.output
    assert "vastai (replay): ok" in result.output


def test_an_unchanged_cassette_exits_0(cli):
    result = cli("doctor", "vastai", "--replay", str(bundled_cassette("vastai")))
    assert result.exit_code == 0, result.output
    assert "vastai (replay): ok" in result.output and "0 of 1 providers checked drifted" in result.output


def test_the_provider_comes_from_the_cassette_when_not_named(cli):
    result = cli("doctor", "--replay", str(bundled_cassette("vastai")), "--json")
    assert result.exit_code == 0, result.output
    assert [p["provider"] for p in json.loads(result.stdout)["providers"]] == ["vastai"]


def _scaled(offer: dict[str, Any]) -> None:
    for key in ("dph_total", "dph_base", "min_bid"):
        if isinstance(offer.get(key), int | float):
            offer[key] = offer[key] * 2


def test_a_price_move_against_the_database_is_reported(cli, tmp_path):
    stored = cli("scrape", "vastai", "--replay", str(bundled_cassette("vastai")), "--json")
    assert stored.exit_code == 0, stored.output
    result = cli("doctor", "vastai", "--replay", vastai_cassette(tmp_path, _scaled))
    assert result.exit_code == 1, result.output
    assert "moved ×2.00: median $" in result.output
    unchanged = cli("doctor", "vastai", "--replay", str(bundled_cassette("vastai")))
    assert unchanged.exit_code == 0, unchanged.output


def test_json_output_shape(cli, tmp_path):
    cli("scrape", "vastai", "--replay", str(bundled_cassette("vastai")), "--json")

    def drift(offer: dict[str, Any]) -> None:
        offer.pop("dph_total")
        offer["gpu_arch"] = "hopper"
        _scaled(offer)

    result = cli("doctor", "vastai", "--replay", vastai_cassette(tmp_path, drift), "--json")
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["drifted"] is True
    (report,) = payload["providers"]
    assert set(report) == {
        "provider",
        "source",
        "status",
        "drifted",
        "offers",
        "error",
        "skipped",
        "dropped",
        "schema",
        "unknown_names",
        "prices",
        "problems",
        "notes",
    }
    assert (report["provider"], report["source"], report["status"], report["drifted"]) == (
        "vastai",
        "replay",
        "drifted",
        True,
    )
    assert report["schema"]["endpoints"] == [BUNDLES]
    assert report["schema"]["missing"] == [
        {"endpoint": BUNDLES, "field": "offers[].dph_total", "change": "missing", "detail": ""}
    ]
    assert report["schema"]["new"] == [
        {"endpoint": BUNDLES, "field": "offers[].gpu_arch", "change": "new", "detail": ""}
    ]
    assert report["schema"]["changed_type"] == []
    assert report["unknown_names"]["new"] == {}
    prices = report["prices"]
    assert prices["factor"] == 1.5 and prices["moves"]
    move = prices["moves"][0]
    assert set(move) == {"gpu", "pricing", "before", "now", "ratio", "flagged"}
    assert set(move["before"]) == {"n", "p10", "median", "p90"}
    assert move["flagged"] is True
    assert report["problems"][0] == f"missing field `offers[].dph_total` in {BUNDLES}"
    assert f"new field `offers[].gpu_arch` in {BUNDLES}" in report["notes"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["doctor", "nope"], "unknown provider 'nope'"),
        (["doctor", "vastai", "runpod", "--replay", str(bundled_cassette("vastai"))], "exactly one provider"),
        (["doctor", "vastai", "--replay", str(bundled_cassette("runpod"))], "cassette of runpod, not of vastai"),
        (["doctor", "vastai", "--replay", "/nonexistent/cassette.json"], "cassette not found"),
    ],
)
def test_bad_input_exits_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output


# --- record --all ----------------------------------------------------------------------------------


@pytest.fixture
def offline_record(monkeypatch):
    """`record` reaches each provider's bundled cassette (its successful answers) instead of the network,
    with no credentials set but the ones a test sets."""
    for cls in all_providers().values():
        for name in cls.credentials:
            monkeypatch.delenv(f"TRACKER_{name.upper()}", raising=False)
            monkeypatch.delenv(f"TRACKER_{name.upper()}_FILE", raising=False)
    monkeypatch.delenv("TRACKER_SECRETS_DIR", raising=False)

    def transport(cls: type[Provider]) -> httpx.AsyncBaseTransport:
        cassette = Cassette.load(bundled_cassette(cls.name))
        # Recorded 429s would make the recorder back off for real: only the answers are served.
        cassette.interactions = [i for i in cassette.interactions if i.status < 400]
        return ReplayTransport(cassette)

    monkeypatch.setattr(scrape_cli, "_live_transport", transport)
    # A keyless one, one keyed in its query, one keyed in a header, a sheet: what --all decides is per kind,
    # and this keeps the test off adapters other work is changing.
    chosen = {n: c for n, c in all_providers().items() if n in {"vastai", "gcp", "lambdalabs", "reference"}}
    monkeypatch.setattr(scrape_cli, "all_providers", lambda: chosen)


def test_record_all_records_keyless_providers_and_skips_the_rest(cli, tmp_path, offline_record, monkeypatch):
    secret = "gcp-live-key-4711"
    monkeypatch.setenv("TRACKER_GCP_API_KEY", secret)
    out = tmp_path / "cassettes"
    result = cli("record", "--all", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "skipped lambdalabs: no credentials (set TRACKER_LAMBDA_API_KEY)" in result.output
    assert "skipped reference: a static sheet has nothing to record" in result.output
    assert (out / "vastai.json").is_file() and (out / "gcp.json").is_file()
    assert not (out / "lambdalabs.json").exists() and not (out / "reference.json").exists()
    gcp = (out / "gcp.json").read_text()
    assert secret not in gcp and "key=<redacted>" in gcp  # the key travels in the query: scrubbed
    assert Cassette.load(out / "vastai.json").provider == "vastai"
    # A fresh recording is a baseline-compatible cassette: the doctor finds no drift in it.
    again = cli("doctor", "vastai", "--replay", str(out / "vastai.json"))
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["record", "vastai", "--all", "--out", "x"], "not both"),
        (["record", "--all"], "--all needs --out DIR"),
        (["record"], "name a provider to record, or pass --all"),
    ],
)
def test_record_bad_input_exits_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output

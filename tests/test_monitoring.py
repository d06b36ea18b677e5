"""The monitoring profile: Prometheus and Grafana in docker-compose.yml, the provisioned datasource and
dashboard (docker/grafana), the alert rules (docker/prometheus). The compose file is valid with the
profile; the dashboard loads under Grafana's schema (the Grafana Foundation SDK's models); every panel,
variable and alert query names only series that /metrics exports, with labels it carries; promtool
accepts the rules and the configuration (required in CI, which installs it: .ci/run)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tests.factories.alerts import add_rule
from tracker.clock import utcnow
from tracker.pipeline.scraping import ScrapeJob, run_scrape

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
DOCKER = ROOT / "docker"
DASHBOARD = DOCKER / "grafana" / "dashboards" / "gpu-tracker.json"
DATASOURCES = DOCKER / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = DOCKER / "grafana" / "provisioning" / "dashboards" / "dashboards.yml"
RULES = DOCKER / "prometheus" / "alerts.yml"
PROMETHEUS = DOCKER / "prometheus" / "prometheus.yml"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
METRIC = re.compile(r"\b(gpu_tracker_[a-z0-9_]+)\b(?:\{([^}]*)\})?")
MATCHER = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)")


def _dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def _queries() -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target, dashboard variable and alert rule."""
    out = []
    for panel in _dashboard()["panels"]:
        out += [(f"panel {panel['title']!r}", t["expr"]) for t in panel.get("targets", [])]
    out += [(f"variable {v['name']}", v["query"]["query"]) for v in _dashboard()["templating"]["list"]]
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        out += [(f"alert {r['alert']}", r["expr"]) for r in group["rules"]]
    return out


def test_compose_adds_prometheus_and_grafana_under_the_monitoring_profile():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    monitoring = {name for name, s in services.items() if s.get("profiles")}
    assert monitoring == {"prometheus", "grafana"}
    assert all(services[n]["profiles"] == ["monitoring"] for n in monitoring)
    prom, graf = services["prometheus"], services["grafana"]
    assert "./docker/prometheus:/etc/prometheus:ro" in prom["volumes"]
    assert {
        "./docker/grafana/provisioning:/etc/grafana/provisioning:ro",
        "./docker/grafana/dashboards:/var/lib/grafana/dashboards:ro",
    } <= set(graf["volumes"])
    target = yaml.safe_load(PROMETHEUS.read_text())["scrape_configs"][0]
    assert target["metrics_path"] == "/metrics" and target["static_configs"][0]["targets"] == ["api:8000"]
    assert all(p.startswith("${TRACKER_BIND:-127.0.0.1}:") for n in monitoring for p in services[n]["ports"])


@pytest.fixture
def compose_tool() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if IN_CI:
        pytest.fail("docker-compose is required in CI (.ci/run installs it)")
    pytest.skip("docker-compose not installed")


def test_docker_compose_config_accepts_the_monitoring_profile(compose_tool):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    done = subprocess.run(
        [*compose_tool, "-f", str(COMPOSE), "--profile", "monitoring", "config", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_dashboard_loads_under_grafanas_schema():
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard, RowPanel

    register_default_plugins()
    raw = _dashboard()
    model = Dashboard.from_json(raw)
    # Decoding keeps only what the schema knows: a round trip that loses nothing has no stray or misnamed field.
    again = json.loads(json.dumps(model, cls=JSONEncoder))

    def kept(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict):
            assert isinstance(b, dict), path
            for key, value in a.items():
                assert key in b, f"{path}.{key} is not a field of Grafana's dashboard schema"
                kept(value, b[key], f"{path}.{key}")
        elif isinstance(a, list):
            assert isinstance(b, list) and len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                kept(x, y, f"{path}[{i}]")
        else:
            assert a == b, path

    kept(raw, again, "dashboard")
    assert model.uid == "gpu-tracker" and model.schema_version == raw["schemaVersion"]
    panels = [p for p in model.panels or [] if not isinstance(p, RowPanel)]
    assert len(panels) >= 10 and len({p.id_val for p in model.panels or []}) == len(model.panels or [])
    uid = yaml.safe_load(DATASOURCES.read_text())["datasources"][0]["uid"]
    for p in panels:
        assert p.datasource is not None and p.datasource.uid == uid, p.title
        assert p.grid_pos is not None and p.grid_pos.x + p.grid_pos.w <= 24, p.title
        assert p.targets, p.title
    provider = yaml.safe_load(PROVIDERS.read_text())["providers"][0]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


def test_the_dashboard_covers_prices_health_alerts_and_timings():
    text = " ".join(expr for _, expr in _queries())
    for series in (
        "gpu_tracker_price_median_usd_per_gpu_hour",
        "gpu_tracker_price_min_usd_per_gpu_hour",
        "gpu_tracker_provider_stale",
        "gpu_tracker_last_success_timestamp_seconds",
        "gpu_tracker_scrape_runs_total",
        "gpu_tracker_alert_rules",
        "gpu_tracker_scrape_duration_seconds_sum",
        "gpu_tracker_scrape_last_duration_seconds",
    ):
        assert series in text, series


@pytest.fixture
def exported(engine, settings) -> dict[str, set[str]]:
    """Every sample name /metrics exports over a seeded database, with the label names it carries."""
    jobs = [ScrapeJob(ReferenceRates), ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai")))]
    asyncio.run(run_scrape(jobs, engine, settings))
    add_rule(engine, settings, utcnow(), name="cheap H100", threshold="1.50")
    with TestClient(create_app(settings, engine)) as client:
        assert client.get("/healthz").status_code == 200  # a request, so the HTTP series have samples
        text = client.get("/metrics").text
    names: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    return names


def test_every_query_names_series_that_metrics_exports(exported):
    for where, expr in _queries():
        found = METRIC.findall(expr)
        assert found, f"{where}: names no gpu_tracker series: {expr}"
        for name, matchers in found:
            assert name in exported, f"{where}: {name} is not in /metrics"
            for label in MATCHER.findall(matchers or ""):
                assert label in exported[name], f"{where}: {name} has no label {label}"


def test_the_h100_rule_matches_a_family_the_metrics_carry(engine, settings, exported):
    expr = next(e for w, e in _queries() if w == "alert H100MedianBelowThreshold")
    assert 'gpu_family="H100"' in expr and "gpu_family" in exported["gpu_tracker_price_median_usd_per_gpu_hour"]
    from tracker.catalog.gpus import get_catalog

    assert any(card.family == "H100" for card in get_catalog().all())


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if IN_CI:
            pytest.fail("promtool is required in CI (.ci/run installs the Debian package prometheus)")
        pytest.skip("promtool not installed (Debian: apt-get install prometheus); the rule files are unchecked")
    return found


def test_promtool_accepts_the_rules_and_the_config():
    tool = _promtool()
    for args in (["check", "rules", str(RULES)], ["check", "config", str(PROMETHEUS)]):
        done = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_rejects_a_broken_rule(tmp_path):
    tool = _promtool()
    broken = tmp_path / "alerts.yml"
    broken.write_text(RULES.read_text().replace("gpu_tracker_provider_stale == 1", "gpu_tracker_provider_stale == ", 1))
    done = subprocess.run([tool, "check", "rules", str(broken)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0

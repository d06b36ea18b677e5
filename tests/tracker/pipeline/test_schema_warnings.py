"""Every run compares its responses with the fields the parser needs and keeps the findings: the
ledger, provider health and /metrics say a provider's API changed before a parser breaks on it."""

from __future__ import annotations

import asyncio
import json

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tracker.ops.metrics import DatabaseCollector
from tracker.ops.status import provider_status
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import ScrapeRun


def _without(field: str) -> Cassette:
    raw = json.loads(bundled_cassette("vastai").read_text())
    for interaction in raw["interactions"]:
        body = interaction["response"].get("json")
        for offer in (body or {}).get("offers", []):
            offer.pop(field, None)
    return Cassette.from_json(raw)


def _drift_gauge(engine, settings, clock) -> float:
    registry = CollectorRegistry()
    registry.register(DatabaseCollector(engine, settings, clock=clock))
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == "gpu_tracker_provider_schema_drift_fields" and sample.labels == {"provider": "vastai"}:
                return sample.value
    raise AssertionError("no schema drift gauge for vastai")


def test_a_response_missing_a_needed_field_is_recorded_with_its_run(engine, settings, clock):
    (report,) = asyncio.run(
        run_scrape([ScrapeJob(VastAi, "replay", _without("reliability2"))], engine, settings, clock=clock)
    )
    assert report.status == "ok", report  # the parser copes (reliability is optional to it) ...
    missing = [w for w in report.schema_warnings if w["change"] == "missing"]
    assert [w["field"] for w in missing] == ["offers[].reliability2"], report.schema_warnings  # ... and says so
    with session_scope(engine) as s:
        run = s.get_one(ScrapeRun, report.run_id)
        assert run.schema_warnings == report.schema_warnings
    health = next(p for p in provider_status(engine, settings, clock()) if p["name"] == "vastai")
    assert health["schema_drift"] == 1 and health["last_run"]["schema_warnings"] == report.schema_warnings
    assert _drift_gauge(engine, settings, clock) == 1


def test_an_unchanged_response_has_no_findings(engine, settings, clock):
    cassette = Cassette.load(bundled_cassette("vastai"))
    (report,) = asyncio.run(run_scrape([ScrapeJob(VastAi, "replay", cassette)], engine, settings, clock=clock))
    assert report.status == "ok" and report.schema_warnings == []
    assert _drift_gauge(engine, settings, clock) == 0


def test_a_hundred_thousand_unknown_keys_are_a_bounded_summary(engine, settings, clock, caplog):
    import logging

    from fastapi.testclient import TestClient

    from api.app import create_app
    from tracker.pipeline.drift import MAX_ISSUES_PER_KIND

    raw = json.loads(bundled_cassette("vastai").read_text())
    body = next(i["response"]["json"] for i in raw["interactions"] if (i["response"].get("json") or {}).get("offers"))
    body["offers"][0].update({f"extra_{n}": n for n in range(100_000)})
    caplog.set_level(logging.INFO, logger="tracker")
    (report,) = asyncio.run(
        run_scrape([ScrapeJob(VastAi, "replay", Cassette.from_json(raw))], engine, settings, clock=clock)
    )
    assert report.status == "ok"
    new = [w for w in report.schema_warnings if w["change"] == "new"]
    assert len(new) == MAX_ISSUES_PER_KIND + 1  # before: 100,000 stored warnings
    summary = new[-1]
    assert summary["count"] == str(100_000 - MAX_ISSUES_PER_KIND) and "99,980 more new fields" in summary["detail"]
    assert sum("new field" in r.getMessage() for r in caplog.records) <= MAX_ISSUES_PER_KIND + 1  # before: 100,000
    with TestClient(create_app(settings, engine)) as c:
        providers = c.get("/v1/providers")
    assert providers.status_code == 200 and len(providers.content) < 200_000  # before: 10.6 MB


def test_a_summary_of_missing_fields_still_counts_every_field_as_drift():
    from tracker.pipeline.drift import FieldIssue, summarised

    issues = [FieldIssue("GET x", f"a{i}", "missing") for i in range(30)]
    folded = summarised(issues, limit=5)
    assert len(folded) == 6 and folded[-1].count == 25 and folded[-1].drift
    assert folded[-1].as_dict()["count"] == "25" and "first: a5, a6" in folded[-1].detail

"""Every provider is complete: a cassette (or rate sheet), an integrity test, declared metadata, and the
malformed-response guarantee — a broken provider fails alone, stores nothing, and leaves the others ok."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from providers.cassette import Cassette, bundled_cassette
from providers.contract import ProviderKind
from providers.registry import all_providers
from providers.sheet import load_sheet
from tracker.pipeline.scraping import ScrapeJob, plan, run_scrape
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, ScrapeRun

TESTS = Path(__file__).parent / "adapters"  # one integrity test module per adapter
PROVIDERS = all_providers()
LIVE_PROVIDERS = [name for name, p in PROVIDERS.items() if p.kind != ProviderKind.static_sheet]


def test_at_least_sixteen_providers():
    assert len(PROVIDERS) >= 16, sorted(PROVIDERS)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_provider_is_complete(name):
    cls = PROVIDERS[name]
    assert cls.title and cls.kind in ProviderKind and cls.default_interval.total_seconds() > 0
    sheet_test = TESTS / "test_reference.py" if name in {"reference", "packetai"} else None
    assert (TESTS / f"test_{name}.py").is_file() or sheet_test, f"no integrity test for {name}"
    if cls.kind == ProviderKind.static_sheet:
        sheet = load_sheet(cls.sheet)  # type: ignore[attr-defined]
        assert sheet["source"] and sheet["as_of"] and sheet["rates"]
    else:
        cassette = Cassette.load(bundled_cassette(name))
        assert cassette.provider == name and cassette.interactions and cassette.source


@pytest.mark.parametrize("name", LIVE_PROVIDERS)
def test_cassettes_hold_no_credentials(name):
    text = bundled_cassette(name).read_text().lower()
    for marker in ("bearer ", "test-secret", "sk-", "whsec_"):
        assert marker not in text, f"{name} cassette contains {marker!r}"


def _truncate(raw: dict) -> None:
    for interaction in raw["interactions"]:
        response = interaction["response"]
        body = response.pop("json", None)
        text = response.pop("text", None)
        full = json.dumps(body) if body is not None else (text or "")
        response["text"] = full[: max(1, len(full) // 2)]
        response["status"] = 200


@pytest.mark.parametrize("broken", LIVE_PROVIDERS)
def test_truncated_response_fails_only_that_provider(broken, engine, settings, clock):
    """A truncated body ends the broken provider's run `failed` with a readable reason and stores
    nothing from it; the other providers, scraped in the same cycle, still end `ok`."""
    raw = json.loads(bundled_cassette(broken).read_text())
    _truncate(raw)
    jobs = [ScrapeJob(PROVIDERS[broken], "replay", Cassette.from_json(raw))]
    others = [j for j in plan([], demo=True) if j.provider.name in {"vastai", "reference"} - {broken}]
    reports = {r.provider: r for r in asyncio.run(run_scrape(jobs + others, engine, settings, clock=clock))}
    assert reports[broken].status == "failed", reports[broken]
    error = reports[broken].error
    assert error and "Traceback" not in error
    for other in others:
        assert reports[other.provider.name].status == "ok", reports[other.provider.name]
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(Offer).where(Offer.provider == broken)) == 0
        run = s.scalars(select(ScrapeRun).where(ScrapeRun.provider == broken)).one()
        assert run.status == "failed" and run.error


@pytest.mark.parametrize("name", LIVE_PROVIDERS)
def test_bundled_cassette_ingests_with_canonical_ids(name, engine, settings, clock):
    (report,) = asyncio.run(run_scrape(plan([name], demo=True), engine, settings, clock=clock))
    assert report.status == "ok", report
    assert report.offers_valid > 0
    with session_scope(engine) as s:
        ids = set(s.scalars(select(Offer.gpu_id).where(Offer.provider == name)))
    from tracker.catalog.gpus import get_catalog

    known = {g.id for g in get_catalog().all()}
    assert ids and ids <= known

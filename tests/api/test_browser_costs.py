"""The run-cost breakdown on the dashboard (api/static/js/costs.js) in headless Chromium: every ranked
offer shows a stacked bar of its components, marked known or defaulted, and spot rows their expected
cost with its range. Skipped like the other browser tests when Chromium is missing (not in CI)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from api.app import create_app
from providers.adapters.reference import ReferenceRates
from providers.adapters.vastai import VastAi
from providers.cassette import Cassette, bundled_cassette
from tests.factories.browser import SHOTS, console_errors, open_view, wait_state
from tests.factories.servers import serve
from tracker.config import Settings
from tracker.pipeline.scraping import ScrapeJob, run_scrape
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def cost_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("costs")
    settings = Settings(data_dir=data, database_url=f"sqlite:///{data / 'tracker.db'}")
    engine = make_engine(settings.resolved_database_url())
    migrate.upgrade(engine)
    jobs = [ScrapeJob(ReferenceRates), ScrapeJob(VastAi, "replay", Cassette.load(bundled_cassette("vastai")))]
    asyncio.run(run_scrape(jobs, engine, settings))
    try:
        with serve(create_app(settings, engine), start_timeout=30) as base:
            yield base
    finally:
        engine.dispose()


def test_ranked_offers_show_their_cost_breakdown(browser, cost_server):
    open_view(browser, cost_server, "job", "job", state="ready-form")
    browser.find_element("css selector", 'input[name=amount][value="tokens"]').click()
    tokens = browser.find_element("id", "job-tokens")
    tokens.clear()
    tokens.send_keys("22.5M")
    browser.find_element("id", "job-submit").click()
    wait_state(browser, "job", "ready")
    bars = browser.find_elements("css selector", "#job-table tbody tr .cost-bar")
    rows = browser.find_elements("css selector", "#job-table tbody tr")
    assert bars and len(bars) == len(rows)
    # Each bar's segments: GPU time first, widths summing to the whole; each says where its terms came from.
    segments = browser.execute_script(
        "return [...document.querySelectorAll('#job-table tbody tr')].map(tr =>"
        " [...tr.querySelectorAll('.cost-seg')].map(s => [s.dataset.component, s.dataset.known,"
        " parseFloat(s.style.width), s.title]))"
    )
    for row in segments:
        assert row[0][0] == "gpu_time"
        assert sum(w for _, _, w, _ in row) == pytest.approx(100, abs=0.1)
        assert all(known in ("api", "sheet", "default") for _, known, _, _ in row)
    titles = [t for row in segments for *_, t in row]
    assert any("from the provider's API" in t for t in titles) and any("a default" in t for t in titles)
    # Spot rows: the expected cost and its range.
    spot = browser.find_elements("css selector", "#job-table .cost-spot")
    assert spot and all("spot: expected $" in s.text and "–$" in s.text for s in spot)
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "job-costs-laptop.png"))
    assert console_errors(browser) == []
